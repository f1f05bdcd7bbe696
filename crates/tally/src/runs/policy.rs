//! The run primitives' policy on the GPU: block size, rows per tile and the tile-state layout,
//! as pure functions of the types and the problem. The plan in `cuda.rs` is the mechanism.

use crate::error::{Error, Result};
use crate::histogram::policy::Tuning;
use crate::reduce::ElementType;
use crate::scan::lookback::LookbackLayout;
use crate::select::policy::{compact_shape, MAX_STAGE_BYTES};

crate::kernel_codes! {
    /// What a `runs.cu` kernel computes (`TALLY_RUNS`).
    pub enum RunsKernelOp as "TALLY_RUNS" {
        /// The first key of every run.
        Unique,
        /// The first key and the length of every run (also reduce-by-key's count).
        Encode,
        /// Reduce-by-key: the sum of every run's values.
        Sum,
        /// Reduce-by-key: the minimum.
        Min,
        /// Reduce-by-key: the maximum.
        Max,
    }
}

/// A default tile shape: threads per block, consecutive items a thread holds (keys, and values
/// for reduce-by-key, where the staging allows), blocks per multiprocessor the kernel is
/// compiled for.
pub type Shape = (u32, u32, u32);

/// Encode: 128 threads x 64 items (8192-key tiles), compiled for 4 blocks a multiprocessor.
/// Measured on the H200 at 2^28 i32 keys in runs of 8 (docs/PERF.md, v22): 0.57 ms, against
/// 0.82 at 256 x 32 x 4, 0.99 at 128 x 32 x 8 and 1.11 at 512 x 16 x 2 (before the 128-bit
/// look-back slots: the tiles a multiprocessor holds and their size matter, not the items a
/// thread).
pub const RUNS_SHAPE: Shape = (128, 64, 4);

/// Unique, which holds its keys in registers: 128 threads x 64 items at 2 blocks (0.427 ms,
/// against 0.431 at 4, v22), so that 8-byte keys do not spill (128 registers and 336 bytes of
/// spill at 4 blocks, ptxas, sm_90).
pub const UNIQUE_SHAPE: Shape = (128, 64, 2);

/// Reduce-by-key: 128 threads x 32 items (4096-key tiles of 4-byte keys and values: 32 KiB of
/// staging, 6 blocks a multiprocessor), compiled for 4 blocks: f32 sums 0.92 ms (v22, H200),
/// 0.99-1.00 ms on the H100 (v28; there 8 rows beat 6, 7 and 9 at 5 to 8 blocks, measured with
/// the parts still padded).
pub const REDUCE_SHAPE: Shape = (128, 32, 4);

/// Staging a reduce-by-key tile may take by default where its outputs are wider than its
/// values (the runs' values then staged by slot, 8 bytes an element more): 4 compiled blocks'
/// worth of a multiprocessor's 228 KiB (H100, H200). At 2^28 i32 keys in runs of 8 with i32
/// values summed into i64, on the H100: 128 threads x 4 rows (2048-key tiles, 39 KiB) 1.42-1.43
/// ms, the 78 KiB of 8 rows (2 blocks a multiprocessor) 1.60 ms (docs/PERF.md, v26); with the
/// parts swizzled instead of padded (v28; 36 KiB at 4 rows), 1.23 ms at 4 rows and 1.23-1.25 at
/// 4 or 8 rows and 3 to 6 blocks.
pub const WIDE_STAGING_BYTES: u64 = 56 << 10;

/// Consecutive items a thread may hold (its run heads are the bits of a 64-bit mask).
pub const MAX_ITEMS_PER_THREAD: u64 = 64;

/// Shared memory a tile may pass through by default (in dynamic shared memory: the tile's keys
/// and values coming in, its runs going out); a tuned shape may take up to
/// `select::policy::MAX_STAGE_BYTES`.
pub const STAGING_BYTES: u64 = MAX_STAGE_BYTES;

/// What the plan launches and reserves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunsPolicy {
    /// Threads per block.
    pub block_threads: u32,
    /// Rows of 16-byte loads per tile (of keys, or of values where those are wider): a thread
    /// holds `vecs` loads' worth of consecutive items.
    pub vecs: u32,
    /// Blocks per multiprocessor the kernel is compiled for (`__launch_bounds__`).
    pub min_blocks: u32,
    /// Elements per tile.
    pub tile: u64,
    /// Dynamic shared memory of a block ([`stage_bytes`]).
    pub stage_bytes: u64,
    /// The tiles (= blocks) of the launch and their look-back states.
    pub states: LookbackLayout,
}

