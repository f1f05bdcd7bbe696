//! The CUDA side of the histogram: resolve the strategy, specialise and load the kernel, size
//! the grid to the device, launch, and read the counts back.

use super::binning::{int_bounds, BinRule};
use super::strategy::{self, AutoInputs};
use super::{Bins, Histogram, HistogramSpec, Strategy, MAX_CHANNELS};
use crate::device::cuda::{driver, CudaDevice, DeviceInfo};
use crate::error::{Error, Result};
use crate::kernels;
use crate::sample::{DType, Sample};
use cudarc::driver::{CudaFunction, CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg};
use serde::Serialize;
use std::sync::Arc;

/// Block sizes the kernels are built for: larger private histograms get larger blocks, so that
/// the threads a multiprocessor runs share fewer, larger private copies.
pub const BLOCK_SIZES: [u32; 3] = [256, 512, 1024];
/// 16-byte loads per thread per tile: four for 4- and 8-byte samples; two for 1- and 2-byte
/// ones, whose 16 or 8 samples per load already make long unrolled bodies.
pub fn vecs_for(dtype: DType) -> u32 {
    if dtype.size() <= 2 {
        2
    } else {
        4
    }
}

/// Threads per block: for one private copy per block, about 64 bytes of it per thread. The
/// other strategies keep 256 (per-warp copies and per-thread counters only fit at sizes where
/// 256 is what this rule would give anyway).
fn block_threads_for(strategy: Strategy, private_bytes: usize) -> u32 {
    let private_bytes = if strategy == Strategy::BlockShared16 { private_bytes / 2 } else { private_bytes };
    match strategy {
        Strategy::BlockShared | Strategy::WarpAggregated | Strategy::BlockShared16 => {
            BLOCK_SIZES.into_iter().find(|&t| private_bytes <= t as usize * 64).unwrap_or(1024)
        }
        // A cluster's share of a histogram that needs a cluster is always large.
        Strategy::ClusterShared | Strategy::ClusterShared16 => 1024,
        _ => BLOCK_SIZES[0],
    }
}

/// Cluster sizes tried, smallest first: the fewer blocks share a histogram, the fewer of its
/// atomics are remote. 16 is the largest Hopper allows (a "non-portable" size).
pub const CLUSTER_SIZES: [u32; 5] = [1, 2, 4, 8, 16];

/// Shared memory the kernel declares statically (one u64 per warp for the block reduction, and
/// block-shared-16's counter of its hot key).
fn static_shared_bytes(block_threads: u32) -> usize {
    (block_threads as usize / 32) * 8 + 16
}
/// Samples the skew probe looks at.
const PROBE_SAMPLES: u32 = 4096;

/// Kernel parameters, passed by value. Must match `HistParams` in histogram.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct HistParams {
    samples: u64,
    n: u64,
    counts: u64,
    outliers: u64,
    lut: u64,
    edges: u64,
    lower_i: i64,
    upper_i: i64,
    range_i: u64,
    lower: f64,
    upper: f64,
    range: f64,
    bins_f: f64,
    scale_d: f64,
    inv_range: f64,
    slack_d: f64,
    scale_f: f32,
    lo32: f32,
    hi32: f32,
    lower_f: f32,
    slack_f: f32,
    bins: u32,
    num_edges: u32,
    nslots: u32,
    edges_in_shared: u32,
    slot: [i32; MAX_CHANNELS as usize],
    slice_lo: u32,
    slice_width: u32,
    first_pass: u32,
    aggregate: u32,
    cluster_shift: u32,
    rank_counters: u32,
    hot_key: i32,
}
// SAFETY: plain old data with the C layout the kernel declares.
unsafe impl DeviceRepr for HistParams {}

/// Whether samples of `dtype` and the bounds share one 32-bit domain (signed for u8, u16 and
/// i32; unsigned for u32), so that the kernel's wrap-around range test is exact.
fn fits32(dtype: DType, lower: i64, upper: i64) -> bool {
    match dtype {
        DType::U8 | DType::U16 | DType::I32 => lower >= i32::MIN as i64 && upper <= 1i64 << 31,
        DType::U32 => lower >= 0 && upper <= 1i64 << 32,
        _ => false,
    }
}

/// Whether every value of an 8- or 16-bit sample type lies inside integral bounds.
fn all_in_range(dtype: DType, bins: &Bins) -> bool {
    let top = match dtype {
        DType::U8 => 1i64 << 8,
        DType::U16 => 1i64 << 16,
        _ => return false,
    };
    int_bounds(bins).is_some_and(|b| b.lower <= 0 && b.upper >= top)
}

/// The smallest f32 that is >= v: for f32 samples, `x < v` exactly when `x < ceil_f32(v)`.
pub(crate) fn ceil_f32(v: f64) -> f32 {
    let f = v as f32;
    if (f as f64) < v {
        f.next_up()
    } else {
        f
    }
}

