//! The partitioning histogram (`histogram_partition.cu`), for more bins than one block's shared
//! memory holds: the keys are split into chunks of as many bins as a block holds in 32-bit
//! shared counters; each tile of samples is counting-sorted by chunk in shared memory and
//! written to its own region of a scratch array as 16-bit keys within their chunks, each
//! chunk's segment of the tile in a chunk-major table; then each chunk is counted in shared
//! memory, its segments read from every tile. The input is read once, the keys written and read
//! once at two bytes. Its policy (chunk size, slices, scratch) is a pure function of the device,
//! the problem and `Tuning`; the plan launches it on a slice of the input at a time, each slice
//! fully counted before the next, so that its scratch stays within the workspace's bound.

use super::axis::{self, binnings_of, Binning};
use super::policy::{all_in_range_options, identity_options, Tuning, Variant};
use super::{Strategy, MAX_CHANNELS};
use crate::device::params::KernelParams;
use crate::device::registry::KernelFamily;
use crate::device::workspace::ScratchLayout;
use crate::device::{CudaDevice, DevPtr, DeviceInfo, DeviceViewMut, Kernel, LaunchShape, Stream};
use crate::error::{Error, Result};
use crate::sample::DType;

/// Threads per block of the scatter up to `FEW_CHUNKS` chunks, unless tuned.
pub const PARTITION_THREADS: u32 = 512;
/// Keys per thread and tile of the scatter, unless tuned: 8,192 per tile up to `FEW_CHUNKS`
/// chunks (16,384 past them where threads and blocks are untuned), a tile that the scatter
/// counting-sorts in shared memory before its global writes.
pub const PARTITION_ITEMS: u32 = 16;
/// Samples per tile up to `FEW_CHUNKS` chunks, unless tuned.
pub const PARTITION_TILE: usize = (PARTITION_THREADS * PARTITION_ITEMS) as usize;
/// Blocks of the scatter per multiprocessor up to `FEW_CHUNKS` chunks, unless tuned: its
/// register bound (`__launch_bounds__`), so that one block's barriers overlap another's work.
pub const PARTITION_BLOCKS_PER_SM: u32 = 2;
/// Chunks up to which the scatter keeps its default shape (`PARTITION_THREADS` threads at
/// `PARTITION_BLOCKS_PER_SM` blocks a multiprocessor); past them it takes
/// `MANY_CHUNKS_THREADS` at `MANY_CHUNKS_BLOCKS_PER_SM`. Up to these chunks warp 0 alone scans a
/// tile's chunk counts (the kernel's `TALLY_PARTITION_WARP_SCAN_CHUNKS`, this number); past
/// them the whole block does, and a tile of 16,384 keys pays that scan's barriers and per-chunk
/// work half as often a sample. Measured on an H100 (2^28 i32, docs/PERF.md v36, two rounds):
/// 1,024 x 16 at one block took 0.93 / 0.99 / 1.11 / 1.32 ms at 2M / 4M / 8M / 16M bins uniform
/// (64 to 512 chunks) where 512 x 16 at two took 0.91-0.92 / 1.00 / 1.19 / 1.49, and on Zipf
/// data 1.25 / 1.35 / 1.45 / 1.65 against 1.12 / 1.24 / 1.53 / 1.73.
pub const FEW_CHUNKS: usize = 128;
/// Threads per block of the scatter past `FEW_CHUNKS` chunks, unless tuned.
pub const MANY_CHUNKS_THREADS: u32 = 1024;
/// Blocks of the scatter per multiprocessor past `FEW_CHUNKS` chunks, unless tuned.
pub const MANY_CHUNKS_BLOCKS_PER_SM: u32 = 1;
/// Whether the scatter ranks a warp's keys of one chunk with one atomic after
/// `__match_any_sync`, unless tuned. Off: the shared atomic unit already combines a warp's adds to
/// one address, and at 32 chunks and more few lanes share one.
pub const PARTITION_MATCH: bool = false;

/// Share of the skew probe's samples in its most frequent bin from which the scatter ranks keys
/// with `__match_any_sync` rather than one shared atomic per key. Measured on an H200 (2^28 i32,
/// 262,144 to 16M bins, docs/PERF.md v12): uniform keys (top share near 0) rank 1.2-1.8x faster
/// with plain atomics, Zipf(1.1) keys (top share about 0.1) 1.15-1.35x faster with matching.
pub const PARTITION_MATCH_MIN_TOP_FRACTION: f64 = 0.02;

/// Whether the scatter should rank keys by warp matching, given the skew probe's top-bin share
/// (where the caller has not fixed the ranking).
pub fn match_ranks_preferred(top_bin_fraction: f64) -> bool {
    top_bin_fraction >= PARTITION_MATCH_MIN_TOP_FRACTION
}
/// Threads of the one block of the offsets kernel (`OFFSETS_THREADS` of histogram_partition.cu).
const OFFSETS_THREADS: u32 = 1024;
/// The most samples per tile (32 KiB of staged 16-bit keys; a tile's positions are 16-bit).
const MAX_TILE: u32 = 1 << 14;
/// Threads per block of the per-chunk histogram (one block per multiprocessor: its counters
/// take most of the shared memory).
pub const PARTITION_BINS_THREADS: u32 = 1024;
/// The most chunks: the scatter keeps four counters per chunk in shared memory.
pub const MAX_CHUNKS: usize = 4096;
/// The most keys per chunk (2^15: 128 KiB of 32-bit counters, what an sm_80 or sm_90 block
/// holds); keys within a chunk travel as 16 bits.
const MAX_CHUNK_SHIFT: u32 = 15;
/// The most samples in one slice: positions in the partitioned array are 32-bit, and no
/// shared counter of the per-chunk histogram can wrap.
pub const MAX_SLICE: usize = 1 << 31;

