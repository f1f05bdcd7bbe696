//! The select kernels' policy: block size, rows per tile, the tile-state layout and the count
//! kernel's grid, as pure functions of the element type, the problem and the device.

use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::histogram::policy::Tuning;
use crate::reduce::ElementType;
use crate::scan::lookback::LookbackLayout;

crate::kernel_codes! {
    /// What a `select.cu` specialisation does (`TALLY_SELECT`).
    pub enum SelectKernel as "TALLY_SELECT" {
        /// The passing elements, in order (look-back).
        Stable,
        /// The passing elements, each warp's claimed by an atomic.
        Unordered,
        /// The indices of the passing elements, in order.
        Indices,
        /// The elements whose byte flag is nonzero, in order.
        Flagged,
        /// The passing elements in order at the front, the rest reversed from the back.
        Partition,
        /// The count of passing elements.
        Count,
    }
}

/// What a [`crate::SelectPlan`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SelectMode {
    /// The passing elements, in order.
    Stable,
    /// The passing elements, in no particular order.
    Unordered,
    /// The indices (u64) of the passing elements, ascending.
    Indices,
    /// The elements whose flag is set, in order.
    Flagged,
    /// The passing elements, then the rest, each in order.
    Partition,
    /// The passing elements in order, then the rest in reverse order.
    PartitionReversed,
    /// Only the count of the passing elements.
    Count,
}

impl SelectMode {
    /// The kernel specialisation that runs it.
    pub fn kernel(self) -> SelectKernel {
        match self {
            SelectMode::Stable => SelectKernel::Stable,
            SelectMode::Unordered => SelectKernel::Unordered,
            SelectMode::Indices => SelectKernel::Indices,
            SelectMode::Flagged => SelectKernel::Flagged,
            SelectMode::Partition | SelectMode::PartitionReversed => SelectKernel::Partition,
            SelectMode::Count => SelectKernel::Count,
        }
    }

    /// Whether the output holds every element (a partition).
    pub fn is_partition(self) -> bool {
        matches!(self, SelectMode::Partition | SelectMode::PartitionReversed)
    }
}

/// Threads per block (v13: 256 threads and 16 items a thread, 4096-item tiles).
pub const BLOCK_THREADS: u32 = 128;

/// Items a thread holds per tile, where the staging allows: four times v13's 16. As for the
/// scans (docs/PERF.md, v13), fewer and larger tiles leave fewer look-backs to wait on.
pub const ITEMS_PER_THREAD: u32 = 64;

/// Blocks per multiprocessor the kernels are compiled for (at most 128 registers a thread).
/// ncu on the H200 (docs/PERF.md, v19): at v14's 3 blocks (159 registers, 12 warps a
/// multiprocessor) warps spent 44% of their cycles at a barrier while warp 0 looked back; at
/// 4 blocks, the kept items staged while warp 0 looks back, the same 128 x 16-row tiles
/// selected 1% / 50% / 99% of 2^28 f32 in 0.387 / 0.528 / 0.657 ms against 0.462 / 0.609 /
/// 0.755 ms in the same call. Blocks that stay resident with a fifth warp that only looks back
/// (so that no data warp waits at that barrier) fit 3 a multiprocessor and ran 7-23% slower on
/// the H200 (v37): with 4 one-tile blocks the other blocks' loads cover one block's wait, which
/// is worth more than the look-back warp saves.
pub const MIN_BLOCKS: u32 = 4;

/// Shared memory a tile stages its output in by default; a tuned shape may take up to
/// [`MAX_STAGE_BYTES`].
pub const STAGE_BYTES: u64 = 32 << 10;

/// The most dynamic shared memory a tuned shape may stage a tile in (every sm_80+ device
/// grants a block 99 KiB).
pub const MAX_STAGE_BYTES: u64 = 96 << 10;

/// What the plan launches and reserves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelectPolicy {
    /// Threads per block.
    pub block_threads: u32,
    /// 16-byte loads per thread and tile (rows of the tile).
    pub vecs: u32,
    /// Blocks per multiprocessor the kernel is compiled for.
    pub min_blocks: u32,
    /// Elements per tile.
    pub tile: u64,
    /// Dynamic shared memory of the order-keeping and unordered kernels: the tile's outputs.
    pub stage_bytes: u64,
    /// The tiles and their look-back states (a packed 64-bit count per tile).
    pub states: LookbackLayout,
}

