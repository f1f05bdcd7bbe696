//! Subcommands, one file each; this file holds the argument types they share.

pub mod bench;
mod cub;
pub mod hist;
pub mod hist2d;
pub mod info;
pub mod input;
pub mod lab;
pub mod lab_histogram;
pub mod limits;
pub mod output;

use clap::{Parser, Subcommand};
use tally::{Backend, BackendKind};

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
    pub fn open(&self) -> anyhow::Result<Backend> {
        Ok(Backend::new(self.backend)?)
    }
}

pub fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Hist(a) => hist::run(a),
        Command::Hist2d(a) => hist2d::run(a),
        Command::Bench(a) => bench::run(a),
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
