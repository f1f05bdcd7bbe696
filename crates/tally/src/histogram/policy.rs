//! The histogram's policy on the GPU: which strategy runs, block sizes, shared-memory layout,
//! cluster shapes, passes and grid. Pure functions of (device properties, problem, tuning), as
//! CUB's policies are; the plans in `cuda.rs` and `cuda_general/` are the mechanism.

use super::axis::Binning;
use super::strategy::{self, AutoInputs};
use super::{Strategy, MAX_CHANNELS};
use crate::device::DeviceInfo;
use crate::sample::DType;
use serde::Serialize;

/// Knobs a caller may set for experiments; every field defaults to the measured choice.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tuning {
    /// Slots of global-l2's per-block hot-bin cache (rounded to a power of two in 64..=8192);
    /// default 4096.
    pub hot_slots: Option<usize>,
    /// Keys per pass of the pass strategies; default half the L2 in counters.
    pub pass_keys: Option<usize>,
    /// One cluster size for the cluster strategies; default the smallest that holds the bins.
    pub cluster: Option<u32>,
    /// Warp aggregation before the pass strategies' atomics; default by the skew probe.
    pub aggregate: Option<bool>,
    /// Threads per block of the scan kernels (64, 128, 256 or 512); default by the scan's kind.
    pub scan_block_threads: Option<u32>,
    /// Rows of 16-byte loads per thread and scan tile; default by the scan's kind (rows times warps
    /// at most 128).
    pub scan_vecs: Option<u32>,
    /// Blocks per multiprocessor the scan kernels are compiled for (1 to 32); default by the
    /// scan's kind (`scan::policy`).
    pub scan_min_blocks: Option<u32>,
    /// Whether a scan tile is staged in shared memory rather than held in registers through
    /// the look-back; default by the scan's kind.
    pub scan_staged: Option<bool>,
    /// Predecessor windows (of 32 tiles) a lane of the scans' fast look-back reads a round (1
    /// to 8); default by the scan's kind (`scan::policy::lookback_windows`).
    pub scan_windows: Option<u32>,
    /// Whether a scan by key writes the rows that need no tile prefix while warp 0 looks back;
    /// default for outputs of up to 4 bytes; plain scans never do.
    pub scan_split: Option<bool>,
    /// Whether deterministic scans look back in order (a left fold from the nearest inclusive
    /// prefix) rather than by fixed groups; default for plain float sums and custom scans
    /// (`scan::policy::ordered_lookback`).
    pub scan_ordered: Option<bool>,
    /// Samples per slice of the partition strategy (rounded down to whole tiles); default as
    /// many as its scratch bound allows.
    pub partition_slice: Option<usize>,
    /// Threads per block of the partition's scatter (a power of two in 128..=1024);
    /// default `partition::PARTITION_THREADS`, or past `partition::FEW_CHUNKS` chunks
    /// `partition::MANY_CHUNKS_THREADS` where `partition_blocks_per_sm` is not tuned either.
    pub partition_threads: Option<u32>,
    /// Keys per thread and tile of the partition's scatter (a power of two, at least
    /// one 16-byte load, at most 32 and 16,384 per tile); default `partition::PARTITION_ITEMS`.
    pub partition_items: Option<u32>,
    /// Blocks of the partition's scatter per multiprocessor (its register bound and grid, where
    /// shared memory allows); default `partition::PARTITION_BLOCKS_PER_SM`, or past
    /// `partition::FEW_CHUNKS` chunks `partition::MANY_CHUNKS_BLOCKS_PER_SM` where
    /// `partition_threads` is not tuned either.
    pub partition_blocks_per_sm: Option<u32>,
    /// Whether the partition's scatter ranks a warp's keys of one chunk together
    /// (`__match_any_sync`) instead of one shared atomic per key; default
    /// `partition::PARTITION_MATCH`.
    pub partition_match: Option<bool>,
    /// log2 of the keys per chunk of the partition, below what the device's shared memory holds
    /// (at least 8; a larger value is the device's); default the device's
    /// (`partition::chunk_shift`). Smaller chunks mean more of them.
    pub partition_chunk_shift: Option<u32>,
    /// Bytes of one chunk of a streamed input; default `device::staging::DEFAULT_CHUNK_BYTES`.
    pub stream_chunk_bytes: Option<usize>,
    /// Chunks of a streamed input in flight at once (2..=8); default
    /// `device::staging::DEFAULT_BUFFERS`.
    pub stream_buffers: Option<usize>,
    /// Host inputs above this many bytes are streamed through pinned chunks rather than
    /// uploaded whole; default 1 GiB, or a quarter of device memory where that is less.
    pub stream_threshold: Option<usize>,
    /// Threads per block of the compaction kernels (select and the runs: 64, 128, 256 or
    /// 512); default by the primitive's policy.
    pub compact_block_threads: Option<u32>,
    /// Rows of 16-byte loads per thread and compaction tile (rows times warps at most 128, the
    /// tile's staging at most `select::policy::MAX_STAGE_BYTES`); default by the policy.
    pub compact_vecs: Option<u32>,
    /// Blocks per multiprocessor the compaction kernels are compiled for (1 to 32).
    pub compact_min_blocks: Option<u32>,
    /// 16-byte loads in flight per thread of the plain reduction kernels (1 to 16); default by
    /// the element's size (`reduce::policy`).
    pub reduce_vecs: Option<u32>,
    /// Blocks per multiprocessor of the plain reduction kernels (1 to 8, fewer where the input
    /// does not fill them); default 4.
    pub reduce_blocks_per_sm: Option<u32>,
    /// Counter bytes up to which a histogram plan keeps a second set of counters that each
    /// launch zeroes for the next (0: never); default [`SPARE_COUNTERS_MAX_BYTES`].
    pub spare_counters_max_bytes: Option<usize>,
    /// Counter bytes up to which a one-pass plan's last block posts the counters to the host
    /// beside its outlier counters (0: never; never more than a kept read-back holds); default
    /// whatever fits.
    pub posted_counts_max_bytes: Option<usize>,
    /// The most blocks of a `HistogramPlan` launch that counts samples directly (not the
    /// partition, the image or the general plans; a cluster launch rounds up to whole clusters,
    /// and a launch takes at least enough blocks that none counts 2^31 samples); default as many as are
    /// resident at once. Fewer blocks each count more samples: this is how a test drives 16-bit
    /// shared counters to wrap at a size a sanitizer can afford.
    pub hist_grid: Option<u32>,
}

