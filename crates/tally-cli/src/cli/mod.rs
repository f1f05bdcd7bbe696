//! Subcommands, one file each; this file holds the argument types they share.

pub mod bench;
pub mod bench_general;
pub mod bench_reduce;
pub mod bench_runs;
pub mod bench_scan;
mod cub;
pub mod hist;
pub mod hist2d;
pub mod info;
pub mod input;
pub mod lab;
pub mod lab_histogram;
mod lab_plot;
pub mod limits;
pub mod output;
mod plot;
pub mod reduce;
pub mod reduce_by_key;
pub mod rle;
pub mod scan;

use clap::{Parser, Subcommand};
use tally::{Backend, BackendKind, CudaDevice, DeviceOptions};

#[derive(Parser, Debug)]
#[command(name = "tally", version, about = "GPU histograms and friends, with a CPU fall-back")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Count samples from a file (raw, .npy, .csv, .png/.jpg) or from --demo data.
    Hist(hist::HistArgs),
    /// A 2-D histogram of (x, y) pairs: two CSV columns, two .npy files, an (n, 2) .npy, or --demo.
    Hist2d(hist2d::Hist2dArgs),
    /// Sweep strategies, distributions, bin counts and types; report GB/s against read bandwidth.
    Bench(bench::BenchArgs),
    /// Reduce a file's values: sum, min, max, minmax, argmin, argmax, mean, count (--where).
    Reduce(reduce::ReduceArgs),
    /// Prefix scans of a file's values (sum, min, max; inclusive or exclusive) into a .npy file.
    Scan(scan::ScanArgs),
    /// Runs of equal consecutive values (run-length encoding) into .npy files: values and lengths.
    Rle(rle::RleArgs),
    /// Sum, min, max or count of the values of every run of equal consecutive keys.
    ReduceByKey(reduce_by_key::ReduceByKeyArgs),
    /// The backend, the device, NVRTC, the kernel cache and the measured read bandwidth.
    Info(info::InfoArgs),
    /// The atomics lab: atomics under contention on this GPU, as tables, JSON and SVG charts.
    Lab(lab::LabArgs),
}

/// `--backend`, shared by every subcommand.
#[derive(clap::Args, Debug, Clone)]
pub struct BackendArg {
    /// auto (GPU when usable, else CPU), cpu or cuda.
    #[arg(long, default_value = "auto", value_parser = parse_backend)]
    pub backend: BackendKind,
}

fn parse_backend(s: &str) -> Result<BackendKind, String> {
    s.parse().map_err(|e: tally::Error| e.to_string())
}

impl BackendArg {
    /// The backend asked for; `auto` without a usable GPU says why on one line of stderr.
    pub fn open(&self) -> anyhow::Result<Backend> {
        match self.backend {
            BackendKind::Cpu => Ok(Backend::Cpu),
            BackendKind::Cuda => Ok(Backend::Cuda(CudaDevice::with_options(device_options())?)),
            BackendKind::Auto => match CudaDevice::with_options(device_options()) {
                Ok(dev) => Ok(Backend::Cuda(dev)),
                Err(e) => {
                    eprintln!("tally: no usable GPU ({e}); using the CPU backend");
                    Ok(Backend::Cpu)
                }
            },
        }
    }
}

/// How the CLI opens a device. The one place where tally reads its environment variables:
/// - `TALLY_CACHE_DIR`: the kernel cache (default `$XDG_CACHE_HOME/tally`, else `~/.cache/tally`);
/// - `TALLY_NVRTC_OPTIONS`: extra NVRTC options for every kernel (experiments);
/// - `TALLY_HOT_SLOTS`, `TALLY_PASS_KEYS`, `TALLY_CLUSTER`, `TALLY_AGGREGATE` (0 or 1): the
///   histogram's tuning knobs, and `TALLY_SCAN_BLOCK_THREADS`, `TALLY_SCAN_VECS` the scans'
///   ([`tally::Tuning`]), for experiments.
pub fn device_options() -> DeviceOptions {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let number = |name: &str| var(name).and_then(|v| v.parse::<u64>().ok());
    let mut options = DeviceOptions::default();
    if let Some(dir) = var("TALLY_CACHE_DIR") {
        options.cache_dir = Some(dir.into());
    }
    if let Some(extra) = var("TALLY_NVRTC_OPTIONS") {
        options.nvrtc_options = extra.split_whitespace().map(String::from).collect();
    }
    options.tuning = tally::Tuning {
        hot_slots: number("TALLY_HOT_SLOTS").map(|v| v as usize),
        pass_keys: number("TALLY_PASS_KEYS").map(|v| v as usize),
        cluster: number("TALLY_CLUSTER").map(|v| v as u32),
        aggregate: number("TALLY_AGGREGATE").map(|v| v != 0),
        scan_block_threads: number("TALLY_SCAN_BLOCK_THREADS").map(|v| v as u32),
        scan_vecs: number("TALLY_SCAN_VECS").map(|v| v as u32),
    };
    options
}

pub fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Hist(a) => hist::run(a),
        Command::Hist2d(a) => hist2d::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Reduce(a) => reduce::run(a),
        Command::Scan(a) => scan::run(a),
        Command::Rle(a) => rle::run(a),
        Command::ReduceByKey(a) => reduce_by_key::run(a),
        Command::Info(a) => info::run(a),
        Command::Lab(a) => lab::run(a),
    }
}

/// Comma-separated list parser for clap.
pub fn parse_list<T: std::str::FromStr>(s: &str) -> Result<Vec<T>, String>
where
    T::Err: std::fmt::Display,
{
    s.split(',')
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .map(|p| p.parse::<T>().map_err(|e| format!("'{p}': {e}")))
        .collect()
}
