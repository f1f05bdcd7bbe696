//! `tally bench stream`: out-of-core throughput. A 256-bin histogram of u8 and of i32 samples
//! and an f32 sum, each of `--size-gib` of host memory or of a file, streamed through the chunk
//! pipeline for every `--chunk-mib` x `--buffers`; set against the pinned host-to-device
//! bandwidth of one chunk measured in the same run, and against the whole-upload path.

use super::bench_report::{
    device_name, host_median_ms, ok_cell, BenchOutputArgs, BenchReport, BenchRow, Column, Yardstick,
};
use anyhow::Context;
use rayon::prelude::*;
use serde::Serialize;
use std::path::PathBuf;
use tally::data::splitmix64 as mix;
use tally::device::{ChunkLayout, ChunkPipeline, ChunkSource, FileSource, PlainData, SliceSource};
use tally::reduce::{ReduceElement, ReduceOp, ReduceOptions};
use tally::{Backend, Histogram, HistogramSpec, Sample, Strategy};

/// Where the streamed elements come from.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamFrom {
    /// An array in (pageable) host memory.
    Host,
    /// A file written first (so in the page cache where memory allows).
    File,
}

/// Arguments of `tally bench stream`.
#[derive(clap::Args, Debug)]
pub struct BenchStreamArgs {
    /// Gibibytes of input per case.
    #[arg(long, default_value_t = 4.0)]
    pub size_gib: f64,
    /// host: an array in memory; file: a temporary file of it, streamed from the file.
    #[arg(long, value_enum, default_value = "host")]
    pub source: StreamFrom,
    /// Directory of the temporary file of `--source file` (default: the system's).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Chunk sizes to sweep, in MiB.
    #[arg(long, default_value = "64", value_delimiter = ',')]
    pub chunk_mib: Vec<f64>,
    /// Slot counts (chunks in flight) to sweep, 2 to 8.
    #[arg(long, default_value = "3", value_delimiter = ',')]
    pub buffers: Vec<usize>,
    /// Timed repetitions per case.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    #[command(flatten)]
    pub out: BenchOutputArgs,
}

/// One case at one chunking.
#[derive(Serialize, Debug)]
pub struct StreamRow {
    /// u8-hist256, i32-hist256 or f32-sum.
    pub case: &'static str,
    /// host or file.
    pub source: &'static str,
    pub chunk_mib: f64,
    pub buffers: usize,
    pub bytes: u64,
    /// Streamed, end to end (median).
    pub ms: f64,
    pub gbs: f64,
    /// Pinned host-to-device bandwidth of one chunk of this size (GPU only).
    pub upload_gbs: Option<f64>,
    /// `gbs` over `upload_gbs`.
    pub fraction_of_upload: Option<f64>,
    /// The whole array uploaded at once and then counted or reduced (host source only).
    pub whole_ms: Option<f64>,
    pub whole_gbs: Option<f64>,
    /// The result equals the CPU backend's (exactly for counts).
    pub verified: bool,
}

impl BenchRow for StreamRow {
    const COLUMNS: &'static [Column] = &[
        Column::left("case", 11),
        Column::left("source", 6),
        Column::right("chunk MiB", 9),
        Column::right("bufs", 4),
        Column::right("ms", 10),
        Column::right("GB/s", 7),
        Column::right("H2D GB/s", 8),
        Column::right("%H2D", 6),
        Column::right("whole ms", 10),
        Column::right("whole GB/s", 10),
        Column::right("ok", 3),
    ];

    fn cells(&self) -> Vec<String> {
        let opt = |x: Option<f64>, digits: usize| x.map_or("-".into(), |v| format!("{v:.digits$}"));
        vec![
            self.case.into(),
            self.source.into(),
            format!("{}", self.chunk_mib),
            self.buffers.to_string(),
            format!("{:.2}", self.ms),
            format!("{:.1}", self.gbs),
            opt(self.upload_gbs, 1),
            self.fraction_of_upload.map_or("-".into(), |f| format!("{:.1}%", 100.0 * f)),
            opt(self.whole_ms, 2),
            opt(self.whole_gbs, 1),
            ok_cell(self.verified),
        ]
    }

    fn verified(&self) -> bool {
        self.verified
    }
}

