//! The host's half of `kernels/lookback.cuh`, the single-pass tile prefix that the scans and
//! the compaction primitives share: how many slots each level of tile states has, and how many
//! bytes of workspace they take (zeroed before every launch). The sizes here and the kernel's
//! `lookback_region_bytes` must agree.

use crate::device::workspace::Workspace;
use crate::device::{DevPtr, DeviceViewMut, Stream};
use crate::error::Result;

/// Tiles per group, and groups per super-group, of the fixed (deterministic) look-back: a warp.
pub const GROUP: u64 = 32;

/// The workspace header before the slot arrays (its first word is the tile counter).
pub const HEADER_BYTES: u64 = 256;

/// The tile states of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LookbackLayout {
    /// Tiles (= blocks) of the launch.
    pub tiles: u64,
    /// Groups of 32 tiles (at least 1).
    pub groups: u64,
    /// Super-groups of 32 groups (at least 1).
    pub supers: u64,
    /// Bytes of workspace: the header, then the tiles', groups' and super-groups' slots.
    pub state_bytes: usize,
}

impl LookbackLayout {
    /// The states for `tiles` tiles whose slots take `slot_bytes` each: 8 where the kernel
    /// traits' `Word` is a 64-bit word (an accumulator that shares it with its status), 16
    /// where it is a `Word128` (a pair: a count or a flag, and a value of up to 8 bytes).
    pub fn new(tiles: u64, slot_bytes: u64) -> Self {
        assert!(slot_bytes == 8 || slot_bytes == 16, "look-back slots are 8 or 16 bytes");
        let slot = slot_bytes;
        let region = |count: u64| (slot * count).next_multiple_of(256);
        let groups = tiles.div_ceil(GROUP).max(1);
        let supers = groups.div_ceil(GROUP).max(1);
        let state_bytes = HEADER_BYTES + region(tiles.max(1)) + region(groups) + region(supers);
        LookbackLayout { tiles, groups, supers, state_bytes: state_bytes as usize }
    }
}

impl LookbackLayout {
    /// Reserves these tile states in `workspace` for `what` and zeroes them in stream order. The
    /// address stays valid while the caller holds `workspace`, that is until it has queued the
    /// kernel.
    pub(crate) fn reserve_zeroed(
        &self,
        stream: &Stream,
        workspace: &mut Workspace,
        what: &str,
    ) -> Result<LookbackStates> {
        let mut all = workspace.reserve(stream, self.state_bytes, what)?;
        let mut states = DeviceViewMut::from(all.inner_mut().slice_mut(..self.state_bytes));
        stream.memset_zeros(&mut states)?;
        Ok(self.at(states.ptr_mut(stream.cuda_stream())))
    }

    /// What a kernel's parameters say of these states, kept at `states`.
    pub(crate) fn at(&self, states: DevPtr<u8>) -> LookbackStates {
        LookbackStates { states, tiles: self.tiles as u32, groups: self.groups as u32, supers: self.supers as u32 }
    }
}

/// What a look-back kernel's parameters say of its tile states: their zeroed workspace and the
/// number of slots of each level (the plans refuse more than `u32::MAX` tiles).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LookbackStates {
    pub states: DevPtr<u8>,
    pub tiles: u32,
    pub groups: u32,
    pub supers: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_and_bytes() {
        let l = LookbackLayout::new(65536, 8);
        assert_eq!((l.groups, l.supers), (2048, 64));
        assert_eq!(l.state_bytes as u64, 256 + 8 * 65536 + 8 * 2048 + 512);
        let wide = LookbackLayout::new(3, 16);
        assert_eq!((wide.groups, wide.supers), (1, 1));
        assert_eq!(wide.state_bytes, 256 * 4);
        let many = LookbackLayout::new(1 << 20, 16);
        assert_eq!(many.state_bytes as u64, 256 + 16 * (1 << 20) + 16 * 32768 + 16 * 1024);
        assert_eq!(LookbackLayout::new(0, 8).tiles, 0);
    }
}