/// How far from an integer the kernel's f32 estimate of the bin must land to be trusted
/// (error bound of the estimate, times four); above 1/4 the estimate is never used.
pub(crate) fn f32_slack(lower: f64, upper: f64, bins: u32) -> f32 {
    let scale = bins as f64 / (upper - lower);
    let m = lower.abs().max(upper.abs());
    let eps = 2f64.powi(-24);
    let bound = 4.0 * (scale * eps * (lower.abs() + 2.0 * m) + bins as f64 * 2.0 * eps) + 2f64.powi(-40);
    if bound.is_finite() && bound < 0.25 && m < f32::MAX as f64 {
        bound as f32
    } else {
        2.0
    }
}

/// The same for the f64 estimate `((x - lower) * bins) * (1 / range)` against the division.
pub(crate) fn f64_slack(bins: u32) -> f64 {
    let bound = bins as f64 * 2f64.powi(-48) + 2f64.powi(-60);
    if bound < 0.25 {
        bound
    } else {
        2.0
    }
}

/// How the kernel turns a sample into a bin (the `TALLY_BINNING` define).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binning {
    Table8 = 0,
    Integer = 1,
    Float = 2,
    Edges = 3,
    /// Exact integer arithmetic in 32 bits: samples and bounds share one 32-bit domain.
    Integer32 = 4,
}

pub fn binning_for(dtype: DType, bins: &Bins) -> Binning {
    let integer = !dtype.is_float() && int_bounds(bins).is_some();
    if dtype == DType::U8 && !integer {
        // Arithmetic beats a table lookup (a shared-memory access per sample) where it is exact.
        Binning::Table8
    } else if matches!(bins, Bins::Edges(_)) {
        Binning::Edges
    } else if integer {
        let b = int_bounds(bins).expect("checked above");
        if fits32(dtype, b.lower, b.upper) {
            Binning::Integer32
        } else {
            Binning::Integer
        }
    } else {
        Binning::Float
    }
}

fn strategy_code(s: Strategy) -> u32 {
    match s {
        Strategy::GlobalAtomic => 0,
        Strategy::BlockShared | Strategy::BlockShared16 => 1,
        Strategy::WarpPrivate => 2,
        Strategy::WarpAggregated => 3,
        Strategy::ClusterShared | Strategy::ClusterShared16 => 4,
        Strategy::GlobalL2 => 5,
        Strategy::Auto | Strategy::ThreadPrivate => unreachable!("resolved before compiling"),
    }
}

/// One kernel specialisation: everything the defines encode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    pub dtype: DType,
    pub binning: Binning,
    pub channels: u32,
    pub wide_counters: bool,
    pub strategy: Strategy,
    pub block_threads: u32,
    /// Integer binning with as many bins as values in range: the bin is the offset.
    pub identity: bool,
    /// 32-bit integer binning where every value of the sample type lies in range.
    pub all_in_range: bool,
    /// block-shared-16 with a dominant key counted apart (skewed input).
    pub hot_key: bool,
}

impl Variant {
    pub fn defines(&self) -> Vec<(&'static str, String)> {
        vec![
            ("TALLY_SAMPLE", self.dtype.cuda_type().to_string()),
            ("TALLY_BINNING", (self.binning as u32).to_string()),
            ("TALLY_CHANNELS", self.channels.to_string()),
            ("TALLY_COUNTER", if self.wide_counters { "unsigned long long" } else { "unsigned int" }.to_string()),
            ("TALLY_STRATEGY", strategy_code(self.strategy).to_string()),
            ("TALLY_NARROW", (self.strategy.narrow() as u32).to_string()),
            ("TALLY_HOT_KEY", (self.hot_key as u32).to_string()),
            ("TALLY_IDENTITY", (self.identity as u32).to_string()),
            ("TALLY_ALL_IN_RANGE", (self.all_in_range as u32).to_string()),
            ("TALLY_BLOCK_THREADS", self.block_threads.to_string()),
            ("TALLY_VECS", vecs_for(self.dtype).to_string()),
            ("TALLY_HOT_SLOTS", if self.strategy == Strategy::GlobalL2 { hot_slots() } else { 0 }.to_string()),
        ]
    }