impl RunsPolicy {
    /// What the kernel is specialised for: threads per block, rows per tile, blocks per
    /// multiprocessor.
    pub fn shape(&self) -> (u32, u32, u32) {
        (self.block_threads, self.vecs, self.min_blocks)
    }
}

/// The policy for `n` keys of `key`; `values`: reduce-by-key's value and output types. The
/// shape is `select::policy::compact_shape`'s, with this module's defaults.
pub fn policy(
    key: ElementType,
    values: Option<(ElementType, ElementType)>,
    op: RunsKernelOp,
    n: u64,
    tuning: &Tuning,
) -> Result<RunsPolicy> {
    let reduce = !matches!(op, RunsKernelOp::Unique | RunsKernelOp::Encode);
    let (value, out) = values.unwrap_or((key, ElementType::U64));
    let item = if reduce { key.size().max(value.size()) } else { key.size() };
    // A tile comes in through shared memory (the keys, and values for reduce-by-key) and stays
    // there; but for unique and compacted reduce-by-key its heads' places (16 bits) go next to
    // it, and where reduce-by-key's outputs are wider than its values, the runs' values too
    // (`stage_bytes`).
    let reduce_values = reduce.then_some((value, out));
    let places = if op == RunsKernelOp::Unique || compacted(op, reduce_values) { 0 } else { 2 };
    let per_element = key.size()
        + places
        + match reduce_values {
            Some((v, o)) if o.size() != v.size() => v.size() + o.size(),
            Some((v, _)) => v.size(),
            None => 0,
        };
    // A tuned row count is capped at the items a thread's mask of heads holds (rows of 16
    // one-byte keys reach it sooner than rows of four 4-byte keys), and taken down to a power of
    // two (the kernel swizzles a thread's rows; the defaults are powers of two).
    let per_row = (16 / item) as u64;
    let max_vecs = (MAX_ITEMS_PER_THREAD / per_row) as u32;
    let tuned = tuning.compact_vecs.is_some();
    let power_of_two_below = |v: u32| if v == 0 { 0 } else { 1 << v.ilog2() };
    let tuning =
        Tuning { compact_vecs: tuning.compact_vecs.map(|v| power_of_two_below(v.min(max_vecs))), ..tuning.clone() };
    let defaults = match op {
        RunsKernelOp::Unique => UNIQUE_SHAPE,
        RunsKernelOp::Encode => RUNS_SHAPE,
        _ => REDUCE_SHAPE,
    };
    // Without the parts' rounding to 16 bytes: `stage_bytes` below has the exact layout.
    let wide = matches!(reduce_values, Some((v, o)) if o.size() != v.size());
    let default_limit = if wide { WIDE_STAGING_BYTES } else { STAGING_BYTES };
    let (block_threads, mut vecs, min_blocks, mut tile) =
        compact_shape(item, per_element, defaults, default_limit, &tuning)?;
    debug_assert!(vecs as u64 * per_row <= MAX_ITEMS_PER_THREAD);
    let limit = if tuned { MAX_STAGE_BYTES } else { default_limit };
    let bytes = |tile: u64| stage_bytes(op, key, reduce_values, tile);
    while bytes(tile) > limit && vecs > 1 {
        vecs /= 2;
        tile = block_threads as u64 * per_row * vecs as u64;
    }
    debug_assert_eq!(tile, block_threads as u64 * per_row * vecs as u64);
    let stage_bytes = bytes(tile);
    if stage_bytes > MAX_STAGE_BYTES {
        return Err(Error::invalid(format!(
            "a run tile of {tile} elements stages {} KiB, more than {} KiB",
            stage_bytes >> 10,
            MAX_STAGE_BYTES >> 10
        )));
    }
    // The count alone shares 64 bits with its status; with a value (of up to 8 bytes) a slot
    // takes 128 (`RunsLookback::Word` in runs.cu).
    let slot = if op == RunsKernelOp::Unique { 8 } else { 16 };
    let states = LookbackLayout::new(n.div_ceil(tile), slot);
    if states.tiles > u32::MAX as u64 {
        return Err(Error::invalid(format!("{n} keys make more tiles than a launch can number")));
    }
    Ok(RunsPolicy { block_threads, vecs, min_blocks, tile, stage_bytes, states })
}

/// Whether reduce-by-key by `op` of `values` (value and output types) moves each thread's runs
/// to the front of its own items instead of staging their places (`COMPACTED` in `runs.cu`):
/// where a run's value takes a value's place (outputs as wide as the values) and sums are not
/// checked (all but 64-bit integer sums).
pub fn compacted(op: RunsKernelOp, values: Option<(ElementType, ElementType)>) -> bool {
    matches!(values, Some((v, o)) if v.size() == o.size() && !checks_overflow(op, o))
}

