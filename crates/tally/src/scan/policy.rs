//! The scan's policy on the GPU: block size, rows per tile and the tile-state layout, as pure
//! functions of the element types and the problem. The plan in `cuda.rs` is the mechanism.

use crate::reduce::ElementType;

crate::kernel_codes! {
    /// The scan kernels' operations (`TALLY_SCAN`).
    pub enum ScanKernelOp as "TALLY_SCAN" {
        /// Sum.
        Sum = 0 => "SUM",
        /// Running minimum.
        Min = 1 => "MIN",
        /// Running maximum.
        Max = 2 => "MAX",
        /// A caller's C++ expression.
        Custom = 3 => "CUSTOM",
    }
}

/// Threads per block of every scan kernel.
pub const BLOCK_THREADS: u32 = 256;

/// Tiles per group, and groups per super-group, of the deterministic look-back (a warp).
pub const GROUP: u64 = 32;

/// What the plan launches and reserves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanPolicy {
    /// Threads per block.
    pub block_threads: u32,
    /// 16-byte input loads per thread and tile (rows of the tile).
    pub vecs: u32,
    /// Elements per tile.
    pub tile: u64,
    /// Tiles (= blocks) of the launch.
    pub tiles: u64,
    /// Groups of 32 tiles.
    pub groups: u64,
    /// Super-groups of 32 groups.
    pub supers: u64,
    /// Bytes of tile state in the workspace (zeroed before each launch).
    pub state_bytes: usize,
}

/// Rows per tile for inputs of `size` bytes: about 16 items per thread for 1- to 4-byte
/// inputs (16-byte loads: 16 u8, 8 u16 twice, 4 f32 four times), 8 for 8-byte ones; at most 4
/// rows, so that one warp scans the row-and-warp totals (4 rows x 8 warps).
pub fn vecs_for(size: usize) -> u32 {
    match size {
        1 => 1,
        2 => 2,
        _ => 4,
    }
}

/// The bytes of one slot array of `count` slots: packed 64-bit words for values of up to
/// 4 bytes, else two 8-byte values and a status word per slot; rounded up to 256 bytes.
fn region_bytes(count: u64, out_size: usize) -> u64 {
    let b = if out_size <= 4 { 8 * count } else { 20 * count };
    b.next_multiple_of(256)
}

/// The policy for `n` elements of `input` scanned into `output`.
pub fn policy(input: ElementType, output: ElementType, n: u64) -> ScanPolicy {
    let vecs = vecs_for(input.size());
    let tile = BLOCK_THREADS as u64 * (16 / input.size()) as u64 * vecs as u64;
    let tiles = n.div_ceil(tile);
    let groups = tiles.div_ceil(GROUP).max(1);
    let supers = groups.div_ceil(GROUP).max(1);
    // The tile counter (256 bytes), then the tiles', groups' and super-groups' slots.
    let o = output.size();
    let state_bytes = 256 + region_bytes(tiles.max(1), o) + region_bytes(groups, o) + region_bytes(supers, o);
    ScanPolicy { block_threads: BLOCK_THREADS, vecs, tile, tiles, groups, supers, state_bytes: state_bytes as usize }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_are_16_items_per_thread_and_states_are_small() {
        let p = policy(ElementType::F32, ElementType::F32, 1 << 28);
        assert_eq!((p.tile, p.tiles, p.groups, p.supers), (4096, 65536, 2048, 64));
        assert!(p.state_bytes < (1 << 20));
        let w = policy(ElementType::I32, ElementType::I64, (1 << 31) + 5);
        assert_eq!(w.tiles, (1u64 << 31).div_ceil(4096) + 1);
        assert!(w.state_bytes < 12 << 20);
        assert_eq!(policy(ElementType::U8, ElementType::U64, 1).tile, 4096);
        assert_eq!(policy(ElementType::F64, ElementType::F64, 1).tile, 2048);
        assert_eq!(policy(ElementType::U16, ElementType::U64, 0).tiles, 0);
    }
}
