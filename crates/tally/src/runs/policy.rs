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

/// Unique and encode: 128 threads x 64 items at 2 blocks (8192-key tiles). Measured on the
/// H200 at 2^28 i32 keys in runs of 8 (docs/PERF.md, v15): unique 0.469 ms and encode 0.865 ms,
/// against 0.601 and 1.309 at 128 x 32 x 3 (v14: 0.745 and 1.736 before the transpose).
pub const RUNS_SHAPE: Shape = (128, 64, 2);

/// Reduce-by-key: 256 threads x 32 items at 2 blocks (f32 sums: 1.315 ms, against 1.404 at 128
/// x 64 x 2 and 1.717 at 128 x 32 x 3; v14: 2.340).
pub const REDUCE_SHAPE: Shape = (256, 32, 2);

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
    /// Dynamic shared memory of a block: the tile coming in (transposed, padded), or its runs
    /// going out, whichever is larger.
    pub stage_bytes: u64,
    /// The tiles (= blocks) of the launch and their look-back states in the workspace.
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
    // A tile comes in through shared memory (the keys, and values for reduce-by-key) and its
    // runs go out through the same memory: the key, and the value of the run its head ends
    // (encode: a 32-bit position in the tile).
    let incoming = key.size() + if reduce { value.size() } else { 0 };
    let outgoing = key.size()
        + match op {
            RunsKernelOp::Unique => 0,
            RunsKernelOp::Encode => 4,
            _ => out.size(),
        };
    // A tuned row count is capped at the items a thread's mask of heads holds (rows of 16
    // one-byte keys reach it sooner than rows of four 4-byte keys).
    let per_row = (16 / item) as u64;
    let max_vecs = (MAX_ITEMS_PER_THREAD / per_row) as u32;
    let tuning = Tuning { compact_vecs: tuning.compact_vecs.map(|v| v.min(max_vecs)), ..tuning.clone() };
    let defaults = if reduce { REDUCE_SHAPE } else { RUNS_SHAPE };
    // A byte an element over the incoming tile covers its padding (a row's items after each
    // thread's) in every default shape.
    let (block_threads, vecs, min_blocks, tile) =
        compact_shape(item, (incoming + 1).max(outgoing), defaults, STAGING_BYTES, &tuning)?;
    debug_assert!(vecs as u64 * per_row <= MAX_ITEMS_PER_THREAD);
    // The incoming tile is transposed with one row's items of padding after each thread's.
    let padded = tile + block_threads as u64 * per_row;
    let stage_bytes = (padded * incoming as u64).max(tile * outgoing as u64);
    if stage_bytes > MAX_STAGE_BYTES {
        return Err(Error::invalid(format!(
            "a run tile of {tile} elements stages {} KiB, more than {} KiB",
            stage_bytes >> 10,
            MAX_STAGE_BYTES >> 10
        )));
    }
    // The count alone shares a word with its status; with a value, the Acc is 16 bytes.
    let (acc, packed) = if op == RunsKernelOp::Unique { (8, true) } else { (8 + out.size().max(8), false) };
    let states = LookbackLayout::new(n.div_ceil(tile), acc, packed);
    if states.tiles > u32::MAX as u64 {
        return Err(Error::invalid(format!("{n} keys make more tiles than a launch can number")));
    }
    Ok(RunsPolicy { block_threads, vecs, min_blocks, tile, stage_bytes, states })
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
        let p = default_policy(I32, None, RunsKernelOp::Encode, 1 << 28);
        // 128 threads x 16 rows of 4 keys; going out, each key with a 32-bit position: 64 KiB.
        assert_eq!((p.tile, p.states.tiles, p.shape(), p.stage_bytes), (8192, 32768, (128, 16, 2), 64 << 10));
        // 256 threads x 8 rows; coming in, keys and values with 16 bytes of padding a thread.
        let r = default_policy(I32, Some((F32, F32)), RunsKernelOp::Sum, 1 << 28);
        assert_eq!((r.tile, r.shape(), r.stage_bytes), (8192, (256, 8, 2), 72 << 10));
        let wide = default_policy(I32, Some((I32, I64)), RunsKernelOp::Sum, 1 << 20);
        assert_eq!((wide.tile, wide.stage_bytes), (8192, 96 << 10));
        let f64_max = default_policy(U8, Some((F64, F64)), RunsKernelOp::Max, 1);
        assert_eq!((f64_max.tile, f64_max.vecs), (8192, 16));
        assert_eq!(default_policy(U8, None, RunsKernelOp::Unique, 1).tile, 8192);
        assert_eq!(default_policy(F64, None, RunsKernelOp::Unique, 0).states.tiles, 0);
        for key in ElementType::ALL {
            for (v, o) in [(U8, U64), (F64, F64), (I64, I64), (U16, U16)] {
                let p = default_policy(key, Some((v, o)), RunsKernelOp::Sum, 1);
                let item = key.size().max(v.size()) as u64;
                let padded = p.tile + p.block_threads as u64 * (16 / item);
                let want = (padded * (key.size() + v.size()) as u64).max(p.tile * (key.size() + o.size()) as u64);
                assert_eq!(p.stage_bytes, want, "{key} {v}");
                assert!(p.stage_bytes <= MAX_STAGE_BYTES && p.vecs as u64 * (16 / item) <= 32, "{key} {v}");
            }
        }
    }

    #[test]
    fn tuned_shapes_are_checked() {
        let smaller = Tuning { compact_vecs: Some(8), ..Tuning::default() };
        let p = policy(I32, None, RunsKernelOp::Encode, 1 << 28, &smaller).unwrap();
        assert_eq!((p.tile, p.stage_bytes), (4096, 32 << 10));
        // 32 rows of 4-byte keys would be 128 items a thread, more than a 64-bit mask of heads
        // holds: capped at 16 rows.
        let too_many_items = Tuning { compact_vecs: Some(32), ..Tuning::default() };
        assert_eq!(policy(I32, None, RunsKernelOp::Unique, 1, &too_many_items).unwrap().vecs, 16);
        assert_eq!(policy(U8, None, RunsKernelOp::Unique, 1, &too_many_items).unwrap().vecs, 4);
        // A tuned row count is halved where a wide type's tile would not fit.
        let rows_16 = Tuning { compact_vecs: Some(16), ..Tuning::default() };
        let p = policy(I64, Some((I64, I64)), RunsKernelOp::Sum, 1, &rows_16).unwrap();
        assert_eq!((p.vecs, p.tile), (8, 4096));
        let odd = Tuning { compact_block_threads: Some(96), ..Tuning::default() };
        assert!(policy(I32, None, RunsKernelOp::Unique, 1, &odd).is_err());
    }
}