/// The per-chunk histogram splits its work between blocks by each chunk's keys plus this many
/// keys for each of its segments (one a tile), with at most `WEIGHT_CHUNKS` chunks. Measured on
/// an H100 (2^28 i32, docs/PERF.md v24 and v25): 64 for 1M bins (32 chunks), where 32 is 7%
/// slower on Zipf data.
pub const SEGMENT_WEIGHT_FEW_CHUNKS: u32 = 64;
/// The weight past `WEIGHT_CHUNKS` chunks: at 16M bins (512 chunks), Zipf data, 24 took
/// 1.72 ms where 64 took 1.87, 32 1.78-1.80 and 16 1.83-1.84 (v25, calls 7 and 8); at 8M bins
/// (256 chunks) 24 and 32 alike, 12% faster than 64; uniform data the same with every weight.
pub const SEGMENT_WEIGHT_MANY_CHUNKS: u32 = 24;
/// The most chunks that take `SEGMENT_WEIGHT_FEW_CHUNKS`: between the measured 32 and 512.
pub const WEIGHT_CHUNKS: usize = 128;

/// A segment's weight for `chunks` chunks (see `SEGMENT_WEIGHT_FEW_CHUNKS`).
pub fn segment_weight(chunks: usize) -> u32 {
    if chunks <= WEIGHT_CHUNKS {
        SEGMENT_WEIGHT_FEW_CHUNKS
    } else {
        SEGMENT_WEIGHT_MANY_CHUNKS
    }
}

/// Shared memory the scatter declares statically.
const STATIC_SHARED: usize = 1024;
/// Shared memory the per-chunk histogram declares statically beside its counters: each warp's
/// unit of 32 segments (four words a segment), and a flag.
const BINS_STATIC_SHARED: usize = (PARTITION_BINS_THREADS as usize / 32) * 32 * 16 + 1024;
/// The 8-bit table (1 KiB) and the outlier counters before the chunk counters.
const FIXED_SHARED: usize = 256 * 4 + MAX_CHANNELS as usize * 3 * 4;

/// log2 of the keys per chunk on `info`'s device: the most 32-bit counters one block of the
/// per-chunk histogram holds.
pub fn chunk_shift(info: &DeviceInfo) -> u32 {
    let counters = info.smem_per_block_optin.saturating_sub(BINS_STATIC_SHARED) / 4;
    counters.max(2).ilog2().min(MAX_CHUNK_SHIFT)
}

/// Keys per chunk on `info`'s device.
pub fn chunk_keys(info: &DeviceInfo) -> usize {
    1 << chunk_shift(info)
}

/// log2 of the keys per chunk that `tuning` asks for on `info`'s device: its
/// `partition_chunk_shift`, at least 8 and at most the device's, else the device's.
pub fn tuned_chunk_shift(info: &DeviceInfo, tuning: &Tuning) -> u32 {
    let device = chunk_shift(info);
    tuning.partition_chunk_shift.map_or(device, |s| s.max(8).min(device))
}

/// Chunks the scatter's shared memory holds beside a staged tile of `tile` 16-bit keys (four
/// counters per chunk: the block's totals, two buffers of tile counts, tile starts).
fn max_chunks(info: &DeviceInfo, tile: usize) -> usize {
    let room = info.smem_per_block_optin.saturating_sub(STATIC_SHARED + FIXED_SHARED + tile * 2);
    (room / 16).min(MAX_CHUNKS)
}

/// The most keys (bins times selected channels) the partition counts on `info`'s device with the
/// default tile and chunks.
pub fn max_keys(info: &DeviceInfo) -> usize {
    max_keys_with(info, chunk_shift(info), PARTITION_TILE)
}

/// The most keys the partition counts on `info`'s device in chunks of 2^`chunk_shift` keys beside
/// tiles of `tile` samples.
pub fn max_keys_with(info: &DeviceInfo, chunk_shift: u32, tile: usize) -> usize {
    max_chunks(info, tile) << chunk_shift
}

/// The most keys the partition counts on `info`'s device as `tuning` shapes it (its chunks, and
/// the largest tile of the shape it falls back to for any sample type, [`scatter_shape`]): what
/// `auto` may send to it.
pub fn max_keys_tuned(info: &DeviceInfo, tuning: &Tuning) -> usize {
    let tile = DType::ALL.iter().map(|&d| PartitionShape::new(tuning, d, 0).tile()).max().unwrap_or(PARTITION_TILE);
    max_keys_with(info, tuned_chunk_shift(info, tuning), tile)
}

