//! The scan's policy on the GPU: block size, rows per tile and the tile-state layout, as pure
//! functions of the element types and the problem. The plan in `cuda.rs` is the mechanism.

use super::lookback::LookbackLayout;
use crate::error::{Error, Result};
use crate::histogram::Tuning;
use crate::reduce::ElementType;

crate::kernel_codes! {
    /// The scan kernels' operations (`TALLY_SCAN`).
    pub enum ScanKernelOp as "TALLY_SCAN" {
        /// Sum.
        Sum,
        /// Running minimum.
        Min,
        /// Running maximum.
        Max,
        /// A caller's C++ expression.
        Custom,
    }
}

/// Threads per block of the scan kernels unless tuned.
pub const BLOCK_THREADS: u32 = 128;

/// What the plan launches and reserves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanPolicy {
    /// Threads per block.
    pub block_threads: u32,
    /// 16-byte input loads per thread and tile (rows of the tile).
    pub vecs: u32,
    /// Blocks per multiprocessor the kernel is compiled for (`__launch_bounds__`).
    pub min_blocks: u32,
    /// Elements per tile.
    pub tile: u64,
    /// The tiles (= blocks) of the launch and their look-back states in the workspace.
    pub states: LookbackLayout,
}

impl ScanPolicy {
    /// What the kernel is specialised for: threads per block, rows per tile, blocks per
    /// multiprocessor.
    pub fn shape(&self) -> (u32, u32, u32) {
        (self.block_threads, self.vecs, self.min_blocks)
    }
}

/// Rows per tile for inputs of `size` bytes in blocks of 256 threads: about 16 items per thread
/// (16-byte loads: 16 u8, 8 u16 twice, 4 f32 four times), 8 for 8-byte ones; at most 4 rows, so
/// that one warp scans the row-and-warp totals (4 rows x 8 warps). The tiles of select and the
/// run primitives.
pub fn vecs_for(size: usize) -> u32 {
    match size {
        1 => 1,
        2 => 2,
        _ => 4,
    }
}

/// Rows per scan tile for inputs of `size` bytes with the scans' 128 threads: 128 bytes of input
/// per thread for 4- and 8-byte inputs (32 f32, 16 f64), tiles of 4096 one- and two-byte items.
/// Larger tiles mean fewer tiles in flight for the look-back to cross (docs/PERF.md, v11).
pub fn scan_vecs_for(size: usize) -> u32 {
    match size {
        1 => 2,
        2 => 4,
        _ => 8,
    }
}

/// The kernel's accumulator: the output value, and for scans by key a 32-bit segment flag
/// after it (`sizeof(Acc)` in `scan.cu`); it shares a word with its status up to 4 bytes.
fn acc_bytes(out_size: usize, keyed: bool) -> (usize, bool) {
    let bytes = if keyed { (out_size + 4).next_multiple_of(out_size.max(4)) } else { out_size };
    (bytes, out_size <= 4)
}

/// The policy for `n` elements of `input` scanned (by key where `keyed`) into `output`.
pub fn policy(input: ElementType, output: ElementType, keyed: bool, n: u64, tuning: &Tuning) -> Result<ScanPolicy> {
    // Scans by key keep v10's 256 threads and 16 items per thread: at 128 x 8 they measured 10%
    // slower (docs/PERF.md, v11).
    let block_threads = tuning.scan_block_threads.unwrap_or(if keyed { 256 } else { BLOCK_THREADS });
    if ![64, 128, 256, 512].contains(&block_threads) {
        return Err(Error::invalid(format!("scan blocks of {block_threads} threads: use 64, 128, 256 or 512")));
    }
    let vecs =
        tuning.scan_vecs.unwrap_or_else(|| if keyed { vecs_for(input.size()) } else { scan_vecs_for(input.size()) });
    if vecs == 0 || vecs * (block_threads / 32) > 32 {
        return Err(Error::invalid(format!(
            "{vecs} rows per scan tile with {block_threads} threads: rows times warps must be 1 to 32"
        )));
    }
    let tile = block_threads as u64 * (16 / input.size()) as u64 * vecs as u64;
    let (acc, packed) = acc_bytes(output.size(), keyed);
    let states = LookbackLayout::new(n.div_ceil(tile), acc, packed);
    // Three blocks of 256 threads per multiprocessor where a thread's items are few (at most
    // 85 registers), else two: threads in flight to cover the loads' latency.
    let light = (16 / input.size()) * output.size() <= 16 && !keyed;
    let threads_per_sm = if light { 768 } else { 512 };
    let min_blocks = (threads_per_sm / block_threads).max(1);
    Ok(ScanPolicy { block_threads, vecs, min_blocks, tile, states })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_are_16_items_per_thread_and_states_are_small() {
        let t = Tuning::default();
        let p = policy(ElementType::F32, ElementType::F32, false, 1 << 28, &t).unwrap();
        assert_eq!((p.tile, p.states.tiles, p.states.groups, p.states.supers), (4096, 65536, 2048, 64));
        assert!(p.states.state_bytes < (1 << 20));
        let w = policy(ElementType::I32, ElementType::I64, false, (1 << 31) + 5, &t).unwrap();
        assert_eq!(w.states.tiles, (1u64 << 31).div_ceil(4096) + 1);
        assert!(w.states.state_bytes < 12 << 20);
        let keyed = policy(ElementType::F64, ElementType::F64, true, 1 << 20, &t).unwrap();
        // 36-byte slots (two 16-byte accumulators and a status): 512 tiles, 16 groups, 1 super-group.
        assert_eq!(keyed.states.state_bytes, 256 + 36 * 512 + 768 + 256);
        assert_eq!(policy(ElementType::U8, ElementType::U64, false, 1, &t).unwrap().tile, 4096);
        assert_eq!(policy(ElementType::F64, ElementType::F64, false, 1, &t).unwrap().tile, 2048);
        assert_eq!(policy(ElementType::U16, ElementType::U64, false, 0, &t).unwrap().states.tiles, 0);
    }

    #[test]
    fn tuning_changes_the_tile_within_limits() {
        let tuned = Tuning { scan_block_threads: Some(128), scan_vecs: Some(8), ..Tuning::default() };
        let p = policy(ElementType::F32, ElementType::F32, false, 1 << 20, &tuned).unwrap();
        assert_eq!((p.block_threads, p.vecs, p.tile, p.min_blocks), (128, 8, 4096, 6));
        let too_many = Tuning { scan_vecs: Some(9), ..Tuning::default() };
        assert!(policy(ElementType::F32, ElementType::F32, false, 1, &too_many).is_err());
        let odd = Tuning { scan_block_threads: Some(96), ..Tuning::default() };
        assert!(policy(ElementType::F32, ElementType::F32, false, 1, &odd).is_err());
        let d = policy(ElementType::F32, ElementType::F32, false, 1, &Tuning::default()).unwrap();
        assert_eq!((d.block_threads, d.vecs, d.min_blocks), (128, 8, 6));
        let keyed = policy(ElementType::F32, ElementType::F32, true, 1, &Tuning::default()).unwrap();
        assert_eq!((keyed.block_threads, keyed.vecs, keyed.min_blocks), (256, 4, 2));
    }
}