/// What a case computes, on any source.
enum Work {
    Histogram(HistogramSpec),
    Sum,
}

/// A case's result: counts, or a sum.
#[derive(PartialEq)]
enum Outcome {
    Counts(Vec<Vec<u64>>),
    Sum(f64),
}

impl Outcome {
    fn of_histogram(h: Histogram) -> Outcome {
        Outcome::Counts(h.counts)
    }

    /// Counts exactly; sums (f64 per chunk, in a different order) to a relative 1e-9.
    fn agrees(&self, other: &Outcome) -> bool {
        match (self, other) {
            (Outcome::Sum(a), Outcome::Sum(b)) => (a - b).abs() <= 1e-9 * b.abs().max(1.0),
            (a, b) => a == b,
        }
    }
}

/// One case of `bench stream`: its data, written to a file where the source is one.
struct Case<'a, T> {
    a: &'a BenchStreamArgs,
    name: &'static str,
    data: Vec<T>,
    file: Option<PathBuf>,
    work: Work,
}

impl<T: Sample + ReduceElement + PlainData> Case<'_, T> {
    /// A fresh source of the case's elements.
    fn source(&self) -> anyhow::Result<Box<dyn ChunkSource<T> + '_>> {
        Ok(match &self.file {
            Some(path) => Box::new(FileSource::<T>::open(path, 0, None)?),
            None => Box::new(SliceSource::new(&self.data)),
        })
    }

    /// The whole array at once on `backend` (uploaded, then counted or reduced).
    fn whole(&self, backend: &Backend) -> anyhow::Result<Outcome> {
        Ok(match &self.work {
            Work::Histogram(spec) => {
                Outcome::of_histogram(backend.histogram(self.data.as_slice(), spec, Strategy::Auto)?)
            }
            Work::Sum => {
                Outcome::Sum(backend.reduce(self.data.as_slice(), ReduceOp::Sum, ReduceOptions::default())?.value)
            }
        })
    }

    /// Streamed through `pipeline` (None: on the CPU in chunks of `layout`).
    fn streamed(&self, pipeline: Option<&mut ChunkPipeline<T>>, layout: ChunkLayout) -> anyhow::Result<Outcome> {
        let mut source = self.source()?;
        let sum = (ReduceOp::Sum, ReduceOptions::default());
        Ok(match (&self.work, pipeline) {
            (Work::Histogram(spec), Some(p)) => {
                Outcome::of_histogram(p.histogram(&mut *source, spec, Strategy::Auto)?)
            }
            (Work::Histogram(spec), None) => {
                Outcome::of_histogram(tally::histogram::stream::cpu_histogram_stream(&mut *source, spec, layout)?)
            }
            (Work::Sum, Some(p)) => Outcome::Sum(p.reduce(&mut *source, sum.0, sum.1)?.value),
            (Work::Sum, None) => {
                Outcome::Sum(tally::reduce::stream::cpu_reduce_stream(&mut *source, sum.0, sum.1, layout)?.value)
            }
        })
    }

    /// Every chunking of the sweep, one row each.
    fn rows(&self, backend: &Backend, rows: &mut Vec<StreamRow>) -> anyhow::Result<()> {
        let a = self.a;
        let bytes = std::mem::size_of_val(self.data.as_slice()) as u64;
        let reference = self.whole(&Backend::Cpu)?;
        let whole = match (a.source, backend) {
            (StreamFrom::Host, Backend::Cuda(_)) => {
                let (ms, got) = host_median_ms(a.reps, || self.whole(backend))?;
                Some((ms, got.agrees(&reference)))
            }
            _ => None,
        };
        for &mib in &a.chunk_mib {
            for &buffers in &a.buffers {
                let elements = ((mib * (1 << 20) as f64) as usize / std::mem::size_of::<T>()).max(1);
                let layout = ChunkLayout { chunk_elements: elements, element_bytes: std::mem::size_of::<T>(), buffers };
                let mut pipeline = match backend {
                    Backend::Cuda(dev) => Some(ChunkPipeline::<T>::new(dev, layout)?),
                    Backend::Cpu => None,
                };
                let upload = pipeline.as_mut().map(|p| p.upload_bandwidth(20)).transpose()?;
                let (ms, got) = host_median_ms(a.reps, || self.streamed(pipeline.as_mut(), layout))?;
                let gbs = bytes as f64 / (ms * 1e6);
                rows.push(StreamRow {
                    case: self.name,
                    source: if self.file.is_some() { "file" } else { "host" },
                    chunk_mib: mib,
                    buffers,
                    bytes,
                    ms,
                    gbs,
                    upload_gbs: upload,
                    fraction_of_upload: upload.map(|u| gbs / u),
                    whole_ms: whole.map(|w| w.0),
                    whole_gbs: whole.map(|w| bytes as f64 / (w.0 * 1e6)),
                    verified: got.agrees(&reference) && whole.is_none_or(|w| w.1),
                });
            }
        }
        Ok(())
    }
}