impl Tuning {
    /// Counter bytes up to which a histogram plan keeps a second set of counters.
    pub fn spare_counters_max_bytes(&self) -> usize {
        self.spare_counters_max_bytes.unwrap_or(SPARE_COUNTERS_MAX_BYTES)
    }

    /// Counter bytes up to which a one-pass plan posts its counters with its outliers.
    pub fn posted_counts_max_bytes(&self) -> usize {
        self.posted_counts_max_bytes.unwrap_or(usize::MAX)
    }

    /// Keys a pass of global-l2 on a device of `l2_bytes` of L2 in counters of `counter_bytes`:
    /// the tuned `pass_keys`, else [`l2_slice`].
    pub fn l2_pass_keys(&self, l2_bytes: usize, counter_bytes: usize) -> usize {
        self.pass_keys.unwrap_or_else(|| l2_slice(l2_bytes, counter_bytes))
    }

    /// Slots of global-l2's hot-bin cache: the kernel's TALLY_HOT_SLOTS, a power of two.
    pub fn hot_slots(&self) -> usize {
        self.hot_slots.map(|v| v.next_power_of_two().clamp(64, 8192)).unwrap_or(4096)
    }

    /// These knobs with the partition's scatter shape set: threads per block, keys
    /// per thread, the scatter's blocks per multiprocessor, and ranks by `__match_any_sync`.
    pub fn with_partition_shape(self, threads: u32, items: u32, blocks_per_sm: u32, match_ranks: bool) -> Tuning {
        Tuning {
            partition_threads: Some(threads),
            partition_items: Some(items),
            partition_blocks_per_sm: Some(blocks_per_sm),
            partition_match: Some(match_ranks),
            ..self
        }
    }
}

crate::kernel_codes! {
    /// The histogram kernels' strategies (`TALLY_STRATEGY`); the 16-bit strategies are their
    /// 32-bit twins with `TALLY_NARROW`.
    pub enum KernelStrategy as "TALLY_STRATEGY" {
        /// Every sample one global atomic.
        GlobalAtomic,
        /// One private copy per block.
        BlockShared,
        /// One private copy per warp.
        WarpPrivate,
        /// Warp-aggregated shared atomics on one copy per block.
        WarpAggregated,
        /// One copy over a cluster's distributed shared memory.
        ClusterShared,
        /// Global atomics on an L2-sized range of keys per pass.
        GlobalL2,
    }
}