    /// Every specialisation tally can ask NVRTC for (channel counts: 1 and 4 stand for all).
    pub fn all() -> Vec<Variant> {
        let mut v = Vec::new();
        for dtype in DType::ALL {
            let binnings: &[Binning] = match dtype {
                DType::U8 => &[Binning::Table8, Binning::Integer32, Binning::Integer],
                DType::F32 | DType::F64 => &[Binning::Float, Binning::Edges],
                DType::I64 => &[Binning::Integer, Binning::Float, Binning::Edges],
                _ => &[Binning::Integer32, Binning::Integer, Binning::Float, Binning::Edges],
            };
            for &binning in binnings {
                for channels in [1, 4] {
                    for wide_counters in [false, true] {
                        for &strategy in &Strategy::GPU[1..] {
                            // The block sizes Plan::new can ask for (block_threads_for).
                            let sizes: &[u32] = match strategy {
                                Strategy::BlockShared | Strategy::WarpAggregated | Strategy::BlockShared16 => {
                                    &BLOCK_SIZES
                                }
                                Strategy::ClusterShared | Strategy::ClusterShared16 => &BLOCK_SIZES[2..],
                                _ => &BLOCK_SIZES[..1],
                            };
                            let identities: &[bool] = match binning {
                                Binning::Integer | Binning::Integer32 => &[false, true],
                                _ => &[false],
                            };
                            let all_in: &[bool] = match (dtype, binning) {
                                (DType::U8 | DType::U16, Binning::Integer32) => &[false, true],
                                _ => &[false],
                            };
                            let hot: &[bool] =
                                if strategy == Strategy::BlockShared16 { &[false, true] } else { &[false] };
                            for &block_threads in sizes {
                                for &identity in identities {
                                    for &all_in_range in all_in {
                                        for &hot_key in hot {
                                            v.push(Variant {
                                                dtype,
                                                binning,
                                                channels,
                                                wide_counters,
                                                strategy,
                                                block_threads,
                                                identity,
                                                all_in_range,
                                                hot_key,
                                            });
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        v
    }
}

/// Dynamic shared memory of one block: [edges][table][outliers][private counters]. A block's
/// private copy holds the bins, the below/above/NaN counts of each slot and one trash counter; a
/// cluster block holds `rank_counters` bins of the pass.
fn shared_bytes(
    strategy: Strategy,
    binning: Binning,
    width: usize,
    nslots: usize,
    edges_in_shared: usize,
    threads: u32,
    rank_counters: usize,
) -> usize {
    let pwidth = width + 3 * nslots + 1;
    let warps = threads as usize / 32;
    let edges = (edges_in_shared * 8).div_ceil(16) * 16;
    let table = if binning == Binning::Table8 { 256 * 4 } else { 0 };
    let outliers = MAX_CHANNELS as usize * 3 * 4;
    let privates = match strategy {
        Strategy::GlobalAtomic => 0,
        Strategy::GlobalL2 => hot_slots() * 8,
        Strategy::WarpPrivate => warps * pwidth * 4,
        Strategy::BlockShared16 => pwidth.div_ceil(2) * 4,
        Strategy::ClusterShared => rank_counters * 4,
        Strategy::ClusterShared16 => rank_counters * 2,
        _ => pwidth * 4,
    };
    edges + table + outliers + privates
}

/// How the cluster strategies split the keys: `cluster` blocks each holding `rank_counters`
/// counters (even), `slice` keys per pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterShape {
    pub cluster: u32,
    pub rank_counters: usize,
    pub slice: usize,
}

impl ClusterShape {
    /// The smallest of `sizes` (ascending) that holds all `width` keys in `room` bytes per block,
    /// or else the largest with as many keys per pass as it holds.
    pub fn new(width: usize, counter_bytes: usize, room: usize, sizes: &[u32]) -> Option<ClusterShape> {
        let max_rank = (room / counter_bytes) & !1;
        if max_rank == 0 || width == 0 || sizes.is_empty() {
            return None;
        }
        let fit = |c: u32| width.div_ceil(c as usize).next_multiple_of(2) <= max_rank;
        Some(match sizes.iter().copied().find(|&c| fit(c)) {
            Some(c) => {
                ClusterShape { cluster: c, rank_counters: width.div_ceil(c as usize).next_multiple_of(2), slice: width }
            }
            None => {
                let c = *sizes.last().expect("not empty");
                let slice = max_rank * c as usize;
                ClusterShape { cluster: c, rank_counters: max_rank, slice }
            }
        })
    }
}

/// Slots of global-l2's per-block cache of hot bins (a key and a count each): the kernel's
/// TALLY_HOT_SLOTS, a power of two. The knob of the same name overrides it for experiments.
fn hot_slots() -> usize {
    knob("TALLY_HOT_SLOTS").map(|v| (v as usize).next_power_of_two().clamp(64, 8192)).unwrap_or(4096)
}

/// Keys per pass of the global-l2 strategy: half the L2 cache of counters, so that the other
/// half still streams the samples.
pub(crate) fn l2_slice(l2_bytes: usize, counter_bytes: usize) -> usize {
    (l2_bytes / 2 / counter_bytes).max(1 << 16)
}

/// An integer from the environment, for experiments (documented in docs/PERF.md).
pub(crate) fn knob(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// What fits in the shared memory of a block, or of a cluster, on one device, for histograms
/// of one binning and channel count. `Plan::new` and the stated switch-over points both use it.
pub struct Capacity {
    binning: Binning,
    nslots: usize,
    optin: usize,
    clusters: bool,
    /// One cluster size forced for an experiment (TALLY_CLUSTER).
    forced_cluster: Option<u32>,
}

impl Capacity {
    pub fn new(info: &DeviceInfo, binning: Binning, nslots: usize) -> Capacity {
        Capacity {
            binning,
            nslots,
            optin: info.smem_per_block_optin,
            clusters: info.compute_capability.0 >= 9,
            forced_cluster: knob("TALLY_CLUSTER").map(|c| c as u32),
        }
    }

    /// Dynamic shared memory one block of strategy `s` may use for `width` keys: threads per
    /// block follow the strategy and the size of one private copy, and the kernel's own static
    /// shared memory comes first.
    fn room(&self, s: Strategy, width: usize) -> usize {
        self.optin.saturating_sub(static_shared_bytes(block_threads_for(s, width * 4)))
    }

    /// Whether a block strategy's private copy of `width` keys (and `edges` edges) fits.
    pub fn fits(&self, s: Strategy, width: usize, edges: usize) -> bool {
        let threads = block_threads_for(s, width * 4);
        shared_bytes(s, self.binning, width, self.nslots, edges, threads, 0) <= self.room(s, width)
    }

    /// How a cluster strategy splits `width` keys, with clusters of at most `max_cluster` blocks.
    pub fn cluster_shape(&self, s: Strategy, width: usize, max_cluster: u32) -> Option<ClusterShape> {
        let threads = block_threads_for(s, width * 4);
        let fixed = shared_bytes(s, self.binning, width, self.nslots, 0, threads, 0);
        let counter_bytes = if s.narrow() { 2 } else { 4 };
        let sizes: Vec<u32> = CLUSTER_SIZES
            .into_iter()
            .filter(|&c| c <= max_cluster && self.forced_cluster.is_none_or(|f| f == c))
            .collect();
        ClusterShape::new(width, counter_bytes, self.room(s, width).saturating_sub(fixed), &sizes)
    }

    /// Whether a cluster of at most 16 blocks holds all `width` keys in one pass (never
    /// without clusters).
    fn single_pass(&self, s: Strategy, width: usize) -> bool {
        self.clusters && self.cluster_shape(s, width, 16).is_some_and(|c| c.slice >= width)
    }

    pub fn auto_inputs(&self, width: usize, top_bin_fraction: f64, compute_capability: (i32, i32)) -> AutoInputs {
        AutoInputs {
            block_shared_fits: self.fits(Strategy::BlockShared, width, 0),
            block_shared16_fits: self.fits(Strategy::BlockShared16, width, 0),
            top_bin_fraction,
            compute_capability,
        }
    }
}

/// The bin counts (one channel, integer samples) where strategies change on a device: where
/// `auto` moves on, and where the cluster strategies start a second pass.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub struct SwitchOver {
    /// Largest histogram in one block's shared memory, 32-bit counters: auto's block-shared.
    pub block_shared: usize,
    /// The same in 16-bit counters: auto's block-shared-16.
    pub block_shared16: usize,
    /// Largest single-pass histogram of cluster-shared-16 and cluster-shared (16-block clusters;
    /// None before sm_90). `auto` does not use them.
    pub cluster_shared16: Option<usize>,
    pub cluster_shared: Option<usize>,
    /// Keys per pass of global-l2 (32-bit counters).
    pub global_l2_pass: usize,
}

impl SwitchOver {
    pub fn for_device(info: &DeviceInfo) -> SwitchOver {
        let cap = Capacity::new(info, Binning::Integer32, 1);
        // The largest width in [1, 2^31) for which `ok` holds (it holds for all smaller ones).
        let largest = |ok: &dyn Fn(usize) -> bool| {
            let (mut lo, mut hi) = (0usize, 1usize << 31);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if ok(mid) {
                    lo = mid
                } else {
                    hi = mid
                }
            }
            lo
        };
        let cluster = |s: Strategy| cap.clusters.then(|| largest(&|w| cap.single_pass(s, w)));
        SwitchOver {
            block_shared: largest(&|w| cap.fits(Strategy::BlockShared, w, 0)),
            block_shared16: largest(&|w| cap.fits(Strategy::BlockShared16, w, 0)),
            cluster_shared: cluster(Strategy::ClusterShared),
            cluster_shared16: cluster(Strategy::ClusterShared16),
            global_l2_pass: l2_slice(info.l2_bytes, 4),
        }
    }
}

/// A histogram ready to launch on resident samples: kernel loaded, buffers allocated.
pub struct Plan {
    dev: Arc<CudaDevice>,
    func: CudaFunction,
    params: HistParams,
    cfg: LaunchConfig,
    /// Blocks per cluster, for the cluster strategies.
    cluster: Option<u32>,
    /// (first key, keys) of each pass; one pass covering every key for most strategies.
    passes: Vec<(u32, u32)>,
    counts: CudaSlice<u8>,
    counts_bytes: usize,
    outliers: CudaSlice<u64>,
    _lut: Option<CudaSlice<i32>>,
    _edges: Option<CudaSlice<f64>>,
    spec: HistogramSpec,
    pub strategy: Strategy,
    pub variant: Variant,
}

impl Plan {
    /// Prepares a histogram of `n` samples at `samples` (a device address). `auto` probes the
    /// samples for skew, so they must already be there.
    pub fn new<T: Sample>(
        dev: &Arc<CudaDevice>,
        samples: u64,
        n: usize,
        spec: &HistogramSpec,
        requested: Strategy,
    ) -> Result<Plan> {
        spec.validate()?;
        let info = dev.info();
        let bins = spec.bins.count();
        let nslots = spec.channels.selected.len();
        let width = bins * nslots;
        let binning = binning_for(T::DTYPE, &spec.bins);
        let rule = BinRule::new::<T>(spec);
        let num_edges = if let Bins::Edges(e) = &spec.bins { e.len() } else { 0 };
        let wide = n as u64 >= 1u64 << 32;
        let counter_size = if wide { 8 } else { 4 };
        let has_clusters = info.compute_capability.0 >= 9;

        let cap = Capacity::new(info, binning, nslots);
        let threads_for = |s: Strategy| block_threads_for(s, width * 4);
        let room = |s: Strategy| cap.room(s, width);
        let fits = |s: Strategy, e: usize| cap.fits(s, width, e);
        let shape = |s: Strategy, max_cluster: u32| cap.cluster_shape(s, width, max_cluster);

        // The most frequent key of a strided probe of the input, where it decides something.
        let mut skew: Option<Skew> = None;
        let strategy = match requested {
            Strategy::Auto => {
                // Hopper combines same-address shared atomics itself: no probe needed there.
                let probe = n > 0 && info.compute_capability.0 < 9;
                if probe {
                    skew = Some(probe_skew::<T>(dev, samples, n, spec, &rule)?);
                }
                strategy::choose(cap.auto_inputs(width, skew.unwrap_or_default().top_fraction, info.compute_capability))
            }
            Strategy::ThreadPrivate => {
                return Err(Error::invalid("thread-private is the CPU backend's strategy; use --backend cpu"))
            }
            s => s,
        };
        // A strategy that cannot run here degrades: per-warp copies to one copy per block, a
        // block copy that does not fit to plain global atomics, clusters (before sm_90) to
        // L2-sized passes of global atomics.
        let strategy = match strategy {
            s if s.needs_clusters() && !has_clusters => Strategy::GlobalL2,
            Strategy::WarpPrivate if !fits(Strategy::WarpPrivate, 0) => {
                if fits(Strategy::BlockShared, 0) {
                    Strategy::BlockShared
                } else {
                    Strategy::GlobalAtomic
                }
            }
            s @ (Strategy::BlockShared | Strategy::WarpAggregated | Strategy::BlockShared16) if !fits(s, 0) => {
                Strategy::GlobalAtomic
            }
            s => s,
        };
        if skew.is_none() && matches!(strategy, Strategy::GlobalL2 | Strategy::BlockShared16) {
            skew = Some(probe_skew::<T>(dev, samples, n, spec, &rule)?);
        }
        let skewed = skew.is_some_and(|s| s.top_fraction >= strategy::SKEW_THRESHOLD);
        // block-shared-16 counts a dominant key in a 32-bit counter of its own: an atomic whose
        // old value is needed (the 16-bit wrap test) is not combined with the warp's other
        // updates of the same address, and hot90 data ran at 24% of the read bandwidth (v9).
        // Compiled in only then: the extra compare cost uniform data 13 points (84% to 71%).
        let hot_key = match (strategy, skew) {
            (Strategy::BlockShared16, Some(s)) if skewed && n > 0 => s.top_key.map_or(-1, |k| k as i32),
            _ => -1,
        };
        let threads = threads_for(strategy);
        let variant = Variant {
            dtype: T::DTYPE,
            binning,
            channels: spec.channels.interleave,
            wide_counters: wide,
            strategy,
            block_threads: threads,
            identity: matches!(binning, Binning::Integer | Binning::Integer32)
                && int_bounds(&spec.bins).is_some_and(|b| b.range == b.bins as u64),
            all_in_range: binning == Binning::Integer32 && all_in_range(T::DTYPE, &spec.bins),
            hot_key: hot_key >= 0,
        };
        let module = dev.module(&kernels::HISTOGRAM, &variant.defines())?;
        let tile = (threads * vecs_for(T::DTYPE)) as u64 * (16 / T::DTYPE.size()) as u64;

        // The keys of each pass, the block's shared memory and the grid.
        let (func, smem, edges_shared, grid, cluster, slice, rank_counters);
        if strategy.needs_clusters() {
            // The smallest cluster that holds the histogram, or the largest the device can
            // co-schedule, counting one range of keys per pass.
            let mut max_cluster = 16;
            loop {
                let c = shape(strategy, max_cluster)
                    .ok_or_else(|| Error::invalid("no cluster shape fits the shared memory"))?;
                let e = if num_edges > 0
                    && shared_bytes(strategy, binning, width, nslots, num_edges, threads, c.rank_counters)
                        <= room(strategy)
                {
                    num_edges
                } else {
                    0
                };
                let bytes = shared_bytes(strategy, binning, width, nslots, e, threads, c.rank_counters);
                let f = dev.function(&module, "tally_histogram", bytes)?;
                let active = dev.max_active_clusters(&f, threads, bytes, c.cluster)?;
                if active == 0 && c.cluster > 1 {
                    max_cluster = c.cluster / 2;
                    continue;
                }
                if active == 0 {
                    return Err(Error::Cuda {
                        call: "cuOccupancyMaxActiveClusters".into(),
                        message: "not even a single block fits".into(),
                    });
                }
                // 32-bit cluster counters: no cluster may count 2^32 samples into one.
                let blocks = (active * c.cluster) as u64;
                let safe = if strategy.narrow() { 0 } else { (n as u64 * c.cluster as u64).div_ceil(1 << 31) };
                let g = blocks.max(safe.next_multiple_of(c.cluster as u64));
                (func, smem, edges_shared, grid, cluster, slice, rank_counters) =
                    (f, bytes, e, g, Some(c.cluster), c.slice, c.rank_counters);
                break;
            }
        } else {
            // Edges go to shared memory when they leave room for the private copy.
            edges_shared = if num_edges > 0 && fits(strategy, num_edges) { num_edges } else { 0 };
            smem = shared_bytes(strategy, binning, width, nslots, edges_shared, threads, 0);
            func = dev.function(&module, "tally_histogram", smem)?;
            let per_sm = dev.blocks_per_sm(&func, threads, smem)?;
            let max_grid = info.multiprocessors as u64 * per_sm as u64;
            // Enough blocks to fill the device, no more than there are tiles, and enough that no
            // block's 32-bit private counters can overflow.
            grid = (n as u64).div_ceil(tile).clamp(1, max_grid).max((n as u64).div_ceil(1 << 31));
            cluster = None;
            rank_counters = 0;
            slice = if strategy == Strategy::GlobalL2 {
                knob("TALLY_PASS_KEYS").map(|k| k as usize).unwrap_or_else(|| l2_slice(info.l2_bytes, counter_size))
            } else {
                width
            };
        }
        // Warp aggregation before each atomic (v9 measurements, H200): the cluster strategies
        // always (Zipf, 1M bins: 6.3 against 8.6 ms without); global-l2, behind its hot-bin
        // cache, only where one bin holds a large share (hot90, 1M bins: 0.72 against 1.15 ms;
        // Zipf 2.04 against 1.75 ms; uniform about the same).
        let aggregate = match knob("TALLY_AGGREGATE") {
            Some(a) => a != 0,
            None => strategy.needs_clusters() || (strategy == Strategy::GlobalL2 && skewed),
        };
        let slice = slice.clamp(1, width);
        let passes: Vec<(u32, u32)> =
            (0..width).step_by(slice).map(|lo| (lo as u32, slice.min(width - lo) as u32)).collect();
        let cfg =
            LaunchConfig { grid_dim: (grid as u32, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: smem as u32 };

        let counts_bytes = width * counter_size;
        let counts = dev.alloc::<u8>(counts_bytes, "histogram counters")?;
        let outliers = dev.alloc::<u64>(nslots * 3, "outlier counters")?;

        let mut params = HistParams {
            samples,
            n: n as u64,
            counts: dev.ptr(&counts),
            outliers: dev.ptr(&outliers),
            bins: bins as u32,
            nslots: nslots as u32,
            num_edges: num_edges as u32,
            edges_in_shared: (edges_shared > 0) as u32,
            slot: [-1; MAX_CHANNELS as usize],
            slice_lo: 0,
            slice_width: width as u32,
            first_pass: 1,
            // Warp aggregation guards the pass strategies against hot bins (knob: experiments).
            aggregate: aggregate as u32,
            hot_key,
            cluster_shift: cluster.unwrap_or(1).trailing_zeros(),
            rank_counters: rank_counters as u32,
            ..Default::default()
        };
        for (c, s) in spec.channels.slots().into_iter().enumerate() {
            params.slot[c] = s;
        }
        let mut lut = None;
        let mut edges = None;
        match binning {
            Binning::Table8 => {
                let table = dev.upload(&rule.lut8(), "bin table")?;
                params.lut = dev.ptr(&table);
                lut = Some(table);
            }
            Binning::Integer | Binning::Integer32 => {
                let b = int_bounds(&spec.bins).expect("integer binning has integer bounds");
                params.lower_i = b.lower;
                params.upper_i = b.upper;
                params.range_i = b.range;
                params.scale_f = (b.bins as f64 / b.range as f64) as f32;
                params.scale_d = b.bins as f64 / b.range as f64;
            }
            Binning::Float => {
                let Bins::Even { bins, lower, upper } = spec.bins else { unreachable!() };
                params.lower = lower;
                params.upper = upper;
                params.range = upper - lower;
                params.bins_f = bins as f64;
                params.inv_range = 1.0 / (upper - lower);
                params.slack_d = f64_slack(bins);
                params.lo32 = ceil_f32(lower);
                params.hi32 = ceil_f32(upper);
                params.lower_f = lower as f32;
                params.scale_f = (bins as f64 / (upper - lower)) as f32;
                params.slack_f = f32_slack(lower, upper, bins);
            }
            Binning::Edges => {
                let Bins::Edges(e) = &spec.bins else { unreachable!() };
                let buf = dev.upload(e, "bin edges")?;
                params.edges = dev.ptr(&buf);
                edges = Some(buf);
            }
        }
        Ok(Plan {
            dev: dev.clone(),
            func,
            params,
            cfg,
            cluster,
            passes,
            counts,
            counts_bytes,
            outliers,
            _lut: lut,
            _edges: edges,
            spec: spec.clone(),
            strategy,
            variant,
        })
    }

    /// Passes over the samples one launch makes (one range of keys each).
    pub fn passes(&self) -> usize {
        self.passes.len()
    }

    /// Blocks per cluster, for the cluster strategies.
    pub fn cluster_size(&self) -> Option<u32> {
        self.cluster
    }

    /// Zeroes the counters and launches the kernel (once per pass), asynchronously.
    pub fn launch(&mut self) -> Result<()> {
        let stream = self.dev.stream().clone();
        stream.memset_zeros(&mut self.counts).map_err(driver("cuMemsetD8Async(counters)"))?;
        stream.memset_zeros(&mut self.outliers).map_err(driver("cuMemsetD8Async(outliers)"))?;
        if self.params.n == 0 {
            return Ok(());
        }
        for (i, &(lo, keys)) in self.passes.iter().enumerate() {
            let mut p = self.params;
            p.slice_lo = lo;
            p.slice_width = keys;
            p.first_pass = (i == 0) as u32;
            match self.cluster {
                Some(c) => {
                    self.dev.launch_clusters(&self.func, "tally_histogram", self.cfg, c, &p)?;
                }
                None => {
                    unsafe { stream.launch_builder(&self.func).arg(&p).launch(self.cfg) }
                        .map_err(driver("cuLaunchKernel(tally_histogram)"))?;
                }
            }
        }
        Ok(())
    }

    /// Waits for the kernel and reads the counts back.
    pub fn read(&self) -> Result<Histogram> {
        self.dev.synchronize("tally_histogram")?;
        let raw = self.dev.download(&self.counts, self.counts_bytes)?;
        let outliers = self.dev.download(&self.outliers, self.spec.channels.selected.len() * 3)?;
        let bins = self.spec.bins.count();
        let flat: Vec<u64> = if self.variant.wide_counters {
            raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
        } else {
            raw.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()) as u64).collect()
        };
        let mut h = Histogram::zeroed(&self.spec, "cuda", self.strategy);
        for k in 0..self.spec.channels.selected.len() {
            h.counts[k].copy_from_slice(&flat[k * bins..(k + 1) * bins]);
            h.below[k] = outliers[3 * k];
            h.above[k] = outliers[3 * k + 1];
            h.nan[k] = outliers[3 * k + 2];
        }
        Ok(h)
    }

    /// The raw counter buffer, for tests that poison it before a launch.
    #[doc(hidden)]
    pub fn counters_mut(&mut self) -> &mut CudaSlice<u8> {
        &mut self.counts
    }
}

/// What a strided probe of the input says about its most frequent key.
#[derive(Clone, Copy, Debug, Default)]
struct Skew {
    /// Share of the probed samples in the most frequent key (bin of a selected channel).
    top_fraction: f64,
    /// That key, `slot * bins + bin`.
    top_key: Option<u32>,
}

/// Probes `PROBE_SAMPLES` samples spread over the input (the kernel's `j * n / k`).
fn probe_skew<T: Sample>(
    dev: &Arc<CudaDevice>,
    samples: u64,
    n: usize,
    spec: &HistogramSpec,
    rule: &BinRule,
) -> Result<Skew> {
    let k = (n as u64).min(PROBE_SAMPLES as u64) as u32;
    if k == 0 {
        return Ok(Skew::default());
    }
    let variant = Variant {
        dtype: T::DTYPE,
        binning: binning_for(T::DTYPE, &spec.bins),
        channels: spec.channels.interleave,
        wide_counters: false,
        strategy: Strategy::GlobalAtomic,
        block_threads: BLOCK_SIZES[0],
        identity: false,
        all_in_range: false,
        hot_key: false,
    };
    let module = dev.module(&kernels::HISTOGRAM, &variant.defines())?;
    let f = dev.function(&module, "tally_histogram_probe", 0)?;
    let out = dev.alloc::<T>(k as usize, "skew probe")?;
    let po = dev.ptr(&out);
    let nn = n as u64;
    let cfg = LaunchConfig { grid_dim: (k.div_ceil(256), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    unsafe { dev.stream().launch_builder(&f).arg(&samples).arg(&nn).arg(&po).arg(&k).launch(cfg) }
        .map_err(driver("cuLaunchKernel(tally_histogram_probe)"))?;
    let probe = dev.download(&out, k as usize)?;
    let slots = spec.channels.slots();
    let bins = spec.bins.count() as u32;
    let mut freq = std::collections::HashMap::<u32, u32>::new();
    for (j, x) in probe.into_iter().enumerate() {
        let index = j as u64 * n as u64 / k as u64;
        let slot = slots[(index % slots.len() as u64) as usize];
        let b = rule.bin(x);
        if b >= 0 && slot >= 0 {
            *freq.entry(slot as u32 * bins + b as u32).or_default() += 1;
        }
    }
    // The most frequent key; ties go to the smallest, so the choice is reproducible.
    let top = freq.into_iter().max_by_key(|&(key, count)| (count, std::cmp::Reverse(key)));
    Ok(Skew { top_fraction: top.map_or(0.0, |(_, c)| c as f64 / k as f64), top_key: top.map(|(key, _)| key) })
}

/// Compiles every kernel specialisation for `arch` (e.g. "sm_90") without a device: the check
/// CI runs with NVRTC alone. Returns the number compiled.
pub fn compile_all(arch: &str) -> Result<usize> {
    use rayon::prelude::*;
    let clusters = arch.trim_start_matches("sm_").trim_start_matches("compute_").parse::<u32>().is_ok_and(|a| a >= 90);
    // TALLY_NVRTC_ONLY=<strategy> narrows a local check to one strategy's specialisations.
    let only = std::env::var("TALLY_NVRTC_ONLY").ok();
    let variants: Vec<Variant> = Variant::all()
        .into_iter()
        .filter(|v| clusters || !v.strategy.needs_clusters())
        .filter(|v| only.as_deref().is_none_or(|o| v.strategy.name() == o))
        .collect();
    variants.par_iter().try_for_each(|v| {
        let opts: Vec<String> = v.defines().iter().map(|(k, val)| format!("-D{k}={val}")).collect();
        crate::device::nvrtc::compile(kernels::HISTOGRAM.name, kernels::HISTOGRAM.text, kernels::HEADERS, arch, &opts)
            .map(|_| ())
    })?;
    crate::device::nvrtc::compile(kernels::BANDWIDTH.name, kernels::BANDWIDTH.text, kernels::HEADERS, arch, &[])?;
    // Weighted and 2-D histograms (histogram_general.cu).
    let general = super::cuda_general::compile_all(arch)?;
    Ok(variants.len() + 1 + general)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every specialisation Plan::new can ask for is in Variant::all, which CI compiles.
    #[test]
    fn plans_only_ask_for_listed_variants() {
        let all = Variant::all();
        for strategy in &Strategy::GPU[1..] {
            for width in (0..=24).map(|e| 1usize << e).chain([3, 48, 255, 257, 4095, 4097, 12000, 56000]) {
                let threads = block_threads_for(*strategy, width * 4);
                let v = Variant {
                    dtype: DType::I32,
                    binning: Binning::Integer32,
                    channels: 1,
                    wide_counters: false,
                    strategy: *strategy,
                    block_threads: threads,
                    identity: true,
                    all_in_range: false,
                    hot_key: false,
                };
                assert!(all.contains(&v), "{v:?} (width {width}) is not compiled by the CI check");
            }
        }
    }

    fn h200() -> DeviceInfo {
        DeviceInfo {
            name: "test".into(),
            compute_capability: (9, 0),
            multiprocessors: 132,
            l2_bytes: 50 << 20,
            smem_per_block_optin: 227 << 10,
            smem_per_multiprocessor: 228 << 10,
            total_memory: 140 << 30,
            nvrtc_version: (13, 0),
            target: "sm_90".into(),
            cache_dir: None,
        }
    }

    #[test]
    fn cluster_shapes() {
        // 1M keys, 16-bit, 128 KB per block: 16 blocks of 65,536 counters, one pass.
        let c = ClusterShape::new(1 << 20, 2, 128 << 10, &CLUSTER_SIZES).unwrap();
        assert_eq!(c, ClusterShape { cluster: 16, rank_counters: 1 << 16, slice: 1 << 20 });
        // Small histograms take the smallest cluster; odd shares round up to whole words.
        let c = ClusterShape::new(1001, 4, 128 << 10, &CLUSTER_SIZES).unwrap();
        assert_eq!((c.cluster, c.rank_counters, c.slice), (1, 1002, 1001));
        // 25,000 counters per block: 100,000 keys fit 4 blocks, 100,001 need 8.
        let c = ClusterShape::new(100_000, 4, 100_000, &CLUSTER_SIZES).unwrap();
        assert_eq!((c.cluster, c.rank_counters), (4, 25_000));
        let c = ClusterShape::new(100_001, 4, 100_000, &CLUSTER_SIZES).unwrap();
        assert_eq!((c.cluster, c.rank_counters), (8, 12_502));
        // Too many keys: the largest cluster, several passes.
        let c = ClusterShape::new(1 << 24, 2, 128 << 10, &CLUSTER_SIZES).unwrap();
        assert_eq!((c.cluster, c.slice), (16, 1 << 20));
        assert!(ClusterShape::new(10, 4, 2, &CLUSTER_SIZES).is_none());
    }

    #[test]
    fn switch_over_points_are_where_auto_changes() {
        let info = h200();
        let s = SwitchOver::for_device(&info);
        // 32-bit copies: about 58,000 bins in 227 KB; 16-bit twice that; a 16-block cluster
        // 16x the 16-bit block; global-l2 passes of half the L2 in 32-bit counters.
        assert!((57_000..58_200).contains(&s.block_shared), "{s:?}");
        assert!((2 * s.block_shared..2 * s.block_shared + 100).contains(&s.block_shared16), "{s:?}");
        let c16 = s.cluster_shared16.unwrap();
        assert!((16 * 115_900..16 * 116_300).contains(&c16), "{s:?}");
        assert_eq!(s.global_l2_pass, (50 << 20) / 8);
        let cap = Capacity::new(&info, Binning::Integer32, 1);
        let auto = |w: usize| strategy::choose(cap.auto_inputs(w, 0.0, (9, 0)));
        assert_eq!(auto(s.block_shared), Strategy::BlockShared);
        assert_eq!(auto(s.block_shared + 1), Strategy::BlockShared16);
        assert_eq!(auto(s.block_shared16), Strategy::BlockShared16);
        assert_eq!(auto(s.block_shared16 + 1), Strategy::GlobalL2);
        assert_eq!(auto(c16), Strategy::GlobalL2);
        let sm80 = DeviceInfo { compute_capability: (8, 0), smem_per_block_optin: 163 << 10, ..h200() };
        let s80 = SwitchOver::for_device(&sm80);
        assert_eq!((s80.cluster_shared, s80.cluster_shared16), (None, None));
        let cap80 = Capacity::new(&sm80, Binning::Integer32, 1);
        assert_eq!(strategy::choose(cap80.auto_inputs(s80.block_shared16 + 1, 0.0, (8, 0))), Strategy::GlobalL2);
    }
}
