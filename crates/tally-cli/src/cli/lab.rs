//! `tally lab global|shared|histogram`: the atomics lab. Each prints a table (or `--json`),
//! draws `--plot FILE.svg` or `FILE.png`, shows a progress bar on a terminal, and on a machine without a GPU
//! says so and exits 0 without a table; `lab global --backend cpu` runs the CPU version.

use super::lab_histogram::{HistogramConfig, HistogramReport};
use super::lab_plot::{plot_global, plot_histogram, plot_shared};
use super::BackendArg;
use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tally::device::CudaDevice;
use tally::lab::{self, CounterType, GlobalConfig, GlobalMode, GlobalReport, SharedConfig, SharedOp, SharedReport};
use tally::{BackendKind, Strategy};

#[derive(clap::Args, Debug)]
pub struct LabArgs {
    #[command(subcommand)]
    pub what: LabWhat,
}

#[derive(clap::Subcommand, Debug)]
pub enum LabWhat {
    /// atomicAdd on global memory: ops/s against the number of distinct addresses, per type,
    /// plain, warp-aggregated by hand, or left to the compiler.
    Global(GlobalArgs),
    /// Shared-memory atomics: cycles per warp-wide atomic against the threads sharing a target.
    Shared(SharedArgs),
    /// The histogram strategies over bin counts and skew, with CUB beside them where nvcc is found.
    Histogram(HistogramArgs),
}

/// What every lab command takes.
#[derive(clap::Args, Debug, Clone)]
pub struct Common {
    #[command(flatten)]
    pub backend: BackendArg,
    /// Write the results as JSON: to FILE (the table is still printed), or with no FILE to
    /// stdout instead of the table.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Draw the results as a chart into FILE.svg (SVG) or FILE.png (PNG).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct GlobalArgs {
    /// Operations per run, powers of two (default 2^20,2^28 on a GPU, 2^20,2^22 on the CPU).
    #[arg(long, value_delimiter = ',')]
    pub ops: Option<Vec<u64>>,
    /// Distinct addresses, powers of two.
    #[arg(long, value_delimiter = ',', default_value = "1,32,256,1024,65536,1048576")]
    pub addresses: Vec<u64>,
    /// Counter types: u32, u64, f32, f64.
    #[arg(long, value_delimiter = ',', default_value = "u32,u64,f32,f64", value_parser = parse::<CounterType>)]
    pub types: Vec<CounterType>,
    /// Modes: plain, warp-aggregated, compiler (GPU only; the CPU runs plain).
    #[arg(long, value_delimiter = ',', value_parser = parse::<GlobalMode>)]
    pub modes: Option<Vec<GlobalMode>>,
    /// Timed runs per row (three for runs slower than 50 ms).
    #[arg(long)]
    pub reps: Option<usize>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(clap::Args, Debug)]
pub struct SharedArgs {
    /// Operations: add-u32, max-u32, add-u64, add-f32, add-f32-cas, max-f32-cas, max-f32-int,
    /// add-f32-inf.
    #[arg(long, value_delimiter = ',', value_parser = parse::<SharedOp>,
          default_value = "add-u32,max-u32,add-u64,add-f32,add-f32-cas,max-f32-cas,max-f32-int,add-f32-inf")]
    pub ops: Vec<SharedOp>,
    /// Threads sharing one target, powers of two from 1 to 256.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32,64,128,256")]
    pub threads: Vec<u32>,
    /// Atomics per thread per run (a multiple of 4, at most 4096).
    #[arg(long, default_value_t = 1024)]
    pub rounds: u32,
    /// Timed runs per row.
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    #[command(flatten)]
    pub common: Common,
}

#[derive(clap::Args, Debug)]
pub struct HistogramArgs {
    /// i32 samples per case.
    #[arg(long, default_value_t = 10_000_000)]
    pub samples: usize,
    /// Bin count of the strategy table and of the skew sweep.
    #[arg(long, default_value_t = 256)]
    pub bins: u32,
    /// Hot fractions (share of samples in bin 0) of the strategy table's columns.
    #[arg(long, value_delimiter = ',', default_value = "0,0.5,0.9,1")]
    pub table_hot: Vec<f64>,
    /// Bin counts of the bin sweep (uniform samples).
    #[arg(long, value_delimiter = ',', default_value = "16,64,256,1024,4096,16384,65536")]
    pub sweep_bins: Vec<u32>,
    /// Hot fractions of the skew sweep.
    #[arg(long, value_delimiter = ',', default_value = "0,0.25,0.5,0.75,0.9,0.99,1")]
    pub sweep_hot: Vec<f64>,
    /// Strategies (the five of the classic table by default).
    #[arg(long, value_delimiter = ',', value_parser = parse::<Strategy>,
          default_value = "global-atomic,block-shared,warp-private,warp-aggregated,auto")]
    pub strategies: Vec<Strategy>,
    /// Timed runs per case.
    #[arg(long, default_value_t = 20)]
    pub reps: usize,
    /// Leave CUB out even where nvcc is installed.
    #[arg(long)]
    pub no_cub: bool,
    #[command(flatten)]
    pub common: Common,
}