impl KernelStrategy {
    /// The kernel strategy that runs `s` (a resolved GPU strategy).
    pub fn of(s: Strategy) -> KernelStrategy {
        match s {
            Strategy::GlobalAtomic => KernelStrategy::GlobalAtomic,
            Strategy::BlockShared | Strategy::BlockShared16 => KernelStrategy::BlockShared,
            Strategy::WarpPrivate => KernelStrategy::WarpPrivate,
            Strategy::WarpAggregated => KernelStrategy::WarpAggregated,
            Strategy::ClusterShared | Strategy::ClusterShared16 => KernelStrategy::ClusterShared,
            Strategy::GlobalL2 => KernelStrategy::GlobalL2,
            Strategy::Auto | Strategy::ThreadPrivate | Strategy::Partition => {
                unreachable!("resolved before compiling, or not a kernel of histogram.cu")
            }
        }
    }
}

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

/// Counter bytes up to which a plan of one kernel keeps a second set of counters, zeroed by each
/// launch for the next, instead of two memsets before each kernel. A memset is a launch on the
/// stream of its own (the 2^20-sample 256-bin call spends a few microseconds on them); above
/// this size the kernel's counting dwarfs them, and a second set would cost device memory.
pub const SPARE_COUNTERS_MAX_BYTES: usize = 1 << 20;

/// Samples one block handles per tile.
pub fn tile_samples(dtype: DType, block_threads: u32) -> u64 {
    (block_threads * vecs_for(dtype)) as u64 * (16 / dtype.size()) as u64
}

/// Threads per block: for one private copy per block, about 64 bytes of it per thread. The
/// other strategies keep 256 (per-warp copies and per-thread counters only fit at sizes where
/// 256 is what this rule would give anyway).
pub fn block_threads_for(strategy: Strategy, private_bytes: usize) -> u32 {
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

/// Shared memory the kernel declares statically (one u64 per warp for the block reduction,
/// block-shared-16's counter of its hot key, and the flag of the last block to finish).
fn static_shared_bytes(block_threads: u32) -> usize {
    (block_threads as usize / 32) * 8 + 16
}

/// Samples the skew probe looks at.
pub const PROBE_SAMPLES: u32 = 4096;

/// One kernel specialisation: everything the defines encode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// The sample type.
    pub dtype: DType,
    /// The binning mode.
    pub binning: Binning,
    /// Interleaved channels.
    pub channels: u32,
    /// 64-bit global counters (from 2^32 samples on).
    pub wide_counters: bool,
    /// The (resolved) strategy.
    pub strategy: Strategy,
    /// Threads per block.
    pub block_threads: u32,
    /// Integer binning with as many bins as values in range: the bin is the offset.
    pub identity: bool,
    /// 32-bit integer binning where every value of the sample type lies in range.
    pub all_in_range: bool,
    /// block-shared-16 with a dominant key counted apart (skewed input).
    pub hot_key: bool,
    /// global-l2's hot-bin cache slots (0 for the other strategies).
    pub hot_slots: u32,
}

impl Variant {
    /// The defines that compile this specialisation.
    pub fn defines(&self) -> Vec<(&'static str, String)> {
        vec![
            ("TALLY_SAMPLE", self.dtype.cuda_type().to_string()),
            ("TALLY_BINNING", self.binning.cpp().to_string()),
            ("TALLY_CHANNELS", self.channels.to_string()),
            ("TALLY_COUNTER", if self.wide_counters { "unsigned long long" } else { "unsigned int" }.to_string()),
            ("TALLY_STRATEGY", KernelStrategy::of(self.strategy).cpp().to_string()),
            ("TALLY_NARROW", (self.strategy.narrow() as u32).to_string()),
            ("TALLY_HOT_KEY", (self.hot_key as u32).to_string()),
            ("TALLY_IDENTITY", (self.identity as u32).to_string()),
            ("TALLY_ALL_IN_RANGE", (self.all_in_range as u32).to_string()),
            ("TALLY_BLOCK_THREADS", self.block_threads.to_string()),
            ("TALLY_VECS", vecs_for(self.dtype).to_string()),
            ("TALLY_HOT_SLOTS", self.hot_slots.to_string()),
        ]
    }

