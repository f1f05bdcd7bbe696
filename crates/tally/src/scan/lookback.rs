//! The host's half of `kernels/lookback.cuh`, the single-pass tile prefix that the scans and
//! the compaction primitives share: how many slots each level of tile states has, how many
//! bytes they take (zeroed before every launch), and where a plan keeps them (`TileStates`).
//! The sizes here and the kernel's `lookback_region_bytes` must agree.

use crate::device::workspace::Workspace;
use crate::device::{DevPtr, DeviceBuffer, DeviceView, DeviceViewMut, Stream};
use crate::error::Result;

/// Tiles per group, and groups per super-group, of the fixed (deterministic) look-back: a warp.
pub const GROUP: u64 = 32;

/// The header before the slot arrays (its first word is the tile counter; the next ones a flag
/// word and two result words a primitive may keep there).
pub const HEADER_BYTES: u64 = 256;

/// Where in the header the flag word is (a u32; zeroed with the states): a checked scan's
/// overflow flag.
pub(crate) const FLAG_OFFSET: usize = 4;

/// Where in the header the two result words are (u64s, zeroed with the states): a checked
/// reduce-by-key's run count and overflow flag.
pub(crate) const RESULT_OFFSET: usize = 8;

/// The header's bytes that a kernel clears in the next set (`lookback_clear_next`): the
/// counter, the flag and the result words.
const HEADER_CLEARED: usize = RESULT_OFFSET + 16;

/// `CU_STREAM_PER_THREAD`, the driver's handle of each thread's own default stream.
const PER_THREAD_STREAM: usize = 2;

/// The tile states of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LookbackLayout {
    /// Tiles (= blocks) of the launch.
    pub tiles: u64,
    /// Groups of 32 tiles (at least 1).
    pub groups: u64,
    /// Super-groups of 32 groups (at least 1).
    pub supers: u64,
    /// Bytes of a slot: 8 or 16.
    pub slot_bytes: u64,
    /// Bytes of one set of states: the header, then the tiles', groups' and super-groups' slots.
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
        LookbackLayout { tiles, groups, supers, slot_bytes, state_bytes: state_bytes as usize }
    }

    /// The byte ranges of a set that a launch reads: the tile counter, the flag and the result
    /// words, then each level's slots.
    fn read_ranges(&self) -> [std::ops::Range<usize>; 4] {
        let slot = self.slot_bytes as usize;
        let region = |count: u64| (self.slot_bytes * count).next_multiple_of(256) as usize;
        let level0 = HEADER_BYTES as usize;
        let level1 = level0 + region(self.tiles.max(1));
        let level2 = level1 + region(self.groups);
        [
            0..HEADER_CLEARED,
            level0..level0 + slot * self.tiles as usize,
            level1..level1 + slot * self.groups as usize,
            level2..level2 + slot * self.supers as usize,
        ]
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

    /// What a kernel's parameters say of these states, kept at `states` (no other set to clear).
    pub(crate) fn at(&self, states: DevPtr<u8>) -> LookbackStates {
        LookbackStates {
            states,
            next: DevPtr::default(),
            tiles: self.tiles as u32,
            groups: self.groups as u32,
            supers: self.supers as u32,
        }
    }
}

/// What a look-back kernel's parameters say of its tile states: the zeroed states this launch
/// uses, the set it zeroes for the plan's next launch (null for none) and the number of slots
/// of each level (the plans refuse more than `u32::MAX` tiles).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LookbackStates {
    pub states: DevPtr<u8>,
    pub next: DevPtr<u8>,
    pub tiles: u32,
    pub groups: u32,
    pub supers: u32,
}

impl LookbackStates {
    /// Where a launch from a kept set (one that clears a next set) may keep words in the
    /// header, `offset` bytes in ([`FLAG_OFFSET`], [`RESULT_OFFSET`]): zeroed with the set, so
    /// the launch needs no memset of words of its own, and read back from the set it used
    /// ([`TileStates::read_flag`], [`TileStates::result_words`]). None for states from the
    /// workspace, which other calls may write before the read.
    pub(crate) fn kept_header<U>(&self, offset: usize) -> Option<DevPtr<U>> {
        (self.next.address() != 0).then(|| self.states.offset(offset as u64).cast())
    }
}

/// A plan's tile states. Its first launch takes them from the stream's workspace and zeroes
/// them with a memset, as a plan made for one call needs nothing more; from its second launch
/// the plan keeps two sets of its own, and each launch uses the set the one before zeroed and
/// zeroes the other in its kernel (`lookback_clear_next`), so that a call is one launch rather
/// than a memset and a launch (docs/PERF.md, v34; the histogram's small counters do the same
/// since v29). The kept sets cannot live in the workspace: other calls write there between
/// this plan's launches.
///
/// The sets belong to one stream: two launches on different streams could otherwise overlap,
/// one zeroing the states the other is using. A launch on another stream than the last one
/// drops the kept sets (their frees queue on the stream they were made on, behind its work)
/// and starts again from the workspace; so does every launch on the per-thread default stream
/// (whose one handle names another stream on each thread), and a launch whose sets cannot be
/// allocated. The sets are allocated on the launch's stream: a stream borrowed through
/// [`Stream::from_raw`] must outlive the plans launched on it more than once.
#[derive(Debug)]
pub(crate) struct TileStates {
    layout: LookbackLayout,
    /// The stream of the last launch (its handle's address), while it has one.
    stream: Option<usize>,
    /// From the second launch on one stream: `[the set the next launch uses, the other]`, in
    /// u64s, so that the result words in the header can be read as such.
    kept: Option<[DeviceBuffer<u64>; 2]>,
    /// Whether the last launch was queued whole, and so zeroes `kept[0]` before the next runs.
    next_zeroed: bool,
}

