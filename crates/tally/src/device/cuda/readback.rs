//! A few result words read back from the device without a pageable copy: page-locked host words,
//! an asynchronous copy into them queued behind the work that writes them, and an event to wait
//! on. A pageable download (`Stream::download`) stages through the driver's own buffer and then
//! synchronises the whole stream; for the handful of words a reduction, a selection's count or a
//! histogram's outlier counters are, the fixed cost of that path is a visible share of a small
//! call. Here the copy is queued where it belongs in the stream and the wait is one event.
//!
//! Page-locked memory is slow to allocate (and its allocation may synchronise the device), so a
//! stream keeps the read-backs that plans give back and lends them to the next plans
//! ([`Stream::read_back`]): a plan made for one call costs no allocation after the first.

use super::Stream;
use crate::device::memory::DeviceView;
use crate::error::{driver, Error, Result};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{result, CudaContext, CudaEvent};
use std::sync::{Arc, Mutex};

/// Words a pooled read-back holds at least: enough for every plan's result (the exact f64 sum's
/// 136 words are the most), so any kept one serves any plan.
const POOLED_WORDS: usize = 256;

/// Read-backs a stream keeps for later plans at most.
const POOL_SIZE: usize = 64;

/// The read-backs a stream keeps.
pub(crate) type ReadBackPool = Arc<Mutex<Vec<Words>>>;

/// Page-locked host words that a stream's copies land in, and the event that marks the last.
pub(crate) struct Words {
    host: *mut u64,
    capacity: usize,
    /// Recorded after each queued copy (never recorded: waiting returns at once).
    event: CudaEvent,
    /// The stream the last copy was queued on (its raw handle), if any.
    last_stream: Option<usize>,
    ctx: Arc<CudaContext>,
}

// SAFETY: the host words belong to this value alone (allocated by it, freed by its drop) and are
// read only after the copy that writes them completed; the event and context handles are
// cudarc's `Send` types.
unsafe impl Send for Words {}

impl Words {
    fn new(ctx: &Arc<CudaContext>, capacity: usize) -> Result<Words> {
        ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        // SAFETY: a fresh allocation of `capacity` words (no flags: cached, as the host reads
        // it), zeroed before anything reads it and freed once, by the drop.
        let host = unsafe { result::malloc_host(capacity * 8, 0) }.map_err(driver("cuMemHostAlloc"))? as *mut u64;
        // SAFETY: as above; `host` holds `capacity` u64s.
        unsafe { std::ptr::write_bytes(host, 0, capacity) };
        // The context's own way of waiting (spinning while a core is free), as for a stream.
        let event = ctx.new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING)).map_err(driver("cuEventCreate"))?;
        Ok(Words { host, capacity, event, last_stream: None, ctx: ctx.clone() })
    }

    /// Waits for the last queued copy.
    fn synchronize(&self) -> Result<()> {
        self.event
            .synchronize()
            .map_err(|source| Error::Cuda { call: "cuEventSynchronize after the result's copy".into(), source })
    }
}

impl Drop for Words {
    fn drop(&mut self) {
        // A copy still in flight writes these words: wait for it before freeing them.
        let _ = self.event.synchronize();
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by `Words::new` with cuMemHostAlloc, freed once, nothing writes it now.
        let _ = unsafe { result::free_host(self.host as *mut std::ffi::c_void) };
    }
}

/// `len` result words read back through page-locked memory: lent by a stream's pool, given back
/// when it goes (after its last copy completed).
pub struct ReadBack {
    words: Option<Words>,
    len: usize,
    pool: ReadBackPool,
}

impl std::fmt::Debug for ReadBack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadBack").field("words", &self.len).finish()
    }
}

impl Stream {
    /// `words` page-locked host words (zero until a copy lands) to read results of work on this
    /// stream into: kept ones from this stream's pool where there are any, else new ones.
    pub fn read_back(&self, words: usize) -> Result<ReadBack> {
        let kept = {
            let mut pool = self.read_backs.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let fit = pool.iter().position(|w| w.capacity >= words);
            fit.map(|i| pool.swap_remove(i))
        };
        let mut w = match kept {
            Some(w) => w,
            None => Words::new(self.inner.context(), words.max(POOLED_WORDS))?,
        };
        // SAFETY: the kept words' last copy completed before they went back to the pool (see
        // the drop below), so nothing writes them.
        unsafe { std::ptr::write_bytes(w.host, 0, w.capacity) };
        w.last_stream = None;
        Ok(ReadBack { words: Some(w), len: words, pool: self.read_backs.clone() })
    }
}