    /// Every specialisation tally can ask NVRTC for on a device of compute capability `cc`
    /// (e.g. 90) with default tuning (channel counts: 1 and 4 stand for all).
    pub fn all(cc: u32) -> Vec<Variant> {
        let mut v = Vec::new();
        let hot_slots = Tuning::default().hot_slots() as u32;
        for dtype in DType::ALL {
            for &binning in super::axis::binnings_of(dtype) {
                for channels in [1, 4] {
                    for wide_counters in [false, true] {
                        for &strategy in &Strategy::GPU[1..] {
                            // The partition has kernels of its own (partition::variants).
                            if (strategy.needs_clusters() && cc < 90) || strategy == Strategy::Partition {
                                continue;
                            }
                            // The block sizes a plan can ask for (block_threads_for).
                            let sizes: &[u32] = match strategy {
                                Strategy::BlockShared | Strategy::WarpAggregated | Strategy::BlockShared16 => {
                                    &BLOCK_SIZES
                                }
                                Strategy::ClusterShared | Strategy::ClusterShared16 => &BLOCK_SIZES[2..],
                                _ => &BLOCK_SIZES[..1],
                            };
                            let identities = identity_options(binning);
                            let all_in = all_in_range_options(dtype, binning);
                            let hot: &[bool] =
                                if strategy == Strategy::BlockShared16 { &[false, true] } else { &[false] };
                            let slots = if strategy == Strategy::GlobalL2 { hot_slots } else { 0 };
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
                                                hot_slots: slots,
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

/// The `identity` values a variant of `binning` may take (integer binning only).
pub(crate) fn identity_options(binning: Binning) -> &'static [bool] {
    match binning {
        Binning::Integer | Binning::Integer32 => &[false, true],
        _ => &[false],
    }
}

/// The `all_in_range` values a variant may take (8- and 16-bit samples, 32-bit integer binning).
pub(crate) fn all_in_range_options(dtype: DType, binning: Binning) -> &'static [bool] {
    match (dtype, binning) {
        (DType::U8 | DType::U16, Binning::Integer32) => &[false, true],
        _ => &[false],
    }
}

/// What decides the dynamic shared memory of one block.
#[derive(Clone, Copy, Debug)]
pub struct SharedLayout {
    /// The strategy.
    pub strategy: Strategy,
    /// The binning mode (a table takes 1 KB).
    pub binning: Binning,
    /// Keys: bins times selected channels.
    pub width: usize,
    /// Selected channels.
    pub nslots: usize,
    /// Edges kept in shared memory (0: read from global memory).
    pub edges_in_shared: usize,
    /// Threads per block.
    pub threads: u32,
    /// Counters each block of a cluster holds.
    pub rank_counters: usize,
    /// global-l2's cache slots.
    pub hot_slots: usize,
}

impl SharedLayout {
    /// Dynamic shared memory of one block: `[edges][table][outliers][private counters]`. A block's
    /// private copy holds the bins, the below/above/NaN counts of each slot and one trash
    /// counter; a cluster block holds `rank_counters` bins of the pass.
    pub fn bytes(&self) -> usize {
        let pwidth = self.width + 3 * self.nslots + 1;
        let warps = self.threads as usize / 32;
        let edges = (self.edges_in_shared * 8).div_ceil(16) * 16;
        let table = if self.binning == Binning::Table8 { 256 * 4 } else { 0 };
        let outliers = MAX_CHANNELS as usize * 3 * 4;
        let privates = match self.strategy {
            Strategy::GlobalAtomic => 0,
            Strategy::GlobalL2 => self.hot_slots * 8,
            Strategy::WarpPrivate => warps * pwidth * 4,
            Strategy::BlockShared16 => pwidth.div_ceil(2) * 4,
            Strategy::ClusterShared => self.rank_counters * 4,
            Strategy::ClusterShared16 => self.rank_counters * 2,
            _ => pwidth * 4,
        };
        edges + table + outliers + privates
    }
}

/// How the cluster strategies split the keys: `cluster` blocks each holding `rank_counters`
/// counters (even), `slice` keys per pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterShape {
    /// Blocks per cluster.
    pub cluster: u32,
    /// Counters per block.
    pub rank_counters: usize,
    /// Keys per pass.
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
                ClusterShape { cluster: c, rank_counters: max_rank, slice: max_rank * c as usize }
            }
        })
    }
}

/// Keys per pass of the global-l2 strategy: half the L2 cache of counters, so that the other
/// half still streams the samples.
pub fn l2_slice(l2_bytes: usize, counter_bytes: usize) -> usize {
    (l2_bytes / 2 / counter_bytes).max(1 << 16)
}