fn parse<T: std::str::FromStr<Err = tally::Error>>(s: &str) -> Result<T, String> {
    s.parse().map_err(|e: tally::Error| e.to_string())
}

/// Where a lab runs.
enum Target {
    Gpu(Arc<CudaDevice>),
    Cpu,
}

/// The device for `--backend`; None (after one line on stderr) where `auto` finds no GPU.
fn target(backend: &BackendArg, lab: &str) -> anyhow::Result<Option<Target>> {
    match backend.backend {
        BackendKind::Cpu => Ok(Some(Target::Cpu)),
        BackendKind::Cuda => Ok(Some(Target::Gpu(CudaDevice::with_options(super::device_options())?))),
        BackendKind::Auto => match CudaDevice::with_options(super::device_options()) {
            Ok(d) => Ok(Some(Target::Gpu(d))),
            Err(e) => {
                let cpu = if lab == "global" { " (`--backend cpu` runs its CPU version)" } else { "" };
                eprintln!("tally lab {lab}: no GPU to measure ({e}); no figures{cpu}");
                Ok(None)
            }
        },
    }
}

fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::new(1);
    bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed} {msg}").unwrap());
    bar
}

/// Runs `f` with a progress callback that drives a bar on stderr (hidden off a terminal).
fn with_progress<R>(f: impl FnOnce(&mut dyn FnMut(usize, usize, &str)) -> R) -> R {
    let bar = progress_bar();
    let mut update = |done: usize, total: usize, what: &str| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        bar.set_message(what.to_string());
    };
    let r = f(&mut update);
    bar.finish_and_clear();
    r
}

/// `--json` and `--plot`; returns whether the table should still be printed.
fn write_outputs<R: Serialize>(
    common: &Common,
    report: &R,
    plot: impl FnOnce(&Path) -> anyhow::Result<()>,
) -> anyhow::Result<bool> {
    if let Some(path) = &common.plot {
        plot(path).with_context(|| format!("writing {}", path.display()))?;
    }
    match &common.json {
        Some(p) if p.as_os_str() == "-" => {
            println!("{}", serde_json::to_string_pretty(report)?);
            Ok(false)
        }
        Some(p) => {
            std::fs::write(p, serde_json::to_string_pretty(report)? + "\n")
                .with_context(|| format!("writing {}", p.display()))?;
            Ok(true)
        }
        None => Ok(true),
    }
}

pub fn run(a: LabArgs) -> anyhow::Result<()> {
    let common = match &a.what {
        LabWhat::Global(g) => &g.common,
        LabWhat::Shared(s) => &s.common,
        LabWhat::Histogram(h) => &h.common,
    };
    super::plot::check_plot_path(common.plot.as_deref())?;
    match a.what {
        LabWhat::Global(g) => global(g),
        LabWhat::Shared(s) => shared(s),
        LabWhat::Histogram(h) => histogram(h),
    }
}

// ---------------------------------------------------------------------------------------------
// global

fn global(a: GlobalArgs) -> anyhow::Result<()> {
    if let Some(r) = a.reps {
        super::limits::check_reps(r)?;
    }
    let Some(target) = target(&a.common.backend, "global")? else { return Ok(()) };
    let mut config = match target {
        Target::Gpu(_) => GlobalConfig::gpu_default(),
        Target::Cpu => GlobalConfig::cpu_default(),
    };
    if let Some(ops) = a.ops {
        config.ops = ops;
    }
    config.addresses = a.addresses;
    config.types = a.types;
    if let Some(m) = a.modes {
        config.modes = m;
    }
    if let Some(r) = a.reps {
        config.reps = r;
    }
    config.validate()?;
    let report = with_progress(|p| match &target {
        Target::Gpu(dev) => lab::cuda::global(dev, &config, p),
        Target::Cpu => lab::cpu::global(&config, p),
    })?;
    if write_outputs(&a.common, &report, |p| plot_global(&report, p))? {
        print_global(&report);
    }
    let bad = report.rows.iter().filter(|r| !r.verified).count();
    if bad > 0 {
        bail!("{bad} rows left wrong final values (marked ERROR)");
    }
    Ok(())
}