impl SelectPolicy {
    /// Threads per block, rows per tile, blocks per multiprocessor.
    pub fn shape(&self) -> (u32, u32, u32) {
        (self.block_threads, self.vecs, self.min_blocks)
    }

    /// Blocks of the count kernel (a grid-stride loop over the tiles): enough to fill the
    /// device, never more than there are tiles.
    pub fn count_grid(&self, info: &DeviceInfo) -> u32 {
        let fill = info.multiprocessors as u64 * self.min_blocks as u64 * 2;
        self.states.tiles.clamp(1, fill.max(1)) as u32
    }
}

/// The tile shape of a compaction kernel (select, and the runs in `crate::runs::policy`) whose
/// rows are 16-byte loads of `item`-byte elements and whose tile stages `staged` bytes per
/// element: threads, rows, blocks per multiprocessor and elements per tile. By default
/// `block_threads` threads hold `items_per_thread` elements each, rows halved until the tile's
/// staging fits `stage_bytes`; [`Tuning`]'s `compact_*` knobs override each part, checked.
pub fn compact_shape(
    item: usize,
    staged: usize,
    defaults: (u32, u32, u32),
    stage_bytes: u64,
    tuning: &Tuning,
) -> Result<(u32, u32, u32, u64)> {
    let (default_threads, items_per_thread, default_min_blocks) = defaults;
    let block_threads = tuning.compact_block_threads.unwrap_or(default_threads);
    if ![64, 128, 256, 512].contains(&block_threads) {
        return Err(Error::invalid(format!("compaction blocks of {block_threads} threads: use 64, 128, 256 or 512")));
    }
    let per_row = (16 / item) as u64;
    let tile_of = |vecs: u32| block_threads as u64 * per_row * vecs as u64;
    // Rows are halved until the tile's staging fits: the default's `stage_bytes`, or for a
    // tuned row count (given for the widest case, say) [`MAX_STAGE_BYTES`], so that one tuned
    // shape serves every element type. Warp 0 scans the rows' and warps' counts, at most 4 a
    // lane (block.cuh's PieceScan): a default row count is halved for that too.
    let tuned = tuning.compact_vecs.is_some();
    let (mut vecs, limit) = match tuning.compact_vecs {
        Some(v) => (v, MAX_STAGE_BYTES),
        None => ((items_per_thread / per_row as u32).max(1), stage_bytes),
    };
    let pieces = |vecs: u32| vecs * (block_threads / 32);
    while vecs > 1 && (tile_of(vecs) * staged as u64 > limit || (!tuned && pieces(vecs) > 128)) {
        vecs /= 2;
    }
    if vecs == 0 || pieces(vecs) > 128 {
        return Err(Error::invalid(format!(
            "{vecs} rows per compaction tile with {block_threads} threads: rows times warps must be 1 to 128"
        )));
    }
    let tile = tile_of(vecs);
    if tile * staged as u64 > MAX_STAGE_BYTES {
        return Err(Error::invalid(format!(
            "a compaction tile of {tile} elements stages {} KiB, more than {} KiB",
            (tile * staged as u64) >> 10,
            MAX_STAGE_BYTES >> 10
        )));
    }
    let min_blocks = tuning.compact_min_blocks.unwrap_or(default_min_blocks);
    if !(1..=32).contains(&min_blocks) {
        return Err(Error::invalid(format!("{min_blocks} compaction blocks per multiprocessor: use 1 to 32")));
    }
    Ok((block_threads, vecs, min_blocks, tile))
}