/// Chunks of 2^`chunk_shift` keys over `width` keys (at least one).
fn chunks_over(width: usize, chunk_shift: u32) -> usize {
    width.max(1).div_ceil(1 << chunk_shift)
}

/// The scatter's shape for `width` keys of samples of `dtype` on `info`'s device as `tuning`
/// asks: [`PartitionShape::new`] for their chunks, or its shape for few chunks where the
/// device's shared memory does not hold that many chunks beside the larger tile.
pub fn scatter_shape(info: &DeviceInfo, tuning: &Tuning, dtype: DType, width: usize) -> PartitionShape {
    let chunks = chunks_over(width, tuned_chunk_shift(info, tuning));
    let shape = PartitionShape::new(tuning, dtype, chunks);
    if chunks > max_chunks(info, shape.tile()) {
        PartitionShape::new(tuning, dtype, 0)
    } else {
        shape
    }
}

/// The shape of the scatter: a pure function of `Tuning`, the sample type and the chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionShape {
    /// Threads per block (a power of two in 128..=1024).
    pub threads: u32,
    /// Keys per thread and tile (a power of two, whole 16-byte loads, at most 32).
    pub items: u32,
    /// The scatter's blocks per multiprocessor: its `__launch_bounds__` minimum and its grid,
    /// where shared memory allows.
    pub blocks_per_sm: u32,
    /// Whether the scatter ranks keys through `__match_any_sync`.
    pub match_ranks: bool,
}

impl PartitionShape {
    /// The shape `tuning` asks for with samples of `dtype` over `chunks` chunks, rounded to what
    /// the kernels take: items at least one 16-byte load, a tile of at most 16,384 keys, at most
    /// 2,048 threads per multiprocessor. Past `FEW_CHUNKS` the threads and blocks a
    /// multiprocessor are `MANY_CHUNKS_*` where neither is tuned (one tuned alone keeps the
    /// other's few-chunk default, so that a tuned thread count or block count means the same
    /// at any chunks; tuned items alone take the many-chunk threads past `FEW_CHUNKS`).
    pub fn new(tuning: &Tuning, dtype: DType, chunks: usize) -> PartitionShape {
        let untuned = tuning.partition_threads.is_none() && tuning.partition_blocks_per_sm.is_none();
        let (threads, blocks_per_sm) = if untuned && chunks > FEW_CHUNKS {
            (MANY_CHUNKS_THREADS, MANY_CHUNKS_BLOCKS_PER_SM)
        } else {
            (PARTITION_THREADS, PARTITION_BLOCKS_PER_SM)
        };
        let threads = tuning.partition_threads.unwrap_or(threads).clamp(128, 1024).next_power_of_two();
        let vec_items = (16 / dtype.size()) as u32;
        let items = tuning.partition_items.unwrap_or(PARTITION_ITEMS).clamp(1, 32).next_power_of_two();
        let items = items.min(MAX_TILE / threads).max(vec_items);
        let blocks_per_sm = tuning.partition_blocks_per_sm.unwrap_or(blocks_per_sm).clamp(1, 2048 / threads);
        let match_ranks = tuning.partition_match.unwrap_or(PARTITION_MATCH);
        PartitionShape { threads, items, blocks_per_sm, match_ranks }
    }

    /// Samples per tile.
    pub fn tile(&self) -> usize {
        (self.threads * self.items) as usize
    }
}

/// How one histogram is partitioned: chunks, slices of the input, and the scratch they need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionLayout {
    /// log2(keys per chunk).
    pub chunk_shift: u32,
    /// Chunks over the keys.
    pub chunks: usize,
    /// Samples per slice (a whole number of tiles, except a single slice of all samples).
    pub slice: usize,
    /// Slices over the input.
    pub slices: usize,
    /// Bytes of workspace scratch: the chunk counters, and one slice's table of segments (a
    /// word per tile and chunk) and 16-bit keys.
    pub scratch_bytes: usize,
    /// Byte offsets of the chunk totals, chunk starts, chunk queues, segments and keys in the
    /// scratch.
    offsets: [usize; 5],
}

