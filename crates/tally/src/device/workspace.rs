//! The scratch workspace: temporary device memory that primitives borrow for the length of one
//! call and that is kept for the next (a reduction's per-block partials, a scan's look-back
//! state). One per stream, so that reuse is ordered by the stream: a later call's kernels run
//! after the earlier call's are done with the memory. Bounded and reported, never silently huge.

use super::cuda::Stream;
use super::memory::{DeviceBuffer, DeviceViewMut};
use crate::error::{Error, Result};

/// Scratch space of one stream.
pub struct Workspace {
    buffer: Option<DeviceBuffer<u8>>,
    limit: usize,
    peak: usize,
}

/// Offsets of typed arrays in a scratch allocation: each starts on a 256-byte boundary.
#[derive(Clone, Copy, Debug, Default)]
pub struct ScratchLayout {
    bytes: usize,
}

impl ScratchLayout {
    /// Reserves `count` elements of `T`; returns their byte offset.
    pub fn push<T>(&mut self, count: usize) -> usize {
        let offset = self.bytes.next_multiple_of(256);
        self.bytes = offset + count.max(1) * std::mem::size_of::<T>();
        offset
    }

    /// Bytes the layout spans.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Workspace {
    /// The default cap: an eighth of the device's memory.
    pub(crate) fn default_limit(total_memory: usize) -> usize {
        total_memory / 8
    }

    pub(crate) fn new(limit: usize) -> Self {
        Workspace { buffer: None, limit, peak: 0 }
    }

    /// Bytes held now.
    pub fn capacity(&self) -> usize {
        self.buffer.as_ref().map_or(0, |b| b.len())
    }

    /// The most bytes it may hold.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The largest request so far.
    pub fn peak(&self) -> usize {
        self.peak
    }

    pub(crate) fn set_limit(&mut self, bytes: usize) {
        self.limit = bytes;
        if self.capacity() > bytes {
            self.buffer = None;
        }
    }

    /// At least `bytes` of scratch for `what`, its contents undefined. Grows (at least doubling,
    /// up to the limit) when too small.
    pub(crate) fn reserve(&mut self, stream: &Stream, bytes: usize, what: &str) -> Result<DeviceViewMut<'_, u8>> {
        if bytes > self.limit {
            return Err(Error::invalid(format!(
                "{what} needs {bytes} bytes of scratch, more than the workspace limit of {} bytes",
                self.limit
            )));
        }
        self.peak = self.peak.max(bytes);
        if self.capacity() < bytes {
            let grown = bytes.max(2 * self.capacity()).min(self.limit).max(bytes);
            // Free the old buffer first, so that peak memory is the new size alone.
            self.buffer = None;
            self.buffer = Some(stream.alloc::<u8>(grown, "workspace")?);
        }
        Ok(self.buffer.as_mut().expect("allocated above").view_mut())
    }
}
