//! The reduction's policy on the GPU: block size, loads in flight, shared memory and grid, as a
//! pure function of the device's properties and the problem. The plan in `cuda.rs` is the
//! mechanism.

use super::ElementType;
use crate::device::DeviceInfo;
use crate::Tuning;

crate::kernel_codes! {
    /// The reduction kernels' operations (`TALLY_REDUCE`).
    pub enum KernelOp as "TALLY_REDUCE" {
        /// Sum (and mean): f64 for floats, 128-bit integers.
        Sum,
        /// Min, max, minmax, argmin, argmax.
        Extrema,
        /// Count of elements passing a comparison.
        Count,
        /// The exact float sum.
        Exact,
        /// A caller's C++ expression.
        Custom,
    }
}

/// Elements a thread of the exact f32 kernel may sum: its per-digit doubles stay exact below
/// 2^53, and each element adds less than 2^31 to one of them.
pub const EXACT_F32_PER_THREAD: u64 = 1 << 21;

/// What the plan launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReducePolicy {
    /// Threads per block.
    pub block_threads: u32,
    /// 16-byte loads in flight per thread.
    pub vecs: u32,
    /// Blocks.
    pub grid: u32,
    /// Dynamic shared memory per block (the exact sum's digit slots).
    pub smem: usize,
    /// Bytes of one block's partial in the workspace.
    pub partial_bytes: usize,
}

/// Whether the exact sum of `elem` takes the f32 layout: f32, and f16 and bf16 (each value
/// exactly an f32), as opposed to f64's.
pub fn exact_as_f32(elem: ElementType) -> bool {
    elem != ElementType::F64
}

/// Digits of the exact sum's kernel for f32 (8 bits each) and f64 (32 bits each).
pub fn exact_digits(elem: ElementType) -> usize {
    if exact_as_f32(elem) {
        32
    } else {
        66
    }
}

/// Words of the result the kernels write (the exact f64 sum's digits are the most).
pub const OUT_WORDS: usize = 4 + 2 * 66;

/// The most 16-byte loads in flight per thread and blocks per multiprocessor a tuning may ask
/// of the plain kernels.
pub const MAX_VECS: u32 = 16;
/// See [`MAX_VECS`].
pub const MAX_BLOCKS_PER_SM: u32 = 8;