impl PartitionLayout {
    /// The layout for `width` keys and `n` samples in tiles of `tile` on `info`'s device with at
    /// most `bound` bytes of scratch; an error that says which limit stops it where the keys are
    /// too many for the partition (or for the chunks beside a tile of `tile`), or a slice would
    /// hold less than one tile (the bound or the tuned slice).
    pub fn new(
        info: &DeviceInfo,
        width: usize,
        n: usize,
        bound: usize,
        tuning: &Tuning,
        tile: usize,
    ) -> Result<PartitionLayout> {
        let chunk_shift = tuned_chunk_shift(info, tuning);
        let chunks = chunks_over(width, chunk_shift);
        let most = max_keys_with(info, chunk_shift, PARTITION_TILE);
        if width > most {
            let smaller =
                if chunk_shift < self::chunk_shift(info) { " (chunks tuned smaller than the device's)" } else { "" };
            return Err(Error::invalid(format!(
                "the partition strategy counts at most {most} keys (bins times channels) on this device{smaller}, not {width}"
            )));
        }
        if chunks > max_chunks(info, tile) {
            return Err(Error::invalid(format!(
                "the partition strategy with tiles of {tile} samples holds at most {} chunks of {} keys in shared \
                 memory, and {width} keys need {chunks}: use a smaller partition tile",
                max_chunks(info, tile),
                1usize << chunk_shift
            )));
        }
        // A slice of `tiles` tiles: a segment per chunk and a region of keys per tile.
        let layout = |tiles: usize| {
            let mut s = ScratchLayout::default();
            let offsets = [
                s.push::<u32>(chunks),
                s.push::<u32>(chunks + 1),
                s.push::<u32>(chunks),
                s.push::<u32>(tiles * chunks),
                s.push::<u16>(tiles * tile),
            ];
            (s.bytes(), offsets)
        };
        let fixed = layout(0).0 + 256;
        let per_tile = 2 * tile + 4 * chunks;
        let tuned = tuning.partition_slice.unwrap_or(MAX_SLICE).min(MAX_SLICE);
        let most = tuned.min(bound.saturating_sub(fixed) / per_tile * tile);
        let slice = if n <= most { n } else { most - most % tile };
        if slice == 0 && n > 0 {
            return Err(if tuned < tile {
                Error::invalid(format!("a partition slice of {tuned} samples holds less than one tile of {tile}"))
            } else {
                Error::invalid(format!(
                    "the partition strategy needs at least {} bytes of scratch (one tile of {tile} samples and \
                     {chunks} chunks), more than the {bound} it may take (the workspace limit, at most an eighth of \
                     the free device memory)",
                    fixed + per_tile
                ))
            });
        }
        let slices = if n == 0 { 0 } else { n.div_ceil(slice) };
        let (scratch_bytes, offsets) = layout(slice.div_ceil(tile));
        Ok(PartitionLayout { chunk_shift, chunks, slice, slices, scratch_bytes, offsets })
    }
}

crate::kernel_params! {
    /// What the three partition kernels read.
    pub(crate) struct PartitionParams as "PartitionParams" {
        /// The slice's first sample (`const Sample*`); pairs: its x, or its pair if interleaved.
        samples: DevPtr<u8>,
        /// Pairs in two arrays: the slice's first y.
        samples_y: DevPtr<u8>,
        n: u64,
        first_index: u64,
        /// Global counters, u32 or u64 by the variant.
        counts: DevPtr<u8>,
        outliers: DevPtr<u64>,
        chunk_total: DevPtr<u32>,
        chunk_start: DevPtr<u32>,
        chunk_queue: DevPtr<u32>,
        segments: DevPtr<u32>,
        keys: DevPtr<u16>,
        /// Pairs: the x axis.
        axis: axis::AxisParams,
        /// Pairs: the y axis.
        axis_y: axis::AxisParams,
        nslots: u32,
        width: u32,
        chunks: u32,
        chunk_shift: u32,
        /// Pairs: bins of the y axis.
        bins_y: u32,
        /// Pairs: 1 where interleaved in `samples`.
        interleaved: u32,
        /// The per-chunk histogram's cost of a segment beside its keys, in keys
        /// ([`segment_weight`]).
        segment_weight: u32,
        slot: [i32; MAX_CHANNELS as usize],
    }
}

/// What the scatter bins into keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionKeys {
    /// Samples, binned as a histogram variant says (its strategy is `Partition`).
    Samples(Variant),
    /// (x, y) pairs of `dtype` coordinates (f32 or f64), each axis by the f64 rule or edges,
    /// counted in 64-bit counters (a 2-D histogram's).
    Pairs {
        /// The coordinates' type.
        dtype: DType,
        /// The x axis's binning.
        binning_x: Binning,
        /// The y axis's binning.
        binning_y: Binning,
    },
}

impl PartitionKeys {
    /// The type of the samples (coordinates).
    pub fn dtype(&self) -> DType {
        match self {
            PartitionKeys::Samples(v) => v.dtype,
            PartitionKeys::Pairs { dtype, .. } => *dtype,
        }
    }

    /// Shared memory the scatter's binning takes before its counters (the 8-bit table).
    fn table_bytes(&self) -> usize {
        match self {
            PartitionKeys::Samples(v) if v.binning == Binning::Table8 => 256 * 4,
            _ => 0,
        }
    }
}

/// The defines of the partition kernels for what they bin and a launch shape.
pub(crate) fn defines(keys: &PartitionKeys, shape: &PartitionShape) -> Vec<(&'static str, String)> {
    let mut d = match keys {
        PartitionKeys::Samples(v) => vec![
            ("TALLY_SAMPLE", v.dtype.cuda_type().to_string()),
            ("TALLY_BINNING", v.binning.cpp().to_string()),
            ("TALLY_CHANNELS", v.channels.to_string()),
            ("TALLY_COUNTER", if v.wide_counters { "unsigned long long" } else { "unsigned int" }.to_string()),
            ("TALLY_IDENTITY", (v.identity as u32).to_string()),
            ("TALLY_ALL_IN_RANGE", (v.all_in_range as u32).to_string()),
        ],
        PartitionKeys::Pairs { dtype, binning_x, binning_y } => vec![
            ("TALLY_SAMPLE", dtype.cuda_type().to_string()),
            ("TALLY_DIMS", "2".to_string()),
            ("TALLY_BINNING_X", binning_x.cpp().to_string()),
            ("TALLY_BINNING_Y", binning_y.cpp().to_string()),
            ("TALLY_COUNTER", "unsigned long long".to_string()),
        ],
    };
    d.extend([
        ("TALLY_BLOCK_THREADS", shape.threads.to_string()),
        ("TALLY_ITEMS", shape.items.to_string()),
        ("TALLY_MIN_BLOCKS", shape.blocks_per_sm.to_string()),
        ("TALLY_MATCH_RANKS", (shape.match_ranks as u32).to_string()),
        ("TALLY_BINS_THREADS", PARTITION_BINS_THREADS.to_string()),
        ("TALLY_PARTITION_WARP_SCAN_CHUNKS", FEW_CHUNKS.to_string()),
    ]);
    d
}

