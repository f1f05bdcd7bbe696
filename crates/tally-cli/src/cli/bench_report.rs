//! What every `tally bench` sweep shares: `--backend` and `--json`, timing on the host clock,
//! the bandwidth the rows are set against, and the report (JSON, or a title line and a table),
//! which fails when any row disagreed with the CPU backend.

use super::BackendArg;
use anyhow::bail;
use serde::Serialize;
use std::time::Instant;
use tally::Backend;

/// `--backend` and `--json`, shared by every bench.
#[derive(clap::Args, Debug)]
pub struct BenchOutputArgs {
    #[command(flatten)]
    pub backend: BackendArg,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The median of `times` (at least one).
pub fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(|a, b| a.total_cmp(b));
    times[times.len() / 2]
}

/// Runs `f` `reps` times (at least once), each timed on the host clock: the median in
/// milliseconds and the last result. [`host_median`] for the CLI's errors, so that a closure's
/// `?` knows what to convert into.
pub fn host_median_ms<R>(reps: usize, f: impl FnMut() -> anyhow::Result<R>) -> anyhow::Result<(f64, R)> {
    host_median(reps, f)
}

/// [`host_median_ms`] for any error type (the library's, inside functions that return it).
pub fn host_median<R, E>(reps: usize, mut f: impl FnMut() -> Result<R, E>) -> Result<(f64, R), E> {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..reps.max(1) {
        let start = Instant::now();
        last = Some(std::hint::black_box(f()?));
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    Ok((median(times), last.expect("at least one run")))
}

/// The device's name; the CPU backend: its thread count.
pub fn device_name(backend: &Backend) -> String {
    match backend {
        Backend::Cuda(dev) => dev.info().name.clone(),
        Backend::Cpu => format!("CPU, {} threads", rayon::current_num_threads()),
    }
}

/// The device's name and the read bandwidth measured now: the yardstick of most benches.
pub fn device_and_bandwidth(backend: &Backend) -> anyhow::Result<(String, f64)> {
    let gbs = match backend {
        Backend::Cuda(dev) => dev.read_bandwidth(1 << 30, 20)?,
        Backend::Cpu => tally::device::cpu::read_bandwidth(1 << 28, 5),
    };
    Ok((device_name(backend), gbs))
}

/// Gigabytes per second of `bytes` moved in `ms` milliseconds.
pub fn gbs(bytes: f64, ms: f64) -> f64 {
    bytes / (ms * 1e6)
}

/// The bandwidth a bench's rows are set against, measured in the same run (GB/s).
#[derive(Clone, Copy, Debug)]
pub enum Yardstick {
    /// Reading memory once: what a reduction or a histogram needs at the least.
    Read(f64),
    /// A device-to-device copy, read + write bytes: what a scan needs at the least.
    Copy(f64),
    /// A pinned host-to-device copy of one 64 MiB chunk (None: no device): what a stream of
    /// chunks from the host reaches at best.
    Upload(Option<f64>),
    /// None: the rows set one GPU against this many (`bench multi`).
    Devices(usize),
}

/// One column of a bench table: its header, its width, and whether it aligns left.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    header: &'static str,
    width: usize,
    left: bool,
}

impl Column {
    /// A left-aligned column.
    pub const fn left(header: &'static str, width: usize) -> Column {
        Column { header, width, left: true }
    }

    /// A right-aligned column.
    pub const fn right(header: &'static str, width: usize) -> Column {
        Column { header, width, left: false }
    }

    fn cell(&self, text: &str) -> String {
        let w = self.width;
        if self.left {
            format!("{text:<w$}")
        } else {
            format!("{text:>w$}")
        }
    }
}

/// A row of a bench: its JSON form, its table cells, and whether it agreed with the CPU.
pub trait BenchRow: Serialize {
    /// The table's columns.
    const COLUMNS: &'static [Column];
    /// The row's cells, one per column, unpadded.
    fn cells(&self) -> Vec<String>;
    /// Whether the result equalled the CPU backend's.
    fn verified(&self) -> bool;
}

/// `yes` for a verified row, `NO` for one that disagreed.
pub fn ok_cell(verified: bool) -> String {
    if verified { "yes" } else { "NO" }.into()
}

/// A percentage of the yardstick, as the tables print it: `87.5%`.
pub fn percent_cell(fraction: f64) -> String {
    format!("{:.1}%", 100.0 * fraction)
}

/// A finished sweep.
pub struct BenchReport<'a, R> {
    /// The bench, as in `tally bench NAME`.
    pub name: &'static str,
    pub backend: &'static str,
    pub device: &'a str,
    /// Samples per case, where every case has the same number.
    pub samples: Option<usize>,
    pub yardstick: Yardstick,
    pub rows: &'a [R],
}

#[derive(Serialize)]
struct JsonReport<'a, R> {
    backend: &'static str,
    device: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    samples: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    read_bandwidth_gbs: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    copy_bandwidth_gbs: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    upload_bandwidth_gbs: Option<f64>,
    rows: &'a [R],
}

impl<R: BenchRow> BenchReport<'_, R> {
    /// Prints the report as JSON or as a title line and a table; an error when a row disagreed.
    pub fn print(&self, json: bool) -> anyhow::Result<()> {
        if json {
            let (read, copy, upload) = match self.yardstick {
                Yardstick::Read(gbs) => (Some(gbs), None, None),
                Yardstick::Copy(gbs) => (None, Some(gbs), None),
                Yardstick::Upload(gbs) => (None, None, gbs),
                Yardstick::Devices(_) => (None, None, None),
            };
            let doc = JsonReport {
                backend: self.backend,
                device: self.device,
                samples: self.samples,
                read_bandwidth_gbs: read,
                copy_bandwidth_gbs: copy,
                upload_bandwidth_gbs: upload,
                rows: self.rows,
            };
            println!("{}", serde_json::to_string_pretty(&doc)?);
        } else {
            let samples = self.samples.map(|n| format!(", {n} samples per case")).unwrap_or_default();
            let yardstick = match self.yardstick {
                Yardstick::Read(gbs) => format!("read bandwidth {gbs:.1} GB/s (same run)"),
                Yardstick::Copy(gbs) => format!("copy bandwidth {gbs:.1} GB/s (read + write, same run)"),
                Yardstick::Upload(Some(gbs)) => format!("pinned upload of a 64 MiB chunk {gbs:.1} GB/s (same run)"),
                Yardstick::Upload(None) => "no device: streamed on the host".into(),
                Yardstick::Devices(k) => format!("one GPU against {k} through NCCL (same run)"),
            };
            println!("# tally bench {}: {}{samples}, {yardstick}", self.name, self.device);
            println!("{}", line(R::COLUMNS, R::COLUMNS.iter().map(|c| c.header.to_string()).collect()));
            for r in self.rows {
                println!("{}", line(R::COLUMNS, r.cells()));
            }
        }
        if self.rows.iter().any(|r| !r.verified()) {
            bail!("some cases disagreed with the CPU backend (rows marked NO)");
        }
        Ok(())
    }
}

/// The cells padded to their columns, one space apart.
fn line(columns: &[Column], cells: Vec<String>) -> String {
    let padded: Vec<String> = columns.iter().zip(&cells).map(|(c, t)| c.cell(t)).collect();
    padded.join(" ")
}