impl TileStates {
    pub(crate) fn new(layout: LookbackLayout) -> Self {
        TileStates { layout, stream: None, kept: None, next_zeroed: false }
    }

    /// The zeroed states for a launch on `stream` (from `workspace` for a plan's first launch:
    /// the caller holds it until the kernel is queued) and the set that launch clears. The
    /// caller reports a launch queued whole through [`TileStates::queued`].
    pub(crate) fn for_launch(
        &mut self,
        stream: &Stream,
        workspace: &mut Workspace,
        what: &str,
    ) -> Result<LookbackStates> {
        let this_stream = stream.cuda_stream().cu_stream() as usize;
        // The per-thread default stream's handle names another stream on every thread: a plan
        // launched on it keeps no sets, as no launch can tell whether the last ran on its stream.
        let known = this_stream != PER_THREAD_STREAM;
        if !known || self.stream.replace(this_stream) != Some(this_stream) {
            self.stream = self.stream.filter(|_| known);
            self.kept = None;
            self.next_zeroed = false;
            return self.layout.reserve_zeroed(stream, workspace, what);
        }
        // A whole number of u64s: the layout's regions are multiples of 256 bytes.
        let words = self.layout.state_bytes / 8;
        if self.kept.is_none() {
            // Where the sets cannot be had (device memory short), the workspace serves, as for
            // a first launch: a plan that launched once launches again.
            match (stream.alloc::<u64>(words, what), stream.alloc::<u64>(words, what)) {
                (Ok(a), Ok(b)) => self.kept = Some([a, b]),
                _ => return self.layout.reserve_zeroed(stream, workspace, what),
            }
            self.next_zeroed = false;
        }
        let kept = self.kept.as_mut().expect("allocated above");
        if !std::mem::replace(&mut self.next_zeroed, false) {
            stream.memset_zeros(&mut kept[0].view_mut())?;
        }
        let cu = stream.cuda_stream();
        let states = kept[0].view_mut().ptr_mut(cu).cast();
        let next = kept[1].view_mut().ptr_mut(cu).cast();
        kept.swap(0, 1);
        Ok(LookbackStates { next, ..self.layout.at(states) })
    }

    /// The launch that [`TileStates::for_launch`] prepared was queued: it zeroes the set the
    /// next launch uses (where it had one to clear).
    pub(crate) fn queued(&mut self, states: &LookbackStates) {
        self.next_zeroed = states.next.address() != 0;
    }

    /// Waits for `stream` and reads the header's second word (bytes 4 to 8: [`FLAG_OFFSET`])
    /// of the set the last launch used, where it used a kept set (`states.next` not null): a
    /// word zeroed with the states, which a primitive's kernel may set (a checked scan's
    /// overflow flag), so that a launch needs no memset of a flag of its own.
    pub(crate) fn read_flag(&self, stream: &Stream) -> Result<u32> {
        // The flag is the upper half of the header's first u64 (bytes 4 to 8, little-endian).
        const { assert!(FLAG_OFFSET == 4) };
        let word = self.last_set()?.slice(0..1).expect("the header holds the flag");
        Ok((stream.download(&word)?[0] >> 32) as u32)
    }

    /// The header's two result words ([`RESULT_OFFSET`]) of the set the last launch used, where
    /// it used a kept set: words zeroed with the states, which a primitive's kernel may write (a
    /// checked reduce-by-key's run count and overflow flag), so that a launch needs no memset of
    /// result words of its own.
    pub(crate) fn result_words(&self) -> Result<DeviceView<'_, u64>> {
        let words = RESULT_OFFSET / 8..RESULT_OFFSET / 8 + 2;
        Ok(self.last_set()?.slice(words).expect("the header holds the result words"))
    }

    /// The set the last launch used, where it used a kept one.
    fn last_set(&self) -> Result<&DeviceBuffer<u64>> {
        match &self.kept {
            Some(kept) => Ok(&kept[1]),
            None => Err(crate::error::Error::invalid("no launch from kept tile states to read the header of")),
        }
    }

    /// For tests: waits for `stream` and says whether the set the next launch will use without
    /// a memset is zero wherever a launch reads it (the counter, the flag and result words and
    /// each level's slots); `None` where the next launch zeroes its states itself (before a plan's second
    /// launch on a stream, or after a launch that was not queued whole).
    pub(crate) fn next_set_is_zeroed(&self, stream: &Stream) -> Result<Option<bool>> {
        let Some(kept) = self.kept.as_ref().filter(|_| self.next_zeroed) else { return Ok(None) };
        let bytes: Vec<u8> = stream.download(&kept[0].view())?.iter().flat_map(|w| w.to_le_bytes()).collect();
        Ok(Some(self.layout.read_ranges().into_iter().all(|r| bytes[r].iter().all(|&b| b == 0))))
    }
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
        assert_eq!(wide.read_ranges(), [0..24, 256..304, 512..528, 768..784]);
        let many = LookbackLayout::new(1 << 20, 16);
        assert_eq!(many.state_bytes as u64, 256 + 16 * (1 << 20) + 16 * 32768 + 16 * 1024);
        assert_eq!(LookbackLayout::new(0, 8).tiles, 0);
    }
}