/// Everything the partition bins that a plan can ask for: every 1-D variant (channel counts 1
/// and 4 stand for all) and the pairs of 2-D histograms, each registered in its default shape;
/// tuned shapes compile when a plan asks for them.
pub fn variants() -> Vec<PartitionKeys> {
    let mut out: Vec<PartitionKeys> = sample_variants().into_iter().map(PartitionKeys::Samples).collect();
    for dtype in super::cuda_general::GENERAL_2D_DTYPES {
        for binning_x in [Binning::Float, Binning::Edges] {
            for binning_y in [Binning::Float, Binning::Edges] {
                out.push(PartitionKeys::Pairs { dtype, binning_x, binning_y });
            }
        }
    }
    out
}

/// Every 1-D partition variant (channel counts 1 and 4 stand for all).
fn sample_variants() -> Vec<Variant> {
    let mut out = Vec::new();
    for dtype in DType::ALL {
        for &binning in binnings_of(dtype) {
            for channels in [1, 4] {
                for wide_counters in [false, true] {
                    for &identity in identity_options(binning) {
                        for &all_in_range in all_in_range_options(dtype, binning) {
                            out.push(Variant {
                                dtype,
                                binning,
                                channels,
                                wide_counters,
                                strategy: Strategy::Partition,
                                block_threads: PARTITION_THREADS,
                                identity,
                                all_in_range,
                                hot_key: false,
                                hot_slots: 0,
                            });
                        }
                    }
                }
            }
        }
    }
    out
}

/// `histogram_partition.cu`: the partitioning histogram's three kernels.
pub(crate) static FAMILY: KernelFamily = KernelFamily {
    name: "histogram_partition.cu",
    source: include_str!("../kernels/histogram_partition.cu"),
    params: || vec![axis::AxisParams::layout(), PartitionParams::layout()],
    // The default shapes of few and many chunks with either ranking: `auto` picks the ranking
    // from the data.
    variants: |_| {
        let ranking = |m: bool| Tuning { partition_match: Some(m), ..Tuning::default() };
        let mut out = Vec::new();
        for t in [ranking(false), ranking(true)] {
            for chunks in [FEW_CHUNKS, FEW_CHUNKS + 1] {
                out.extend(variants().into_iter().map(|k| defines(&k, &PartitionShape::new(&t, k.dtype(), chunks))));
            }
        }
        out
    },
};

/// The scratch bound: the workspace's limit, and at most an eighth of the free device memory.
fn scratch_bound(stream: &Stream) -> Result<usize> {
    let free = stream.free_memory()?;
    // What the workspace holds already counts as free for this call.
    Ok(stream.workspace_limit().min((free + stream.workspace_bytes()) / 8))
}

/// Where the samples a launch counts are: 1-D samples, or pairs in two arrays, or interleaved.
#[derive(Clone, Copy)]
pub(crate) struct PartitionSource {
    /// The samples, the x coordinates, or the interleaved pairs.
    pub samples: DevPtr<u8>,
    /// The y coordinates of pairs in two arrays; null otherwise.
    pub samples_y: DevPtr<u8>,
    /// Pairs interleaved in `samples`.
    pub interleaved: bool,
}

impl PartitionSource {
    /// 1-D samples.
    pub fn samples(samples: DevPtr<u8>) -> Self {
        PartitionSource { samples, samples_y: DevPtr::default(), interleaved: false }
    }
}

/// The partition's launches for one histogram, with their layout.
pub(crate) struct PartitionPlan {
    offsets: Kernel<PartitionParams>,
    scatter: Kernel<PartitionParams>,
    bins: Kernel<PartitionParams>,
    scatter_shape: LaunchShape,
    bins_shape: LaunchShape,
    /// Everything but the samples and the scratch.
    params: PartitionParams,
    layout: PartitionLayout,
}

