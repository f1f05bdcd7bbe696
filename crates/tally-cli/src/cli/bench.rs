//! `tally bench`: its subcommands, and `tally bench hist`: strategies x distributions x bin counts x sample types on resident data,
//! each timed (median, CUDA events on a GPU), checked against the CPU, and set against the read
//! bandwidth measured in the same run.

use super::bench_report::{
    device_and_bandwidth, gbs, host_median, host_median_ms, ok_cell, percent_cell, BenchOutputArgs, BenchReport,
    BenchRow, Column, Yardstick,
};
use super::input::with_type;
use anyhow::bail;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::sync::Arc;
use tally::data::{self, Distribution, FromBin};
use tally::device::{CudaDevice, DeviceView};
use tally::histogram::{cpu, HistogramPlan};
use tally::{Backend, DType, HistogramSpec, Sample, Strategy};

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub what: BenchWhat,
}

#[derive(clap::Subcommand, Debug)]
pub enum BenchWhat {
    /// The histogram sweep.
    Hist(BenchHistArgs),
    /// Weighted histograms: f32 samples and f32 weights, fixed point (both shared-atomic
    /// flavours) and float atomics, against the read bandwidth of samples + weights.
    Weighted(super::bench_general::BenchWeightedArgs),
    /// 2-D histograms of f32 pairs, uniform and a Gaussian blob.
    Hist2d(super::bench_general::BenchHist2dArgs),
    /// Brightness histograms of uniform RGB(A) images, interleaved and planar, mean and Rec. 709.
    Image(super::bench_general::BenchImageArgs),
    /// Reductions: every op over sizes and types, against the read bandwidth.
    Reduce(super::bench_reduce::BenchReduceArgs),
    /// Prefix scans: f32 sums (both look-backs), i32 into i64, f32 max, f32 by key, against
    /// the device-to-device copy bandwidth.
    Scan(super::bench_scan::BenchScanArgs),
    /// Stream compaction: f32 select (stable, unordered, in runs), partitions, flags, indices
    /// and count_if at 1%, 50% and 99% kept, against the device-to-device copy bandwidth.
    Select(super::bench_select::BenchSelectArgs),
    /// Unique of 2^28 i32 keys in runs of 8, as CUB's DeviceSelect::Unique peer runs it.
    Unique(super::bench_runs::BenchRunsArgs),
    /// Run-length encoding of 2^28 i32 keys in runs of 8 (CUB's DeviceRunLengthEncode::Encode).
    Rle(super::bench_runs::BenchRunsArgs),
    /// f32 sums by 2^28 i32 keys in runs of 8 (CUB's DeviceReduce::ReduceByKey), and i32 values
    /// summed into i64.
    ReduceByKey(super::bench_runs::BenchRunsArgs),
    /// Out of core: 256-bin histograms and an f32 sum streamed from host memory or a file,
    /// against the pinned host-to-device bandwidth and the whole-upload path.
    Stream(super::bench_stream::BenchStreamArgs),
    /// One GPU against a device set (`--devices all`, NCCL): 256-bin and 16M-bin histograms,
    /// an f32 sum and scan of resident data, a histogram from host memory.
    Multi(super::bench_multi::BenchMultiArgs),
}

#[derive(clap::Args, Debug)]
pub struct BenchHistArgs {
    /// Samples per case (default 2^28 on a GPU, 2^24 on the CPU).
    #[arg(long)]
    pub size: Option<usize>,
    /// Bin counts.
    #[arg(long, default_value = "256,4096,16384", value_delimiter = ',')]
    pub bins: Vec<u32>,
    /// Sample types.
    #[arg(long, default_value = "u8,i32,f32", value_delimiter = ',')]
    pub dtypes: Vec<String>,
    /// Distributions: uniform, hot90, hot100, zipf.
    #[arg(long, default_value = "uniform,hot90,hot100,zipf", value_delimiter = ',')]
    pub distributions: Vec<Distribution>,
    /// Strategies (GPU only; the CPU has one): also block-shared-16, cluster-shared,
    /// cluster-shared-16, global-l2, partition.
    #[arg(long, default_value = "auto,global-atomic,block-shared,warp-private,warp-aggregated", value_delimiter = ',', value_parser = parse_strategy)]
    pub strategies: Vec<Strategy>,
    /// Timed repetitions per case (fewer for cases slower than 20 ms).
    #[arg(long, default_value_t = 20)]
    pub reps: usize,
    #[command(flatten)]
    pub out: BenchOutputArgs,
}