/// The policy of `kernel` on `n` elements of `elem`: [`compact_shape`] with
/// [`BLOCK_THREADS`], [`ITEMS_PER_THREAD`] and [`MIN_BLOCKS`], the outputs (the elements, or
/// u64 indices) staged in at most [`STAGE_BYTES`].
pub fn policy(elem: ElementType, kernel: SelectKernel, n: u64, tuning: &Tuning) -> Result<SelectPolicy> {
    let out = if kernel == SelectKernel::Indices { 8 } else { elem.size() };
    let defaults = (BLOCK_THREADS, ITEMS_PER_THREAD, MIN_BLOCKS);
    let (block_threads, vecs, min_blocks, tile) = compact_shape(elem.size(), out, defaults, STAGE_BYTES, tuning)?;
    let states = LookbackLayout::new(n.div_ceil(tile), 8);
    if states.tiles > u32::MAX as u64 {
        return Err(Error::invalid(format!("a selection of {n} elements has more tiles than a launch can number")));
    }
    let stage_bytes = if kernel == SelectKernel::Count { 0 } else { tile * out as u64 };
    Ok(SelectPolicy { block_threads, vecs, min_blocks, tile, stage_bytes, states })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default_policy(elem: ElementType, kernel: SelectKernel, n: u64) -> SelectPolicy {
        policy(elem, kernel, n, &Tuning::default()).unwrap()
    }

    #[test]
    fn tiles_hold_64_items_a_thread_where_the_stage_allows() {
        let p = default_policy(ElementType::F32, SelectKernel::Stable, 1 << 28);
        // 128 threads x 16 rows of 4 f32: 8192 items, 32 KiB staged.
        assert_eq!((p.tile, p.states.tiles, p.shape(), p.stage_bytes), (8192, 32768, (128, 16, 4), 32 << 10));
        // u64 indices of f32 take 8 bytes each: half the rows.
        let indices = default_policy(ElementType::F32, SelectKernel::Indices, 1 << 28);
        assert_eq!((indices.tile, indices.stage_bytes), (4096, 32 << 10));
        let f64 = default_policy(ElementType::F64, SelectKernel::Partition, 1 << 20);
        assert_eq!((f64.tile, f64.vecs), (4096, 16));
        let u8 = default_policy(ElementType::U8, SelectKernel::Flagged, 1 << 20);
        assert_eq!((u8.tile, u8.vecs, u8.stage_bytes), (8192, 4, 8 << 10));
        assert_eq!(default_policy(ElementType::F32, SelectKernel::Count, 1).stage_bytes, 0);
        assert_eq!(default_policy(ElementType::U8, SelectKernel::Stable, 8193).states.tiles, 2);
        assert_eq!(default_policy(ElementType::I16, SelectKernel::Stable, 0).states.tiles, 0);
        let huge = default_policy(ElementType::U8, SelectKernel::Stable, 5 << 30);
        assert_eq!(huge.states.tiles, (5u64 << 30) / 8192);
        let info = DeviceInfo::h200();
        assert_eq!(default_policy(ElementType::F32, SelectKernel::Count, 10).count_grid(&info), 1);
        assert_eq!(p.count_grid(&info), 132 * 4 * 2);
    }

    #[test]
    fn tuned_shapes_are_checked() {
        let v13 = Tuning {
            compact_block_threads: Some(256),
            compact_vecs: Some(4),
            compact_min_blocks: Some(3),
            ..Tuning::default()
        };
        let p = policy(ElementType::F32, SelectKernel::Stable, 1 << 28, &v13).unwrap();
        assert_eq!((p.tile, p.shape(), p.stage_bytes), (4096, (256, 4, 3), 16 << 10));
        // A tuned row count is halved where a type's staging would not fit (u64 indices).
        let rows_24 = Tuning { compact_vecs: Some(24), ..Tuning::default() };
        let wide = policy(ElementType::I8, SelectKernel::Indices, 1 << 20, &rows_24).unwrap();
        assert_eq!((wide.vecs, wide.tile, wide.stage_bytes), (6, 12288, 96 << 10));
        let too_many_rows = Tuning { compact_vecs: Some(33), ..Tuning::default() };
        assert!(policy(ElementType::F32, SelectKernel::Stable, 1, &too_many_rows).is_err());
        let too_many_pieces = Tuning { compact_block_threads: Some(512), compact_vecs: Some(9), ..Tuning::default() };
        assert!(policy(ElementType::F32, SelectKernel::Stable, 1, &too_many_pieces).is_err());
        let odd_threads = Tuning { compact_block_threads: Some(96), ..Tuning::default() };
        assert!(policy(ElementType::F32, SelectKernel::Stable, 1, &odd_threads).is_err());
        let no_blocks = Tuning { compact_min_blocks: Some(0), ..Tuning::default() };
        assert!(policy(ElementType::F32, SelectKernel::Stable, 1, &no_blocks).is_err());
    }
}