impl PartitionPlan {
    /// Loads the kernels that bin `keys` for `n` samples (pairs); `params` holds the counters,
    /// the axes, the channel slots and whether pairs are interleaved. An error that says why
    /// where the partition cannot take them ([`PartitionLayout::new`]).
    pub(crate) fn new(
        dev: &CudaDevice,
        keys: &PartitionKeys,
        n: usize,
        params: PartitionParams,
        tuning: &Tuning,
    ) -> Result<PartitionPlan> {
        let info = dev.info();
        let stream = dev.stream();
        let shape = scatter_shape(info, tuning, keys.dtype(), params.width as usize);
        let tile = shape.tile();
        let bound = scratch_bound(stream)?;
        let layout = PartitionLayout::new(info, params.width as usize, n, bound, tuning, tile)?;
        let table = keys.table_bytes();
        let scatter_smem = table + MAX_CHANNELS as usize * 3 * 4 + 4 * layout.chunks * 4 + tile * 2;
        let bins_smem = 4 << layout.chunk_shift;
        let d = defines(keys, &shape);
        let offsets = dev.kernel::<PartitionParams>(&FAMILY, &d, "tally_partition_offsets", 0)?;
        // The shared-memory limit is an attribute of the function, which every plan of this
        // variant shares: raise it to what the most chunks take, never lower it below another
        // plan's launch.
        let scatter_most = table + MAX_CHANNELS as usize * 3 * 4 + 4 * max_chunks(info, tile) * 4 + tile * 2;
        let scatter = dev.kernel::<PartitionParams>(&FAMILY, &d, "tally_partition_scatter", scatter_most)?;
        let bins = dev.kernel::<PartitionParams>(&FAMILY, &d, "tally_partition_bins", bins_smem)?;
        let tiles = layout.slice.div_ceil(tile).max(1) as u64;
        let sms = info.multiprocessors as u64;
        let grid = |k: &Kernel<PartitionParams>, threads: u32, smem: usize, per_sm: u32, most: u64| -> Result<u32> {
            Ok((sms * k.blocks_per_sm(threads, smem)?.min(per_sm) as u64).min(most).max(1) as u32)
        };
        let t = shape.threads;
        // The scatter's blocks per multiprocessor as tuned, where its shared memory allows.
        let scatter_grid = grid(&scatter, t, scatter_smem, shape.blocks_per_sm, tiles)?;
        let scatter_shape = LaunchShape::new(scatter_grid, t, scatter_smem);
        let bins_shape = LaunchShape::new(
            grid(&bins, PARTITION_BINS_THREADS, bins_smem, u32::MAX, u64::MAX)?,
            PARTITION_BINS_THREADS,
            bins_smem,
        );
        let params = PartitionParams {
            chunks: layout.chunks as u32,
            chunk_shift: layout.chunk_shift,
            segment_weight: segment_weight(layout.chunks),
            ..params
        };
        Ok(PartitionPlan { offsets, scatter, bins, scatter_shape, bins_shape, params, layout })
    }

    /// The layout: chunks, slices, scratch.
    pub(crate) fn layout(&self) -> &PartitionLayout {
        &self.layout
    }