/// What fits in the shared memory of a block, or of a cluster, on one device, for histograms
/// of one binning and channel count. Plans and the stated switch-over points both use it.
pub struct Capacity {
    binning: Binning,
    nslots: usize,
    optin: usize,
    clusters: bool,
    partition_keys: usize,
    tuning: Tuning,
}

impl Capacity {
    /// The capacity of `info`'s device for this binning and channel count.
    pub fn new(info: &DeviceInfo, binning: Binning, nslots: usize, tuning: &Tuning) -> Capacity {
        Capacity {
            binning,
            nslots,
            optin: info.smem_per_block_optin,
            clusters: info.has_clusters(),
            partition_keys: super::partition::max_keys_tuned(info, tuning),
            tuning: tuning.clone(),
        }
    }

    /// The shared-memory layout of strategy `s` for `width` keys.
    pub fn layout(&self, s: Strategy, width: usize, edges_in_shared: usize, rank_counters: usize) -> SharedLayout {
        SharedLayout {
            strategy: s,
            binning: self.binning,
            width,
            nslots: self.nslots,
            edges_in_shared,
            threads: block_threads_for(s, width * 4),
            rank_counters,
            hot_slots: self.tuning.hot_slots(),
        }
    }

    /// Dynamic shared memory one block of strategy `s` may use for `width` keys: threads per
    /// block follow the strategy and the size of one private copy, and the kernel's own static
    /// shared memory comes first.
    pub fn room(&self, s: Strategy, width: usize) -> usize {
        self.optin.saturating_sub(static_shared_bytes(block_threads_for(s, width * 4)))
    }

    /// Whether a block strategy's private copy of `width` keys (and `edges` edges) fits.
    pub fn fits(&self, s: Strategy, width: usize, edges: usize) -> bool {
        self.layout(s, width, edges, 0).bytes() <= self.room(s, width)
    }

    /// How a cluster strategy splits `width` keys, with clusters of at most `max_cluster` blocks.
    pub fn cluster_shape(&self, s: Strategy, width: usize, max_cluster: u32) -> Option<ClusterShape> {
        let fixed = self.layout(s, width, 0, 0).bytes();
        let counter_bytes = if s.narrow() { 2 } else { 4 };
        let sizes: Vec<u32> = CLUSTER_SIZES
            .into_iter()
            .filter(|&c| c <= max_cluster && self.tuning.cluster.is_none_or(|f| f == c))
            .collect();
        ClusterShape::new(width, counter_bytes, self.room(s, width).saturating_sub(fixed), &sizes)
    }

    /// Whether a cluster of at most 16 blocks holds all `width` keys in one pass (never
    /// without clusters).
    fn single_pass(&self, s: Strategy, width: usize) -> bool {
        self.clusters && self.cluster_shape(s, width, 16).is_some_and(|c| c.slice >= width)
    }

    /// What `auto` looks at, for `width` keys, a probed top-bin share and global-l2's keys a
    /// pass (`pass_keys`).
    pub fn auto_inputs(
        &self,
        width: usize,
        top_bin_fraction: f64,
        compute_capability: (i32, i32),
        l2_pass_keys: usize,
    ) -> AutoInputs {
        AutoInputs {
            block_shared_fits: self.fits(Strategy::BlockShared, width, 0),
            block_shared16_fits: self.fits(Strategy::BlockShared16, width, 0),
            partition_fits: width <= self.partition_keys,
            keys: width,
            top_bin_fraction,
            compute_capability,
            l2_pass_keys,
        }
    }

    /// The strategy that runs for `requested` on this device: a strategy that cannot run here
    /// degrades (per-warp copies to one copy per block, a block copy that does not fit to plain
    /// global atomics, clusters before sm_90 and a partition of more keys than its chunks cover
    /// to L2-sized passes of global atomics). `Auto` must
    /// have been resolved by `strategy::choose` first.
    pub fn degrade(&self, requested: Strategy, width: usize) -> Strategy {
        match requested {
            s if s.needs_clusters() && !self.clusters => Strategy::GlobalL2,
            Strategy::Partition if width > self.partition_keys => Strategy::GlobalL2,
            Strategy::WarpPrivate if !self.fits(Strategy::WarpPrivate, width, 0) => {
                if self.fits(Strategy::BlockShared, width, 0) {
                    Strategy::BlockShared
                } else {
                    Strategy::GlobalAtomic
                }
            }
            s @ (Strategy::BlockShared | Strategy::WarpAggregated | Strategy::BlockShared16)
                if !self.fits(s, width, 0) =>
            {
                Strategy::GlobalAtomic
            }
            s => s,
        }
    }

