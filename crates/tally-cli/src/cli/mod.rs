//! Subcommands, one file each; this file holds the argument types they share.

pub mod bench;
pub mod bench_general;
pub mod bench_reduce;
pub mod bench_report;
pub mod bench_runs;
pub mod bench_scan;
pub mod bench_select;
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
pub mod select;
pub mod stream;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use tally::{Backend, BackendKind, CudaDevice, DType, DeviceOptions};

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
    /// The values of a file that pass a predicate (`--where 'x > 0 && x < 1'`), into a .npy file.
    Select(select::SelectArgs),
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

/// A file of values and how to read it, shared by `reduce` and `scan`.
#[derive(clap::Args, Debug, Clone)]
pub struct ValuesArg {
    /// Input file: raw binary (needs --dtype), .npy, .csv (--column) or `-` for standard input.
    pub input: PathBuf,
    /// Element type of raw files (u8, u16, i32, u32, i64, f32, f64, f16, bf16); CSV columns parse as this.
    #[arg(long, value_parser = hist::parse_dtype)]
    pub dtype: Option<DType>,
    /// CSV column, by header name or 0-based index.
    #[arg(long)]
    pub column: Option<String>,
}

impl ValuesArg {
    /// The values; how the file was read, where that needs saying, goes to stderr.
    pub fn load(&self) -> anyhow::Result<input::Samples> {
        let options = input::InputOptions { dtype: self.dtype, column: self.column.clone(), ..Default::default() };
        let loaded = input::load(&self.input, &options)?;
        if let Some(note) = &loaded.note {
            eprintln!("tally: {note}");
        }
        Ok(loaded.samples)
    }
}

/// How the CLI opens a device: as the environment says ([`DeviceOptions::from_env`], the one
/// place tally reads its configuration variables: the kernel cache `TALLY_CACHE_DIR`, extra
/// NVRTC options, the histogram's and the scans' tuning knobs). `TALLY_TRACE` is read by
/// [`trace`].
pub fn device_options() -> DeviceOptions {
    DeviceOptions::from_env()
}

/// Whether `TALLY_TRACE` asks for timings on stderr (see [`device_options`]).
pub fn trace() -> bool {
    std::env::var_os("TALLY_TRACE").is_some()
}

pub fn run() -> anyhow::Result<()> {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and the version go to stdout as the parser writes them.
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => anyhow::bail!(usage_error(&e)),
    };
    match cli.command {
        Command::Hist(a) => hist::run(a),
        Command::Hist2d(a) => hist2d::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Reduce(a) => reduce::run(a),
        Command::Scan(a) => scan::run(a),
        Command::Select(a) => select::run(a),
        Command::Rle(a) => rle::run(a),
        Command::ReduceByKey(a) => reduce_by_key::run(a),
        Command::Info(a) => info::run(a),
        Command::Lab(a) => lab::run(a),
    }
}

/// A usage error of the argument parser (the error, tips, the usage and a pointer to --help,
/// over several lines) as one line: the error and its tips.
fn usage_error(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .collect();
    let line = parts.join(" ");
    format!("{} (see --help)", line.strip_prefix("error: ").unwrap_or(&line))
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