    /// Queues the count of `n` samples (pairs) of `size` bytes (a coordinate's) from `source` on
    /// `stream`, one slice after the other (the counters must be zero).
    pub(crate) fn launch(&self, stream: &Stream, source: PartitionSource, n: usize, size: usize) -> Result<()> {
        let PartitionSource { samples, samples_y, interleaved } = source;
        let l = &self.layout;
        let mut workspace = stream.workspace();
        let mut all = workspace.reserve(stream, l.scratch_bytes, "partition scratch")?;
        let cu = stream.cuda_stream().clone();
        let base = DeviceViewMut::from(all.inner_mut().slice_mut(..l.scratch_bytes)).ptr_mut(&cu);
        // The chunk totals start at zero; the offsets launch zeroes them again for the next slice.
        let mut totals = DeviceViewMut::from(all.inner_mut().slice_mut(l.offsets[0]..l.offsets[0] + 4 * l.chunks));
        stream.memset_zeros(&mut totals)?;
        let at = |k: usize| base.offset(l.offsets[k] as u64);
        let mut p = PartitionParams {
            chunk_total: at(0).cast::<u32>(),
            chunk_start: at(1).cast::<u32>(),
            chunk_queue: at(2).cast::<u32>(),
            segments: at(3).cast::<u32>(),
            keys: at(4).cast::<u16>(),
            interleaved: interleaved as u32,
            ..self.params
        };
        for first in (0..n).step_by(l.slice.max(1)) {
            // Interleaved pairs: two coordinates per pair before the slice.
            let per = if interleaved { 2 * size } else { size };
            p.samples = samples.offset((first * per) as u64);
            if samples_y.address() != 0 {
                p.samples_y = samples_y.offset((first * size) as u64);
            }
            p.n = l.slice.min(n - first) as u64;
            p.first_index = first as u64;
            stream.launch(&self.scatter, self.scatter_shape, &p)?;
            stream.launch(&self.offsets, LaunchShape::new(1, OFFSETS_THREADS, 0), &p)?;
            stream.launch(&self.bins, self.bins_shape, &p)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::policy::tests::h200;

    #[test]
    fn chunks_follow_shared_memory() {
        let info = h200();
        assert_eq!(chunk_shift(&info), 15);
        assert_eq!(max_keys(&info), MAX_CHUNKS << 15);
        let small = DeviceInfo { smem_per_block_optin: 48 << 10, ..h200() };
        assert_eq!(chunk_shift(&small), 12);
        assert!(max_keys(&small) < MAX_CHUNKS << 13);
    }

    #[test]
    fn segment_weights_follow_the_chunks() {
        assert_eq!(segment_weight(32), SEGMENT_WEIGHT_FEW_CHUNKS);
        assert_eq!(segment_weight(WEIGHT_CHUNKS), SEGMENT_WEIGHT_FEW_CHUNKS);
        assert_eq!(segment_weight(WEIGHT_CHUNKS + 1), SEGMENT_WEIGHT_MANY_CHUNKS);
        assert_eq!(segment_weight(512), SEGMENT_WEIGHT_MANY_CHUNKS);
    }

    #[test]
    fn ranking_follows_the_skew_probe() {
        assert!(!match_ranks_preferred(0.0));
        assert!(!match_ranks_preferred(PARTITION_MATCH_MIN_TOP_FRACTION - 1e-9));
        assert!(match_ranks_preferred(PARTITION_MATCH_MIN_TOP_FRACTION));
        assert!(match_ranks_preferred(0.9));
    }

    #[test]
    fn shapes_round_to_what_the_kernels_take() {
        let default = PartitionShape::new(&Tuning::default(), DType::I32, FEW_CHUNKS);
        assert_eq!(default.tile(), PARTITION_TILE);
        assert_eq!((default.blocks_per_sm, default.match_ranks), (PARTITION_BLOCKS_PER_SM, PARTITION_MATCH));
        // Past FEW_CHUNKS, larger blocks, one a multiprocessor.
        let many = PartitionShape::new(&Tuning::default(), DType::I32, FEW_CHUNKS + 1);
        assert_eq!((many.threads, many.items, many.blocks_per_sm), (MANY_CHUNKS_THREADS, PARTITION_ITEMS, 1));
        assert_eq!(PartitionShape::new(&Tuning::default(), DType::U8, 512).tile(), MAX_TILE as usize);
        let shape = |threads, items, blocks| {
            let t = Tuning::default().with_partition_shape(threads, items, blocks, true);
            move |dtype| {
                let s = PartitionShape::new(&t, dtype, 0);
                assert_eq!(s, PartitionShape::new(&t, dtype, 4096), "a tuned shape holds for any chunks");
                (s.threads, s.items, s.blocks_per_sm, s.match_ranks)
            }
        };
        // One of threads and blocks tuned: the other keeps its few-chunk default at any chunks.
        for (threads, blocks) in [(Some(256), None), (None, Some(3))] {
            let t = Tuning { partition_threads: threads, partition_blocks_per_sm: blocks, ..Tuning::default() };
            let (few, many) = (PartitionShape::new(&t, DType::I32, 0), PartitionShape::new(&t, DType::I32, 4096));
            assert_eq!(few, many);
            assert_eq!(few.threads, threads.unwrap_or(PARTITION_THREADS));
            assert_eq!(few.blocks_per_sm, blocks.unwrap_or(PARTITION_BLOCKS_PER_SM));
        }
        // Items alone tuned: the many-chunk threads and blocks still apply.
        let items = Tuning { partition_items: Some(8), ..Tuning::default() };
        assert_eq!(PartitionShape::new(&items, DType::I32, 4096).threads, MANY_CHUNKS_THREADS);
        assert_eq!(shape(256, 8, 3)(DType::I32), (256, 8, 3, true));
        assert_eq!(shape(300, 5, 0)(DType::I32), (512, 8, 1, true));
        assert_eq!(shape(0, 0, 99)(DType::I64), (128, 2, 16, true));
        // Whole 16-byte loads of narrow samples; at most 16,384 keys per tile and 2,048 threads.
        assert_eq!(shape(256, 4, 2)(DType::U8), (256, 16, 2, true));
        assert_eq!(shape(4096, 32, 4)(DType::I32), (1024, 16, 2, true));
        // A larger tile leaves less shared memory for chunks.
        assert!(max_chunks(&h200(), 1 << 14) <= max_chunks(&h200(), PARTITION_TILE));
    }

    #[test]
    fn the_scatter_shape_follows_the_chunks_where_shared_memory_holds_them() {
        let info = h200();
        let t = Tuning::default();
        let keys = chunk_keys(&info);
        let few = PartitionShape::new(&t, DType::I32, 0);
        let many = PartitionShape::new(&t, DType::I32, FEW_CHUNKS + 1);
        assert_ne!(few, many);
        assert_eq!(scatter_shape(&info, &t, DType::I32, 1 << 20), few);
        assert_eq!(scatter_shape(&info, &t, DType::I32, FEW_CHUNKS * keys), few);
        assert_eq!(scatter_shape(&info, &t, DType::I32, FEW_CHUNKS * keys + 1), many);
        assert_eq!(scatter_shape(&info, &t, DType::I32, 1 << 24), many);
        // Smaller tuned chunks: more of them for the same keys.
        let chunked = Tuning { partition_chunk_shift: Some(12), ..Tuning::default() };
        assert_eq!(scatter_shape(&info, &chunked, DType::I32, 1 << 20), PartitionShape::new(&chunked, DType::I32, 256));
        // A device whose shared memory holds fewer chunks beside the larger tile than beside
        // the default one keeps the default shape there, so that the keys still fit.
        let small = DeviceInfo { smem_per_block_optin: 64 << 10, ..h200() };
        let (k, between) = (chunk_keys(&small), max_chunks(&small, many.tile()) + 1);
        assert!(FEW_CHUNKS < between && between <= max_chunks(&small, few.tile()));
        assert_eq!(scatter_shape(&small, &t, DType::I32, between * k), few);
        assert_eq!(scatter_shape(&small, &t, DType::I32, (between - 1) * k), many);
        assert!(between * k <= max_keys_tuned(&small, &t));
    }

    #[test]
    fn few_chunks_is_the_kernels_warp_scan_bound() {
        let shape = PartitionShape::new(&Tuning::default(), DType::I32, 0);
        let keys = PartitionKeys::Pairs { dtype: DType::F32, binning_x: Binning::Float, binning_y: Binning::Float };
        let define = ("TALLY_PARTITION_WARP_SCAN_CHUNKS", FEW_CHUNKS.to_string());
        assert!(defines(&keys, &shape).contains(&define), "histogram_partition.cu takes {define:?}");
    }

    #[test]
    fn slices_stay_within_the_bound() {
        let info = h200();
        let t = Tuning::default();
        let one = PartitionLayout::new(&info, 1 << 20, 1000, 1 << 30, &t, PARTITION_TILE).unwrap();
        assert_eq!((one.chunks, one.slice, one.slices), (32, 1000, 1));
        // 16M keys over 2^28 samples with 256 MiB of scratch: slices of whole tiles.
        let l = PartitionLayout::new(&info, 1 << 24, 1 << 28, 256 << 20, &t, PARTITION_TILE).unwrap();
        assert_eq!(l.chunks, 512);
        assert!(l.scratch_bytes <= 256 << 20, "{l:?}");
        assert_eq!(l.slice % PARTITION_TILE, 0);
        assert_eq!(l.slices, (1usize << 28).div_ceil(l.slice));
        // A tuned slice forces several slices at small n.
        let t = Tuning { partition_slice: Some(3 * PARTITION_TILE + 5), ..Tuning::default() };
        let l = PartitionLayout::new(&info, 100_000, 10 * PARTITION_TILE, 1 << 30, &t, PARTITION_TILE).unwrap();
        assert_eq!((l.slice, l.slices), (3 * PARTITION_TILE, 4));
        assert_eq!(PartitionLayout::new(&info, 100_000, 0, 1 << 30, &t, PARTITION_TILE).unwrap().slices, 0);
        // Too many keys, too many chunks beside a large tile, not one tile of scratch, a tuned
        // slice below one tile: each refused with its own reason.
        let refused = |width: usize, n: usize, bound: usize, t: &Tuning, tile: usize| {
            PartitionLayout::new(&info, width, n, bound, t, tile).unwrap_err().to_string()
        };
        let e = refused(max_keys(&info) + 1, 10, 1 << 30, &t, PARTITION_TILE);
        assert!(e.contains(&format!("at most {} keys", max_keys(&info))), "{e}");
        // 64 KiB of shared memory a block: a tile of 2^14 keys leaves room for fewer chunks.
        let small = DeviceInfo { smem_per_block_optin: 64 << 10, ..h200() };
        let (big_tile, keys) = (1 << 14, chunk_keys(&small));
        let width = max_chunks(&small, big_tile) * keys + 1;
        assert!(width <= max_keys(&small));
        let e = PartitionLayout::new(&small, width, 10, 1 << 30, &t, big_tile).unwrap_err().to_string();
        assert!(e.contains("use a smaller partition tile"), "{e}");
        let e = refused(1 << 20, 1 << 20, 1000, &Tuning::default(), PARTITION_TILE);
        assert!(e.contains("bytes of scratch") && e.contains("more than the 1000"), "{e}");
        let t = Tuning { partition_slice: Some(PARTITION_TILE - 1), ..Tuning::default() };
        let e = refused(1 << 20, 1 << 20, 1 << 30, &t, PARTITION_TILE);
        assert!(e.contains("less than one tile"), "{e}");
        // A tuned chunk size: smaller chunks, more of them; never below 2^8 or above the device's.
        let chunked = |shift| Tuning { partition_chunk_shift: Some(shift), ..Tuning::default() };
        let l = PartitionLayout::new(&info, 1 << 20, 1 << 20, 1 << 30, &chunked(12), PARTITION_TILE).unwrap();
        assert_eq!((l.chunk_shift, l.chunks), (12, 256));
        assert_eq!(PartitionLayout::new(&info, 1000, 10, 1 << 30, &chunked(2), PARTITION_TILE).unwrap().chunk_shift, 8);
        assert_eq!(
            PartitionLayout::new(&info, 1000, 10, 1 << 30, &chunked(20), PARTITION_TILE).unwrap().chunk_shift,
            15
        );
        // What `auto` may send to the partition follows the tuned chunks; a width past it is
        // refused by the layout with its reason.
        assert_eq!(max_keys_tuned(&info, &Tuning::default()), max_keys(&info));
        assert_eq!(max_keys_tuned(&info, &chunked(12)), MAX_CHUNKS << 12);
        let e = refused(max_keys_tuned(&info, &chunked(12)) + 1, 10, 1 << 30, &chunked(12), PARTITION_TILE);
        assert!(e.contains("chunks tuned smaller"), "{e}");
    }
}
