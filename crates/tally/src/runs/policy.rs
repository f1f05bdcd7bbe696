//! The run primitives' policy on the GPU: block size, rows per tile and the tile-state layout,
//! as pure functions of the types and the problem. The plan in `cuda.rs` is the mechanism.

use crate::reduce::ElementType;
use crate::scan::lookback::LookbackLayout;
use crate::scan::policy::vecs_for;

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

/// Threads per block.
pub const BLOCK_THREADS: u32 = 256;

/// Shared memory a tile may stage its runs in (keys and values, one slot per element).
pub const STAGING_BYTES: usize = 40 << 10;

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

/// The policy for `n` keys of `key`; `values`: reduce-by-key's value and output types.
pub fn policy(key: ElementType, values: Option<(ElementType, ElementType)>, op: RunsKernelOp, n: u64) -> RunsPolicy {
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
    let block_threads = BLOCK_THREADS;
    let mut vecs = vecs_for(item);
    let tile_of = |vecs: u32| block_threads as u64 * (16 / item) as u64 * vecs as u64;
    while vecs > 1 && tile_of(vecs) as usize * staged > STAGING_BYTES {
        vecs /= 2;
    }
    let tile = tile_of(vecs);
    // The count alone shares a word with its status; with a value, the Acc is 16 bytes.
    let (acc, packed) = if op == RunsKernelOp::Unique { (8, true) } else { (8 + out.size().max(8), false) };
    let states = LookbackLayout::new(n.div_ceil(tile), acc, packed);
    let min_blocks = if reduce { 2 } else { 3 };
    RunsPolicy { block_threads, vecs, min_blocks, tile, states }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ElementType::*;

    #[test]
    fn tiles_fit_the_staging_memory() {
        let p = policy(I32, None, RunsKernelOp::Encode, 1 << 28);
        assert_eq!((p.tile, p.states.tiles), (4096, 65536));
        let r = policy(I32, Some((F32, F32)), RunsKernelOp::Sum, 1 << 28);
        assert_eq!(r.tile, 4096);
        let wide = policy(I32, Some((I32, I64)), RunsKernelOp::Sum, 1 << 20);
        assert_eq!(wide.tile, 2048);
        assert_eq!(policy(U8, Some((F64, F64)), RunsKernelOp::Max, 1).tile, 2048);
        assert_eq!(policy(U8, None, RunsKernelOp::Unique, 1).tile, 4096);
        assert_eq!(policy(F64, None, RunsKernelOp::Unique, 0).states.tiles, 0);
        for key in ElementType::ALL {
            for (v, o) in [(U8, U64), (F64, F64), (I64, I64), (U16, U16)] {
                let p = policy(key, Some((v, o)), RunsKernelOp::Sum, 1);
                assert!(p.tile as usize * (key.size() + o.size()) <= STAGING_BYTES, "{key} {v}");
            }
        }
    }
}