#[derive(Serialize, Debug, Clone)]
pub struct Row {
    pub dtype: DType,
    pub distribution: &'static str,
    pub bins: u32,
    pub strategy: Strategy,
    /// What `auto` resolved to, or a fall-back the strategy took.
    pub ran: Strategy,
    pub ms: f64,
    /// The whole call on the host clock, median: zeroing, kernel, and the wait for the outlier
    /// counts read back (the counts stay on the device, as a binding's caller keeps them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub e2e_ms: Option<f64>,
    /// The same with the whole histogram read to the host (median).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_ms: Option<f64>,
    /// The library's one-off call (`Backend::histogram` on resident samples): a new plan, its
    /// launch and the whole histogram read to the host (median).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_ms: Option<f64>,
    pub gbs: f64,
    pub fraction_of_read_bandwidth: f64,
    /// Counts equal the CPU backend's exactly.
    pub verified: bool,
    /// Passes over the samples (strategies that count one range of bins per pass).
    pub passes: usize,
    /// Blocks per cluster (cluster strategies).
    pub cluster: Option<u32>,
    /// The partition's slices of the input and its workspace scratch in bytes.
    pub partition: Option<(usize, usize)>,
}

impl BenchRow for Row {
    const COLUMNS: &'static [Column] = &[
        Column::left("dtype", 5),
        Column::left("dist", 8),
        Column::right("bins", 9),
        Column::left("strategy", 17),
        Column::left("ran", 17),
        Column::right("ms", 10),
        Column::right("e2e ms", 10),
        Column::right("read ms", 10),
        Column::right("call ms", 10),
        Column::right("GB/s", 9),
        Column::right("%read", 7),
        Column::right("ok", 3),
        Column::left("layout", 0),
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.dtype.name().into(),
            self.distribution.into(),
            self.bins.to_string(),
            self.strategy.name().into(),
            self.ran.name().into(),
            format!("{:.4}", self.ms),
            self.e2e_ms.map(|ms| format!("{ms:.4}")).unwrap_or_default(),
            self.read_ms.map(|ms| format!("{ms:.4}")).unwrap_or_default(),
            self.call_ms.map(|ms| format!("{ms:.4}")).unwrap_or_default(),
            format!("{:.1}", self.gbs),
            percent_cell(self.fraction_of_read_bandwidth),
            ok_cell(self.verified),
            layout(self),
        ]
    }

    fn verified(&self) -> bool {
        self.verified
    }
}

pub(crate) fn parse_strategy(s: &str) -> Result<Strategy, String> {
    s.parse().map_err(|e: tally::Error| e.to_string())
}

pub fn run(a: BenchArgs) -> anyhow::Result<()> {
    validate(&a)?;
    match a.what {
        BenchWhat::Hist(h) => hist(h),
        BenchWhat::Weighted(w) => super::bench_general::weighted(w),
        BenchWhat::Hist2d(h) => super::bench_general::hist2d(h),
        BenchWhat::Image(i) => super::bench_general::image(i),
        BenchWhat::Reduce(r) => super::bench_reduce::run(r),
        BenchWhat::Scan(r) => super::bench_scan::run(r),
        BenchWhat::Select(r) => super::bench_select::run(r),
        BenchWhat::Unique(r) => super::bench_runs::run(super::bench_runs::RunsBench::Unique, r),
        BenchWhat::Rle(r) => super::bench_runs::run(super::bench_runs::RunsBench::Encode, r),
        BenchWhat::ReduceByKey(r) => super::bench_runs::run(super::bench_runs::RunsBench::ReduceByKey, r),
        BenchWhat::Stream(s) => super::bench_stream::run(s),
        BenchWhat::Multi(m) => super::bench_multi::run(m),
    }
}