impl ReadBack {
    fn words(&self) -> &Words {
        self.words.as_ref().expect("a read-back holds its words until it goes")
    }

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
    /// words are overwritten: read them ([`ReadBack::wait`]) before queueing the next. A copy
    /// queued on another stream than the previous one waits for the previous one first, so
    /// that the event always marks the last write of the words.
    pub fn queue(&mut self, stream: &Stream, from: &DeviceView<'_, u64>) -> Result<()> {
        if from.len() != self.len {
            return Err(Error::invalid(format!("{} words do not fit a read-back of {}", from.len(), self.len)));
        }
        if self.len == 0 {
            return Ok(());
        }
        let len = self.len;
        let w = self.words.as_mut().expect("a read-back holds its words until it goes");
        let cu = &stream.inner;
        let handle = cu.cu_stream() as usize;
        if w.last_stream.is_some_and(|s| s != handle) {
            w.synchronize()?;
        }
        // Until the event is recorded again, the last write is not marked: wait for it on any
        // error below before the words can be read or freed.
        w.last_stream = Some(handle);
        // SAFETY: the host words are `capacity >= len` page-locked u64s of this value, which it
        // keeps until the copy completed (reads and the drop wait for the event, recorded
        // below, or synchronise the stream where recording fails); the source is a live view
        // of `len` words read in the stream's order.
        let copied = unsafe {
            let dst = std::slice::from_raw_parts_mut(w.host, len);
            result::memcpy_dtoh_async(dst, from.ptr(cu).address(), cu.cu_stream())
        }
        .map_err(driver("cuMemcpyDtoHAsync"));
        let recorded = copied.and_then(|()| w.event.record(cu).map_err(driver("cuEventRecord")));
        if recorded.is_err() {
            // A copy may be in flight with no event after it: let it finish here.
            let _ = cu.synchronize();
        }
        recorded
    }

    /// Queues a copy of `from` on `stream` and waits for it: the words after all the work
    /// queued there so far (see [`ReadBack::queue`] and [`ReadBack::wait`]).
    pub fn read(&mut self, stream: &Stream, from: &DeviceView<'_, u64>) -> Result<&[u64]> {
        self.queue(stream, from)?;
        self.wait()
    }

    /// Waits for the last queued copy (and so for the work queued before it) and returns the
    /// words. An error here is a fault in that work.
    pub fn wait(&self) -> Result<&[u64]> {
        let w = self.words();
        w.synchronize()?;
        // SAFETY: `len <= capacity` initialised u64s (zeroed when lent), no longer written: the
        // copy that writes them completed, and the next one needs `&mut self`.
        Ok(unsafe { std::slice::from_raw_parts(w.host, self.len) })
    }
}

/// A plan's read-back. Plans read through `&self`, so their words sit behind a lock; one stream
/// at a time uses a plan, so nothing contends for it.
#[derive(Debug)]
pub(crate) struct PlanReadBack(Mutex<ReadBack>);

impl PlanReadBack {
    /// `words` result words lent by `stream`'s pool.
    pub(crate) fn new(stream: &Stream, words: usize) -> Result<PlanReadBack> {
        Ok(PlanReadBack(Mutex::new(stream.read_back(words)?)))
    }

    /// [`ReadBack::read`]: `from` after the work queued on `stream` so far.
    pub(crate) fn read(&self, stream: &Stream, from: &DeviceView<'_, u64>) -> Result<Vec<u64>> {
        let mut back = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        Ok(back.read(stream, from)?.to_vec())
    }
}

impl Drop for ReadBack {
    fn drop(&mut self) {
        let Some(w) = self.words.take() else { return };
        // Back to the pool only once no copy writes the words; otherwise `Words`' drop waits.
        if w.synchronize().is_err() {
            return;
        }
        let mut pool = self.pool.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if pool.len() < POOL_SIZE {
            pool.push(w);
        }
    }
}