/// Whether reduce-by-key by `op` into `out` checks its sums for overflow (`CHECKED` in
/// `runs.cu`): 64-bit integer sums.
pub fn checks_overflow(op: RunsKernelOp, out: ElementType) -> bool {
    op == RunsKernelOp::Sum && !out.is_float() && out.size() == 8
}

/// Dynamic shared memory of a tile of `tile` elements of `op` (`STAGE_BYTES` in `runs.cu`,
/// whose layout this follows; the kernel traps if a launch gives less): the keys transposed (each
/// thread's rows swizzled in place, no padding), the values the same way (reduce-by-key); but
/// for unique (which stages its runs over the keys) and [`compacted`]
/// reduce-by-key (which moves them within each thread's items) 16 bits a head for its place in
/// the tile; and the runs' values where the outputs are wider than the values (otherwise they
/// are written over the heads' values). Each part from a 16-byte boundary.
pub fn stage_bytes(op: RunsKernelOp, key: ElementType, values: Option<(ElementType, ElementType)>, tile: u64) -> u64 {
    let align16 = |b: u64| (b + 15) & !15;
    let incoming = align16(tile * key.size() as u64) + values.map_or(0, |(v, _)| align16(tile * v.size() as u64));
    if op == RunsKernelOp::Unique || compacted(op, values) {
        return incoming;
    }
    let run_values = match values {
        Some((v, o)) if o.size() != v.size() => tile * o.size() as u64,
        _ => 0,
    };
    align16(incoming + tile * 2) + run_values
}

#[cfg(test)]
mod tests {
    use super::*;
    use ElementType::*;

    fn default_policy(
        key: ElementType,
        values: Option<(ElementType, ElementType)>,
        op: RunsKernelOp,
        n: u64,
    ) -> RunsPolicy {
        policy(key, values, op, n, &Tuning::default()).unwrap()
    }

    #[test]
    fn tiles_fit_the_staging_memory() {
        let shape = |threads, vecs, blocks| Tuning {
            compact_block_threads: Some(threads),
            compact_vecs: Some(vecs),
            compact_min_blocks: Some(blocks),
            ..Tuning::default()
        };
        let p = policy(I32, None, RunsKernelOp::Encode, 1 << 28, &shape(128, 16, 4)).unwrap();
        // 128 threads x 16 rows of 4 keys (swizzled, no padding), and 16 bits a head.
        assert_eq!((p.tile, p.states.tiles, p.shape()), (8192, 32768, (128, 16, 4)));
        assert_eq!(p.stage_bytes, 8192 * 4 + 8192 * 2);
        // Unique stages its runs over the keys: no places.
        let u = policy(I32, None, RunsKernelOp::Unique, 1 << 28, &shape(128, 16, 4)).unwrap();
        assert_eq!(u.stage_bytes, 8192 * 4);
        // Keys and f32 values, compacted within each thread's items: no places.
        let r = policy(I32, Some((F32, F32)), RunsKernelOp::Sum, 1 << 28, &shape(256, 8, 2)).unwrap();
        assert_eq!((r.tile, r.stage_bytes), (8192, 2 * 8192 * 4));
        // i64 sums are checked: places, and the run values over the heads' values.
        let checked = policy(I32, Some((I64, I64)), RunsKernelOp::Sum, 1 << 28, &shape(128, 8, 2)).unwrap();
        assert_eq!((checked.tile, checked.stage_bytes), (2048, 2048 * 4 + 2048 * 8 + 2048 * 2));
        // i32 values summed into i64: the run values by slot, after the places.
        let wide = policy(I32, Some((I32, I64)), RunsKernelOp::Sum, 1 << 20, &shape(256, 4, 2)).unwrap();
        assert_eq!((wide.tile, wide.stage_bytes), (4096, 2 * 4096 * 4 + 4096 * 2 + 4096 * 8));
        // u8 keys with f64 values: 2 items a row (the keys' part, 2048 bytes, is whole 16s).
        let mixed = policy(U8, Some((F64, F64)), RunsKernelOp::Max, 1, &shape(128, 8, 2)).unwrap();
        assert_eq!(mixed.tile, 2048);
        assert_eq!(mixed.stage_bytes, 2048 + 2048 * 8);
        // An odd tuned row count is taken down to a power of two (the kernel's swizzle).
        assert_eq!(policy(I32, None, RunsKernelOp::Encode, 1, &shape(128, 7, 4)).unwrap().vecs, 4);
        assert_eq!(default_policy(F64, None, RunsKernelOp::Unique, 0).states.tiles, 0);
        // Outputs wider than the values stage the runs' values by slot: half the rows by
        // default, so that the compiled 4 blocks fit; f32 sums keep 4096-key tiles.
        let wide = default_policy(I32, Some((I32, I64)), RunsKernelOp::Sum, 1 << 28);
        assert_eq!((wide.tile, wide.shape()), (2048, (128, 4, 4)));
        assert!(wide.stage_bytes <= WIDE_STAGING_BYTES);
        // f32 sums by i32 keys: 4096-key tiles of 32 KiB, six of which (each with its 1 KiB the
        // driver reserves and the kernel's static shared memory) fit a 228 KiB multiprocessor.
        let f32_sums = default_policy(I32, Some((F32, F32)), RunsKernelOp::Sum, 1 << 28);
        assert_eq!((f32_sums.tile, f32_sums.stage_bytes), (4096, 32768));
        assert!(6 * (f32_sums.stage_bytes + 1024 + 256) <= 228 << 10);
        // Every default fits the default staging, with every layout the kernel computes.
        for key in ElementType::ALL {
            for op in [RunsKernelOp::Unique, RunsKernelOp::Encode] {
                let p = default_policy(key, None, op, 1);
                assert!(p.stage_bytes <= STAGING_BYTES && p.tile <= 65536, "{key} {op:?}");
                assert_eq!(p.stage_bytes, stage_bytes(op, key, None, p.tile));
                assert!(p.vecs.is_power_of_two(), "{key} {op:?}");
            }
            for (v, o) in [(U8, U64), (F64, F64), (I64, I64), (U16, U16), (F32, F32), (I32, I64)] {
                let p = default_policy(key, Some((v, o)), RunsKernelOp::Sum, 1);
                let item = key.size().max(v.size()) as u64;
                assert_eq!(p.stage_bytes, stage_bytes(RunsKernelOp::Sum, key, Some((v, o)), p.tile));
                assert!(p.vecs.is_power_of_two(), "{key} {v}");
                assert!(p.stage_bytes <= STAGING_BYTES && p.vecs as u64 * (16 / item) <= 64, "{key} {v}");
            }
        }
    }

