//! The select kernels' policy: block size, rows per tile, the tile-state layout and the count
//! kernel's grid, as pure functions of the element type, the problem and the device.

use crate::device::DeviceInfo;
use crate::error::{Error, Result};
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

/// Threads per block.
pub const BLOCK_THREADS: u32 = 256;

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

/// The policy for `n` elements of `elem`: 16 items per thread for 1- to 4-byte types (as the
/// scans), 8 for 8-byte ones, three blocks of 256 threads per multiprocessor.
pub fn policy(elem: ElementType, n: u64) -> Result<SelectPolicy> {
    let block_threads = BLOCK_THREADS;
    let vecs = crate::scan::policy::vecs_for(elem.size());
    let tile = block_threads as u64 * (16 / elem.size()) as u64 * vecs as u64;
    let states = LookbackLayout::new(n.div_ceil(tile), 8, true);
    if states.tiles > u32::MAX as u64 {
        return Err(Error::invalid(format!("a selection of {n} elements has more tiles than a launch can number")));
    }
    Ok(SelectPolicy { block_threads, vecs, min_blocks: 3, tile, states })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_and_states() {
        let p = policy(ElementType::F32, 1 << 28).unwrap();
        assert_eq!((p.tile, p.states.tiles, p.shape()), (4096, 65536, (256, 4, 3)));
        assert_eq!(policy(ElementType::U8, 4097).unwrap().states.tiles, 2);
        assert_eq!(policy(ElementType::F64, 2048).unwrap().states.tiles, 1);
        assert_eq!(policy(ElementType::I16, 0).unwrap().states.tiles, 0);
        let huge = policy(ElementType::U8, 5 << 30).unwrap();
        assert_eq!(huge.states.tiles, (5u64 << 30) / 4096);
        let info = DeviceInfo::h200();
        assert_eq!(policy(ElementType::F32, 10).unwrap().count_grid(&info), 1);
        assert_eq!(p.count_grid(&info), 132 * 3 * 2);
    }
}