/// Every argument checked before anything runs: a sweep that would time nothing, have no rows,
/// or not fit in memory is refused with a message.
fn validate(a: &BenchArgs) -> anyhow::Result<()> {
    use super::limits::{check_memory, check_reps};
    let (reps, size, bytes_per_sample) = match &a.what {
        BenchWhat::Hist(h) => {
            let u8_only = h.dtypes.iter().all(|d| d.trim() == "u8");
            if h.dtypes.is_empty() || h.distributions.is_empty() || (u8_only && h.bins.iter().all(|&b| b > 256)) {
                bail!("nothing to run: no (dtype, bins, distribution) case (u8 samples take at most 256 bins)");
            }
            (h.reps, h.size, 24u128)
        }
        BenchWhat::Weighted(w) => (w.reps, w.size, 24),
        BenchWhat::Hist2d(h) => (h.reps, h.size, 32),
        BenchWhat::Image(i) => (i.reps, i.size, 16),
        BenchWhat::Reduce(r) => (r.reps, None, 0),
        BenchWhat::Scan(r) => (r.reps, None, 0),
        BenchWhat::Select(r) => (r.reps, None, 0),
        BenchWhat::Unique(r) | BenchWhat::Rle(r) | BenchWhat::ReduceByKey(r) => (r.reps, None, 0),
        BenchWhat::Stream(s) => {
            let positive = |x: f64| x.is_finite() && x > 0.0;
            if !positive(s.size_gib) {
                bail!("--size-gib must be positive");
            }
            if s.buffers.iter().any(|b| !(2..=8).contains(b)) || !s.chunk_mib.iter().all(|&m| positive(m)) {
                bail!("--buffers takes 2 to 8 slots and --chunk-mib positive sizes");
            }
            // One case's array at a time; with --source file, the array and its file (in the
            // page cache, or in memory where --dir is a tmpfs such as /dev/shm) at once.
            let bytes = (s.size_gib * (1u64 << 30) as f64) as u128;
            let (copies, source) = match s.source {
                super::bench_stream::StreamFrom::File => (2, " --source file"),
                super::bench_stream::StreamFrom::Host => (1, ""),
            };
            check_memory(Some(copies * bytes), &format!("--size-gib {}{source}", s.size_gib))?;
            (s.reps, None, 0)
        }
        BenchWhat::Multi(m) => {
            if m.log2_size > 32 {
                bail!("--log2-size takes at most 32");
            }
            (m.reps, None, 0)
        }
    };
    check_reps(reps)?;
    if let Some(n) = size {
        check_memory((n as u128).checked_mul(bytes_per_sample), &format!("--size {n}"))?;
    }
    Ok(())
}

struct Sweep<'a> {
    backend: &'a Backend,
    n: usize,
    reps: usize,
    read_gbs: f64,
    strategies: Vec<Strategy>,
    rows: Vec<Row>,
    bar: ProgressBar,
}

fn hist(a: BenchHistArgs) -> anyhow::Result<()> {
    let backend = a.out.backend.open()?;
    let dtypes: Vec<DType> = a
        .dtypes
        .iter()
        .map(|s| DType::parse(s).ok_or_else(|| anyhow::anyhow!("unknown dtype '{s}'")))
        .collect::<Result<_, _>>()?;
    let (bins, dists, strategies) = (a.bins, a.distributions, a.strategies);
    if bins.contains(&0) {
        bail!("invalid argument: the bin count must be at least 1");
    }
    let n = a.size.unwrap_or(if matches!(backend, Backend::Cuda(_)) { 1 << 28 } else { 1 << 24 });
    let (device, read_gbs) = device_and_bandwidth(&backend)?;
    let cases: usize =
        dtypes.iter().map(|d| bins.iter().filter(|&&b| *d != DType::U8 || b <= 256).count() * dists.len()).sum();
    let per_case = if matches!(backend, Backend::Cuda(_)) { strategies.len() } else { 1 };
    let bar = ProgressBar::new((cases * per_case) as u64);
    bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}").unwrap());
    let mut sweep = Sweep { backend: &backend, n, reps: a.reps.max(1), read_gbs, strategies, rows: Vec::new(), bar };
    for &dtype in &dtypes {
        for &b in &bins {
            if dtype == DType::U8 && b > 256 {
                continue; // 8-bit samples have only 256 values
            }
            for &dist in &dists {
                with_type!(dtype, T => sweep.case::<T>(dist, b)?);
            }
        }
    }
    sweep.bar.finish_and_clear();
    let report = BenchReport {
        name: "hist",
        backend: backend.name(),
        device: &device,
        samples: Some(n),
        yardstick: Yardstick::Read(read_gbs),
        rows: &sweep.rows,
    };
    report.print(a.out.json)
}

/// Cluster size, passes, and the partition's slices and scratch, where they are not the plain
/// one-block, one-pass case.
fn layout(r: &Row) -> String {
    let mut parts = Vec::new();
    if let Some(c) = r.cluster {
        parts.push(format!("cluster {c}"));
    }
    if r.passes > 1 {
        parts.push(format!("{} passes", r.passes));
    }
    if let Some((slices, scratch)) = r.partition {
        parts.push(format!(
            "{slices} slice{}, {:.1} MiB scratch",
            if slices == 1 { "" } else { "s" },
            scratch as f64 / (1 << 20) as f64
        ));
    }
    parts.join(", ")
}

/// A row's times: the kernel, then the host-clock figures of a GPU row (see [`Row`]).
type HostTimes = (f64, Option<f64>, Option<f64>, Option<f64>);

