//! A few result words read back from the device without a pageable copy: page-locked host words,
//! an asynchronous copy into them queued behind the work that writes them, and an event to wait
//! on. A pageable download (`Stream::download`) stages through the driver's own buffer and then
//! synchronises the whole stream; for the handful of words a reduction or a histogram's outlier
//! counters are, the fixed cost of that path is a visible share of a small call. Here the copy is
//! queued where it belongs in the stream, work queued after it (a copy of counters into a caller's
//! array) does not delay the wait, and the wait is one event.

use super::Stream;
use crate::device::memory::DeviceView;
use crate::error::{driver, Error, Result};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{result, CudaContext, CudaEvent};
use std::sync::Arc;

/// Page-locked host words that a stream's copies land in, and the event that marks the last.
pub struct ReadBack {
    host: *mut u64,
    len: usize,
    /// Recorded after each queued copy (never recorded: waiting returns at once).
    event: CudaEvent,
    ctx: Arc<CudaContext>,
}

// SAFETY: the host words belong to this value alone (allocated by it, freed by its drop) and are
// read only through `wait`, after the copy that writes them completed; the event and context
// handles are cudarc's `Send` types.
unsafe impl Send for ReadBack {}

impl std::fmt::Debug for ReadBack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadBack").field("words", &self.len).finish()
    }
}

impl Stream {
    /// `words` page-locked host words (zeroed) to read results of this stream's work into.
    pub fn read_back(&self, words: usize) -> Result<ReadBack> {
        let ctx = self.inner.context().clone();
        ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        let len = words.max(1);
        // SAFETY: a fresh allocation of `len` words (no flags: cached, as the host reads it),
        // zeroed before anything reads it and freed once, by the drop.
        let host = unsafe { result::malloc_host(len * 8, 0) }.map_err(driver("cuMemHostAlloc"))? as *mut u64;
        // SAFETY: as above; `host` holds `len` u64s.
        unsafe { std::ptr::write_bytes(host, 0, len) };
        // The context's own way of waiting (spinning while a core is free), as for a stream.
        let event = ctx.new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING)).map_err(driver("cuEventCreate"))?;
        Ok(ReadBack { host, len: words, event, ctx })
    }
}

impl ReadBack {
    /// Words held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no words.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Queues on `stream` a copy of `from` (as many words as this holds) into the host words,
    /// behind the work already queued there, and marks it with the event. The previous copy's
    /// words are overwritten: read them ([`ReadBack::wait`]) before queueing the next.
    pub fn queue(&mut self, stream: &Stream, from: &DeviceView<'_, u64>) -> Result<()> {
        if from.len() != self.len {
            return Err(Error::invalid(format!("{} words do not fit a read-back of {}", from.len(), self.len)));
        }
        if self.len == 0 {
            return Ok(());
        }
        let cu = &stream.inner;
        // SAFETY: the host words are this value's `len` page-locked u64s, which it keeps until
        // the copy completed (the drop waits for the event); the source is a live view of `len`
        // words read in the stream's order.
        unsafe {
            let dst = std::slice::from_raw_parts_mut(self.host, self.len);
            result::memcpy_dtoh_async(dst, from.ptr(cu).address(), cu.cu_stream())
        }
        .map_err(driver("cuMemcpyDtoHAsync"))?;
        self.event.record(cu).map_err(driver("cuEventRecord"))
    }

    /// Waits for the last queued copy (and so for the work queued before it) and returns the
    /// words. An error here is a fault in that work.
    pub fn wait(&self) -> Result<&[u64]> {
        self.event
            .synchronize()
            .map_err(|source| Error::Cuda { call: "cuEventSynchronize after the result's copy".into(), source })?;
        // SAFETY: `len` initialised u64s (zeroed at allocation), no longer written: the copy that
        // writes them completed, and the next one needs `&mut self`.
        Ok(unsafe { std::slice::from_raw_parts(self.host, self.len) })
    }
}

impl Drop for ReadBack {
    fn drop(&mut self) {
        // A copy still in flight writes these words: wait for it before freeing them.
        let _ = self.event.synchronize();
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by `read_back` with cuMemHostAlloc, freed once, nothing writes it now.
        let _ = unsafe { result::free_host(self.host as *mut std::ffi::c_void) };
    }
}