/// Builds the case `name` of `--size-gib` of elements `make(i)`, runs its sweep, and removes its
/// file.
fn case<T: Sample + ReduceElement + PlainData>(
    a: &BenchStreamArgs,
    backend: &Backend,
    name: &'static str,
    work: Work,
    make: impl Fn(u64) -> T + Sync,
    rows: &mut Vec<StreamRow>,
) -> anyhow::Result<()> {
    let n = (a.size_gib * (1u64 << 30) as f64) as u64 / std::mem::size_of::<T>() as u64;
    let data: Vec<T> = (0..n).into_par_iter().map(&make).collect();
    let file = match a.source {
        StreamFrom::Host => None,
        StreamFrom::File => {
            let dir = a.dir.clone().unwrap_or_else(std::env::temp_dir);
            let path = dir.join(format!("tally-bench-stream-{}-{name}.bin", std::process::id()));
            // SAFETY: `T` is a primitive number (PlainData): no padding, every byte initialized.
            let raw =
                unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(&data[..])) };
            std::fs::write(&path, raw).with_context(|| format!("cannot write {}", path.display()))?;
            Some(path)
        }
    };
    let c = Case { a, name, data, file, work };
    let result = c.rows(backend, rows);
    if let Some(path) = &c.file {
        let _ = std::fs::remove_file(path);
    }
    result
}

/// Runs `tally bench stream`.
pub fn run(a: BenchStreamArgs) -> anyhow::Result<()> {
    let backend = a.out.backend.open()?;
    let upload = match &backend {
        Backend::Cuda(dev) => {
            let layout = ChunkLayout { chunk_elements: 64 << 20, element_bytes: 1, buffers: 2 };
            Some(ChunkPipeline::<u8>::new(dev, layout)?.upload_bandwidth(20)?)
        }
        Backend::Cpu => None,
    };
    let hist256 = || Work::Histogram(HistogramSpec::even(256, 0.0, 256.0));
    let mut rows = Vec::new();
    case::<u8>(&a, &backend, "u8-hist256", hist256(), |i| mix(i) as u8, &mut rows)?;
    case::<i32>(&a, &backend, "i32-hist256", hist256(), |i| (mix(i) % 256) as i32, &mut rows)?;
    let unit = |i| (mix(i) >> 40) as f32 / (1u64 << 24) as f32;
    case::<f32>(&a, &backend, "f32-sum", Work::Sum, unit, &mut rows)?;
    let device = device_name(&backend);
    let report = BenchReport {
        name: "stream",
        backend: backend.name(),
        device: &device,
        samples: None,
        yardstick: Yardstick::Upload(upload),
        rows: &rows,
    };
    report.print(a.out.json)
}