/// 2^k for powers of two from 1024 on, the number otherwise.
pub(super) fn pow2(n: u64) -> String {
    if n >= 1024 && n.is_power_of_two() {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

fn print_global(r: &GlobalReport) {
    println!("# tally lab global: {} ({}), median of {} runs after a warm-up", r.device, r.backend, r.config.reps);
    println!(
        "{:<4} {:<16} {:>6} {:>9} {:>11} {:>10} {:>14}",
        "type", "mode", "ops", "addresses", "ms", "Gops/s", "vs uncontended"
    );
    for x in &r.rows {
        let head =
            format!("{:<4} {:<16} {:>6} {:>9}", x.counter_type.name(), x.mode.name(), pow2(x.ops), pow2(x.addresses));
        match (x.ms, x.ops_per_second) {
            (Some(ms), Some(ops)) => {
                let ratio = x.vs_uncontended.map(|v| format!("{v:.4}")).unwrap_or_default();
                println!("{head} {ms:>11.4} {:>10.3} {ratio:>14}", ops / 1e9);
            }
            _ => println!("{head} ERROR: {}", x.error.as_deref().unwrap_or("no figure")),
        }
    }
    for n in &r.notes {
        println!("# {n}");
    }
}

// ---------------------------------------------------------------------------------------------
// shared

/// `--backend cpu` for a lab that only the GPU runs: an error, not a silent success.
fn gpu_only(lab: &str) -> anyhow::Result<()> {
    bail!("lab {lab} measures the GPU only; the CPU backend has no version of it (use --backend cuda or auto)")
}

fn shared(a: SharedArgs) -> anyhow::Result<()> {
    super::limits::check_reps(a.reps)?;
    if a.common.backend.backend == BackendKind::Cpu {
        gpu_only("shared")?;
    }
    let Some(target) = target(&a.common.backend, "shared")? else { return Ok(()) };
    let Target::Gpu(dev) = target else { unreachable!("--backend cpu is refused above") };
    let config = SharedConfig { ops: a.ops, threads_per_address: a.threads, rounds: a.rounds, reps: a.reps };
    let report = with_progress(|p| lab::cuda::shared(&dev, &config, p))?;
    if write_outputs(&a.common, &report, |p| plot_shared(&report, p))? {
        print_shared(&report);
    }
    let bad = report.rows.iter().filter(|r| !r.verified).count();
    if bad > 0 {
        bail!("{bad} rows left wrong final values (marked ERROR)");
    }
    Ok(())
}

fn print_shared(r: &SharedReport) {
    println!(
        "# tally lab shared: {}, {} blocks of {} threads, {} rounds; clock64 cycles per warp-wide atomic (median over warps and {} runs)",
        r.device, r.blocks, r.block_threads, r.config.rounds, r.config.reps
    );
    print!("{:>8}", "threads");
    for op in &r.config.ops {
        print!(" {:>12}", op.name());
    }
    println!();
    for &t in &r.config.threads_per_address {
        print!("{t:>8}");
        for &op in &r.config.ops {
            let cell = match r.rows.iter().find(|x| x.op == op && x.threads_per_address == t) {
                Some(x) => x.cycles_per_op.map(|c| format!("{c:.1}")).unwrap_or_else(|| "ERROR".into()),
                None => "-".into(),
            };
            print!(" {cell:>12}");
        }
        println!();
    }
    for op in &r.config.ops {
        println!("# {:<12} {}", op.name(), op.description());
    }
    for x in r.rows.iter().filter(|x| !x.verified) {
        println!(
            "# ERROR {} at {} threads per address: {}",
            x.op.name(),
            x.threads_per_address,
            x.error.as_deref().unwrap_or("")
        );
    }
    for n in &r.notes {
        println!("# {n}");
    }
}

// ---------------------------------------------------------------------------------------------
// histogram

fn histogram(a: HistogramArgs) -> anyhow::Result<()> {
    super::limits::check_reps(a.reps)?;
    if a.common.backend.backend == BackendKind::Cpu {
        gpu_only("histogram")?;
    }
    let Some(target) = target(&a.common.backend, "histogram")? else { return Ok(()) };
    let Target::Gpu(dev) = target else { unreachable!("--backend cpu is refused above") };
    let config = HistogramConfig {
        samples: a.samples,
        table_bins: a.bins,
        table_hot: a.table_hot,
        sweep_bins: a.sweep_bins,
        sweep_hot: a.sweep_hot,
        strategies: a.strategies,
        reps: a.reps,
        cub: !a.no_cub,
    };
    let report = with_progress(|p| super::lab_histogram::run(&dev, &config, p))?;
    if write_outputs(&a.common, &report, |p| plot_histogram(&report, p))? {
        print_histogram(&report);
    }
    let bad = report.rows.iter().filter(|r| !r.verified).count() + report.cub.iter().filter(|r| !r.verified).count();
    if bad > 0 {
        bail!("{bad} rows left wrong counts (marked ERROR)");
    }
    Ok(())
}

pub(super) fn same_hot(a: f64, b: f64) -> bool {
    super::lab_histogram::hot_threshold(a) == super::lab_histogram::hot_threshold(b)
}

/// GB/s of `strategy` (None: CUB) at (bins, hot), as a table cell.
fn cell(r: &HistogramReport, strategy: Option<Strategy>, bins: u32, hot: f64) -> String {
    match strategy {
        Some(s) => match r.rows.iter().find(|x| x.strategy == s && x.bins == bins && same_hot(x.hot_fraction, hot)) {
            Some(x) => match x.gbs {
                Some(g) => {
                    let fell_back = x.ran.is_some_and(|ran| ran != s && s != Strategy::Auto);
                    format!("{g:.1}{}", if fell_back { "*" } else { "" })
                }
                None => "ERROR".into(),
            },
            None => "-".into(),
        },
        None => match r.cub.iter().find(|x| x.bins == bins && same_hot(x.hot_fraction, hot)) {
            Some(x) => x.gbs.map(|g| format!("{g:.1}")).unwrap_or_else(|| "ERROR".into()),
            None => "-".into(),
        },
    }
}

fn print_histogram(r: &HistogramReport) {
    let c = &r.config;
    let columns: Vec<(String, Option<Strategy>)> = c
        .strategies
        .iter()
        .map(|&s| (s.name().to_string(), Some(s)))
        .chain(std::iter::once(("CUB".to_string(), None)))
        .collect();
    println!(
        "# tally lab histogram: {}, {} i32 samples per case, GB/s of samples read (median of {} runs)",
        r.device, c.samples, c.reps
    );
    println!("# strategy table: {} bins; columns: share of samples in bin 0", c.table_bins);
    print!("{:<16}", "strategy");
    for h in &c.table_hot {
        print!(" {:>10}", format!("{:.0}%", h * 100.0));
    }
    println!();
    for (name, s) in &columns {
        print!("{name:<16}");
        for &h in &c.table_hot {
            print!(" {:>10}", cell(r, *s, c.table_bins, h));
        }
        println!();
    }
    print!("{:<16}", "auto ran");
    for &h in &c.table_hot {
        let ran = r
            .rows
            .iter()
            .find(|x| x.strategy == Strategy::Auto && x.bins == c.table_bins && same_hot(x.hot_fraction, h))
            .and_then(|x| x.ran);
        print!(" {:>10}", ran.map(|s| s.name().replace("warp-", "w-")).unwrap_or_else(|| "-".into()));
    }
    println!();
    let header = |first: &str| {
        print!("{first:<8}");
        for (name, _) in &columns {
            print!(" {:>16}", name);
        }
        println!();
    };
    println!("# bin sweep: uniform samples; GB/s");
    header("bins");
    for &b in &c.sweep_bins {
        print!("{b:<8}");
        for (_, s) in &columns {
            print!(" {:>16}", cell(r, *s, b, 0.0));
        }
        println!();
    }
    println!("# skew sweep: {} bins; rows: share of samples in bin 0; GB/s", c.table_bins);
    header("hot");
    for &h in &c.sweep_hot {
        print!("{:<8}", format!("{:.0}%", h * 100.0));
        for (_, s) in &columns {
            print!(" {:>16}", cell(r, *s, c.table_bins, h));
        }
        println!();
    }
    println!("# *: the strategy's private copy did not fit; it fell back to another");
    if let Some(n) = &r.cub_note {
        println!("# CUB: {n}");
    }
    for x in r.rows.iter().filter(|x| !x.verified) {
        println!(
            "# ERROR {} at {} bins, {:.0}% hot: {}",
            x.strategy,
            x.bins,
            x.hot_fraction * 100.0,
            x.error.as_deref().unwrap_or("")
        );
    }
    for n in &r.notes {
        println!("# {n}");
    }
}