    #[test]
    fn tuned_shapes_are_checked() {
        let smaller = Tuning { compact_block_threads: Some(128), compact_vecs: Some(8), ..Tuning::default() };
        let p = policy(I32, None, RunsKernelOp::Encode, 1 << 28, &smaller).unwrap();
        assert_eq!((p.tile, p.stage_bytes), (4096, 4096 * 4 + 4096 * 2));
        // 32 rows of 4-byte keys would be 128 items a thread, more than a 64-bit mask of heads
        // holds: capped at 16 rows.
        let too_many_items = Tuning { compact_vecs: Some(32), ..Tuning::default() };
        assert_eq!(policy(I32, None, RunsKernelOp::Unique, 1, &too_many_items).unwrap().vecs, 16);
        assert_eq!(policy(U8, None, RunsKernelOp::Unique, 1, &too_many_items).unwrap().vecs, 4);
        // A tuned row count is halved where a wide type's tile would not fit.
        let rows_16 = Tuning { compact_block_threads: Some(256), compact_vecs: Some(16), ..Tuning::default() };
        let p = policy(I64, Some((I64, I64)), RunsKernelOp::Sum, 1, &rows_16).unwrap();
        assert_eq!((p.vecs, p.tile), (8, 4096));
        let odd = Tuning { compact_block_threads: Some(96), ..Tuning::default() };
        assert!(policy(I32, None, RunsKernelOp::Unique, 1, &odd).is_err());
        // A tile is always threads x rows x items a row, rows a power of two, also when an odd
        // tuned row count is halved to fit (the kernel computes TILE so, and swizzles the rows).
        for threads in [64, 128, 256, 512] {
            for rows in 1..=32 {
                let t = Tuning { compact_block_threads: Some(threads), compact_vecs: Some(rows), ..Tuning::default() };
                for key in ElementType::ALL {
                    for (values, op) in [
                        (None, RunsKernelOp::Unique),
                        (None, RunsKernelOp::Encode),
                        (Some((I64, I64)), RunsKernelOp::Sum),
                        (Some((U32, U64)), RunsKernelOp::Sum),
                    ] {
                        let Ok(p) = policy(key, values, op, 1, &t) else { continue };
                        let item = values.map_or(key.size(), |(v, _)| key.size().max(v.size())) as u64;
                        assert_eq!(
                            p.tile,
                            threads as u64 * (16 / item) * p.vecs as u64,
                            "{key} {op:?} {threads} {rows}"
                        );
                        assert!(p.stage_bytes <= MAX_STAGE_BYTES && p.vecs.is_power_of_two());
                    }
                }
            }
        }
    }
}