impl Sweep<'_> {
    fn case<T: Sample + FromBin>(&mut self, dist: Distribution, bins: u32) -> anyhow::Result<()> {
        self.bar.set_message(format!("{} {} {} bins: generating", T::DTYPE, dist.name(), bins));
        let host: Vec<T> = data::samples(dist, bins, self.n, data::HIST_SEED ^ bins as u64);
        let spec = HistogramSpec::even(bins, 0.0, bins as f64);
        let reference = cpu::histogram(&host, &spec)?;
        let bytes = (self.n * std::mem::size_of::<T>()) as f64;
        let mut push =
            |strategy, ran, (ms, e2e_ms, read_ms, call_ms): HostTimes, verified, passes, cluster, partition| {
                let gbs = gbs(bytes, ms);
                self.rows.push(Row {
                    dtype: T::DTYPE,
                    distribution: dist.name(),
                    bins,
                    strategy,
                    ran,
                    ms,
                    e2e_ms,
                    read_ms,
                    call_ms,
                    gbs,
                    fraction_of_read_bandwidth: gbs / self.read_gbs,
                    verified,
                    passes,
                    cluster,
                    partition,
                });
            };
        match self.backend {
            Backend::Cpu => {
                let (ms, _) = host_median_ms(self.reps.min(5), || Ok(cpu::histogram(&host, &spec)?))?;
                push(Strategy::ThreadPrivate, Strategy::ThreadPrivate, (ms, None, None, None), true, 1, None, None);
                self.bar.inc(1);
            }
            Backend::Cuda(dev) => {
                let buf = dev.stream().upload(&host, "benchmark samples")?;
                drop(host);
                for &s in &self.strategies.clone() {
                    self.bar.set_message(format!("{} {} {} bins: {}", T::DTYPE, dist.name(), bins, s));
                    let t = time_plan::<T>(dev, &buf.view(), &spec, s, self.reps)?;
                    let verified = t.histogram.same_counts(&reference);
                    let times = (t.ms, Some(t.e2e_ms), Some(t.read_ms), Some(t.call_ms));
                    push(s, t.ran, times, verified, t.passes, t.cluster, t.partition);
                    self.bar.inc(1);
                }
            }
        }
        Ok(())
    }
}

/// One timed plan: the median, the strategy that ran, the last result.
pub(crate) struct Timed {
    pub ms: f64,
    /// Launch, wait and read the outlier counts, on the host clock (median).
    pub e2e_ms: f64,
    /// Launch and read the whole histogram to the host, the plan kept (median).
    pub read_ms: f64,
    /// `Backend::histogram`'s work: a new plan, its launch and the whole histogram read (median).
    pub call_ms: f64,
    pub ran: Strategy,
    pub histogram: tally::Histogram,
    pub passes: usize,
    pub cluster: Option<u32>,
    /// The partition's slices and scratch bytes.
    pub partition: Option<(usize, usize)>,
}

/// Median milliseconds of zeroing the counters plus the kernel, with the result of the last run.
pub(crate) fn time_plan<T: Sample>(
    dev: &Arc<CudaDevice>,
    samples: &DeviceView<'_, T>,
    spec: &HistogramSpec,
    s: Strategy,
    reps: usize,
) -> tally::Result<Timed> {
    let mut plan = HistogramPlan::new(dev, samples, spec, s, dev.tuning())?;
    let stream = dev.stream();
    let timer = stream.timer()?;
    let once = timer.time_ms(|| plan.launch(stream, samples))?;
    let reps = if once > 20.0 { reps.min(5) } else { reps };
    let ms = timer.median_ms(reps, || plan.launch(stream, samples))?;
    let (e2e_ms, _) = host_median(reps.max(3), || {
        plan.launch(stream, samples)?;
        plan.read_outliers(stream)
    })?;
    // The two host-side figures a caller who wants the counts on the host pays; fewer
    // repetitions where one launch takes long (they add nothing but time there).
    let host_reps = if once > 1.0 { 3 } else { reps.max(3) };
    let (read_ms, _) = host_median(host_reps, || {
        plan.launch(stream, samples)?;
        plan.read(stream)
    })?;
    let (call_ms, _) = host_median(host_reps, || {
        let mut fresh = HistogramPlan::new(dev, samples, spec, s, dev.tuning())?;
        fresh.launch(stream, samples)?;
        fresh.read(stream)
    })?;
    let histogram = plan.read(stream)?;
    Ok(Timed {
        ms,
        e2e_ms,
        read_ms,
        call_ms,
        ran: plan.strategy(),
        histogram,
        passes: plan.passes(),
        cluster: plan.cluster_size(),
        partition: plan.partition_scratch(),
    })
}