    /// Keys per pass of a pass strategy with `counter_bytes`-byte counters, or `width`.
    pub fn pass_keys(&self, info: &DeviceInfo, strategy: Strategy, width: usize, counter_bytes: usize) -> usize {
        let slice =
            if strategy == Strategy::GlobalL2 { self.tuning.l2_pass_keys(info.l2_bytes, counter_bytes) } else { width };
        slice.clamp(1, width.max(1))
    }

    /// Warp aggregation before each atomic (v9 measurements, H200): the cluster strategies
    /// always (Zipf, 1M bins: 6.3 against 8.6 ms without); global-l2, behind its hot-bin
    /// cache, only where one bin holds a large share (hot90, 1M bins: 0.72 against 1.15 ms;
    /// Zipf 2.04 against 1.75 ms; uniform about the same).
    pub fn aggregate(&self, strategy: Strategy, skewed: bool) -> bool {
        self.tuning.aggregate.unwrap_or(strategy.needs_clusters() || (strategy == Strategy::GlobalL2 && skewed))
    }
}

/// (first key, keys) of each pass over `width` keys, `slice` at a time.
pub fn passes(width: usize, slice: usize) -> Vec<(u32, u32)> {
    (0..width.max(1)).step_by(slice.max(1)).map(|lo| (lo as u32, slice.min(width - lo) as u32)).collect()
}

/// The most blocks a launch may take: the `resident` ones (a whole number of `cluster`s),
/// or fewer where the tuning caps them (`Tuning::hist_grid`, rounded up to whole clusters, at
/// least one). The launch's own floor for its counters' safety applies after this.
pub fn capped_blocks(resident: u64, cap: Option<u32>, cluster: u64) -> u64 {
    cap.map_or(resident, |g| resident.min(u64::from(g.max(1)).next_multiple_of(cluster.max(1))))
}

/// Blocks of a plain launch: enough to fill the device (`max_grid` resident), no more than
/// there are tiles, and enough that no block's 32-bit private counters can overflow.
pub fn grid(n: u64, tile: u64, max_grid: u64) -> u64 {
    n.div_ceil(tile).clamp(1, max_grid.max(1)).max(n.div_ceil(1 << 31))
}

/// The bin counts (one channel, integer samples) where strategies change on a device: where
/// `auto` moves on, and where the cluster strategies start a second pass.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub struct SwitchOver {
    /// Largest histogram in one block's shared memory, 32-bit counters: auto's block-shared.
    pub block_shared: usize,
    /// The same in 16-bit counters: auto's block-shared-16.
    pub block_shared16: usize,
    /// Largest single-pass histogram of cluster-shared-16 (16-block clusters; None before
    /// sm_90). `auto` does not use it.
    pub cluster_shared16: Option<usize>,
    /// The same with 32-bit counters.
    pub cluster_shared: Option<usize>,
    /// Keys per pass of global-l2 (32-bit counters).
    pub global_l2_pass: usize,
    /// Keys per chunk of the partition: one block's shared memory of 32-bit counters.
    pub partition_chunk: usize,
    /// The most keys the partition counts; `auto` partitions above `block_shared16` up to
    /// here and `strategy::PARTITION_AUTO_MAX_KEYS`, unless the data are concentrated in one bin
    /// and one pass of global-l2 (`global_l2_pass`) holds every key.
    pub partition: usize,
}

impl SwitchOver {
    /// The switch-over points of `info`'s device with default tuning.
    pub fn for_device(info: &DeviceInfo) -> SwitchOver {
        let cap = Capacity::new(info, Binning::Integer32, 1, &Tuning::default());
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
            partition_chunk: super::partition::chunk_keys(info),
            partition: super::partition::max_keys(info),
        }
    }
}

/// `auto`'s choice for `width` keys on `info`'s device with a probed top-bin share, counted in
/// `counter_bytes`-byte counters (which size global-l2's passes).
pub fn choose(
    cap: &Capacity,
    info: &DeviceInfo,
    width: usize,
    top_bin_fraction: f64,
    counter_bytes: usize,
) -> Strategy {
    let pass = cap.pass_keys(info, Strategy::GlobalL2, width, counter_bytes);
    strategy::choose(cap.auto_inputs(width, top_bin_fraction, info.compute_capability, pass))
}

#[cfg(test)]
pub(crate) mod tests;