/// The policy for `op` over `n` elements of `elem`, with `tuning`'s reduce knobs.
///
/// - Plain ops: 256 threads, four 16-byte loads in flight per thread (two for 1- and 2-byte
///   elements, whose loads already unroll into long bodies), four blocks per multiprocessor:
///   64 KiB of loads in flight per multiprocessor, what Hopper's memory system needs to run at
///   full bandwidth; fewer blocks when the input does not fill them.
/// - Exact f32: 256 threads with 32 digit slots each (64 KiB), as many blocks as fit.
/// - Exact f64: 128 threads with 66 digit slots each (66 KiB), as many blocks as fit.
pub fn policy(info: &DeviceInfo, tuning: &Tuning, op: KernelOp, elem: ElementType, n: u64) -> ReducePolicy {
    let exact = op == KernelOp::Exact;
    let block_threads: u32 = if exact && elem == ElementType::F64 { 128 } else { 256 };
    // The exact kernels run fewer threads per multiprocessor (their digit slots fill the
    // shared memory): more loads in flight per thread make up for it (H100: 8 loads took
    // exact f32 from 81% to 84% of the read bandwidth and f64 from 67% to 74%; 16 hurt f32).
    let vecs: u32 = match (exact, elem.size() <= 2) {
        (true, _) => 8,
        (false, true) => tuning.reduce_vecs.unwrap_or(2).clamp(1, MAX_VECS),
        (false, false) => tuning.reduce_vecs.unwrap_or(4).clamp(1, MAX_VECS),
    };
    let smem = if exact { exact_digits(elem) * block_threads as usize * 8 } else { 0 };
    let target_per_sm: u32 =
        if exact { 4 } else { tuning.reduce_blocks_per_sm.unwrap_or(4).clamp(1, MAX_BLOCKS_PER_SM) };
    let per_sm = if smem == 0 {
        target_per_sm
    } else {
        // Leave 1 KiB per block for the static shared memory and the system's reserve.
        (info.smem_per_multiprocessor / (smem + 1024)).clamp(1, target_per_sm as usize) as u32
    };
    let items_per_tile = block_threads as u64 * vecs as u64 * (16 / elem.size()) as u64;
    let tiles = n.div_ceil(items_per_tile).max(1);
    let resident = info.multiprocessors.max(1) as u64 * per_sm as u64;
    let mut grid = tiles.min(resident);
    if exact && exact_as_f32(elem) {
        grid = grid.max(n.div_ceil(block_threads as u64 * EXACT_F32_PER_THREAD));
    }
    let partial_bytes = match op {
        KernelOp::Sum | KernelOp::Count | KernelOp::Custom => 16,
        KernelOp::Extrema => 48,
        KernelOp::Exact => exact_digits(elem) * 16 + 32,
    };
    ReducePolicy { block_threads, vecs, grid: grid.min(u32::MAX as u64) as u32, smem, partial_bytes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_are_a_few_blocks_per_sm_or_what_the_input_fills() {
        let info = DeviceInfo::h200();
        let big = policy(&info, &Tuning::default(), KernelOp::Sum, ElementType::F32, 1 << 28);
        assert_eq!((big.block_threads, big.vecs, big.grid), (256, 4, 528));
        let small = policy(&info, &Tuning::default(), KernelOp::Sum, ElementType::F32, 1 << 20);
        assert_eq!(small.grid, 256);
        assert_eq!(policy(&info, &Tuning::default(), KernelOp::Sum, ElementType::F32, 0).grid, 1);
        let ex32 = policy(&info, &Tuning::default(), KernelOp::Exact, ElementType::F32, 1 << 28);
        assert_eq!((ex32.block_threads, ex32.smem, ex32.grid), (256, 65536, 396));
        let ex64 = policy(&info, &Tuning::default(), KernelOp::Exact, ElementType::F64, 1 << 27);
        assert_eq!((ex64.block_threads, ex64.smem), (128, 67584));
        assert!(ex64.smem <= info.smem_per_block_optin);
    }

    #[test]
    fn tuning_sets_the_plain_kernels_loads_and_blocks_within_limits() {
        let info = DeviceInfo::h200();
        let t = Tuning { reduce_vecs: Some(8), reduce_blocks_per_sm: Some(6), ..Tuning::default() };
        let p = policy(&info, &t, KernelOp::Extrema, ElementType::F32, 1 << 28);
        assert_eq!((p.vecs, p.grid), (8, 132 * 6));
        let wild = Tuning { reduce_vecs: Some(0), reduce_blocks_per_sm: Some(99), ..Tuning::default() };
        let p = policy(&info, &wild, KernelOp::Sum, ElementType::F32, 1 << 28);
        assert_eq!((p.vecs, p.grid), (1, 132 * MAX_BLOCKS_PER_SM));
        // The exact kernels keep their own shape.
        let ex = policy(&info, &t, KernelOp::Exact, ElementType::F32, 1 << 28);
        assert_eq!(ex, policy(&info, &Tuning::default(), KernelOp::Exact, ElementType::F32, 1 << 28));
    }

    #[test]
    fn exact_f32_keeps_every_thread_below_its_limit() {
        let info = DeviceInfo::h200();
        let n = 1u64 << 37;
        let p = policy(&info, &Tuning::default(), KernelOp::Exact, ElementType::F32, n);
        let per_thread = n.div_ceil(p.grid as u64 * p.block_threads as u64) + 2;
        assert!(per_thread <= EXACT_F32_PER_THREAD);
    }
}
