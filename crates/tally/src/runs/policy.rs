//! The run primitives' policy on the GPU: block size, rows per tile and the tile-state layout,
//! as pure functions of the types and the problem. The plan in `cuda.rs` is the mechanism.

use crate::error::{Error, Result};
use crate::histogram::policy::Tuning;
use crate::reduce::ElementType;
use crate::scan::lookback::LookbackLayout;
use crate::select::policy::compact_shape;

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

/// Threads per block (v13: 256 threads and 16 items a thread, 4096-item tiles).
pub const BLOCK_THREADS: u32 = 128;

/// Items a thread holds per tile where the staging allows (keys, and values for reduce-by-key).
pub const ITEMS_PER_THREAD: u32 = 32;

/// Blocks per multiprocessor the kernel is compiled for.
pub const MIN_BLOCKS: u32 = 3;

/// Shared memory a tile may stage its runs in by default (keys and values, one slot per
/// element, in dynamic shared memory); a tuned shape may take up to
/// `select::policy::MAX_STAGE_BYTES`.
pub const STAGING_BYTES: u64 = 64 << 10;

/// What the plan launches and reserves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunsPolicy {
    /// Threads per block.
    pub block_threads: u32,
    /// Rows of 16-byte key loads per tile.
    pub vecs: u32,
    /// Blocks per multiprocessor the kernel is compiled for (`__launch_bounds__`).
    pub min_blocks: u32,
    /// Elements per tile.
    pub tile: u64,
    /// Dynamic shared memory of a block: the tile's staged keys and values.
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
    // Staged per element: the key, and the value of the run its head ends (encode: a 32-bit
    // position in the tile).
    let staged = key.size()
        + match op {
            RunsKernelOp::Unique => 0,
            RunsKernelOp::Encode => 4,
            _ => out.size(),
        };
    let defaults = (BLOCK_THREADS, ITEMS_PER_THREAD, MIN_BLOCKS);
    let (block_threads, vecs, min_blocks, tile) = compact_shape(item, staged, defaults, STAGING_BYTES, tuning)?;
    // The count alone shares a word with its status; with a value, the Acc is 16 bytes.
    let (acc, packed) = if op == RunsKernelOp::Unique { (8, true) } else { (8 + out.size().max(8), false) };
    let states = LookbackLayout::new(n.div_ceil(tile), acc, packed);
    if states.tiles > u32::MAX as u64 {
        return Err(Error::invalid(format!("{n} keys make more tiles than a launch can number")));
    }
    Ok(RunsPolicy { block_threads, vecs, min_blocks, tile, stage_bytes: tile * staged as u64, states })
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
        // 128 threads x 8 rows of 4 keys, each staged with a 32-bit position: 32 KiB.
        assert_eq!((p.tile, p.states.tiles, p.shape(), p.stage_bytes), (4096, 65536, (128, 8, 3), 32 << 10));
        let r = default_policy(I32, Some((F32, F32)), RunsKernelOp::Sum, 1 << 28);
        assert_eq!(r.tile, 4096);
        let wide = default_policy(I32, Some((I32, I64)), RunsKernelOp::Sum, 1 << 20);
        assert_eq!((wide.tile, wide.stage_bytes), (4096, 48 << 10));
        let f64_max = default_policy(U8, Some((F64, F64)), RunsKernelOp::Max, 1);
        assert_eq!((f64_max.tile, f64_max.vecs), (4096, 16));
        assert_eq!(default_policy(U8, None, RunsKernelOp::Unique, 1).tile, 4096);
        assert_eq!(default_policy(F64, None, RunsKernelOp::Unique, 0).states.tiles, 0);
        for key in ElementType::ALL {
            for (v, o) in [(U8, U64), (F64, F64), (I64, I64), (U16, U16)] {
                let p = default_policy(key, Some((v, o)), RunsKernelOp::Sum, 1);
                assert!(p.stage_bytes <= STAGING_BYTES, "{key} {v}");
                assert_eq!(p.stage_bytes, p.tile * (key.size() + o.size()) as u64);
            }
        }
    }

    #[test]
    fn tuned_shapes_are_checked() {
        let larger = Tuning { compact_vecs: Some(16), ..Tuning::default() };
        let p = policy(I32, None, RunsKernelOp::Encode, 1 << 28, &larger).unwrap();
        assert_eq!((p.tile, p.stage_bytes), (8192, 64 << 10));
        let too_large = Tuning { compact_vecs: Some(32), ..Tuning::default() };
        assert!(policy(I64, Some((I64, I64)), RunsKernelOp::Sum, 1, &too_large).is_err());
    }
}
