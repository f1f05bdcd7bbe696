//! A few result words read back from the device without a pageable copy: page-locked host words,
//! an asynchronous copy into them queued behind the work that writes them, and an event to wait
//! on. A pageable download (`Stream::download`) stages through the driver's own buffer and then
//! synchronises the whole stream; for the handful of words a reduction, a selection's count or a
//! histogram's outlier counters are, the fixed cost of that path is a visible share of a small
//! call. Here the copy is queued where it belongs in the stream and the wait is one event.
//!
//! A kernel may also post its result words into the same memory itself (mapped, so the device
//! writes it directly): the words, then a sequence number behind a system-scope fence
//! (`post_to_host` in `block.cuh`), which the host polls ([`ReadBack::wait_posted`]). The host
//! then learns the result as soon as the block that finished it has stored it, without the
//! copy queued after the launch (which starts only once the whole grid has retired) and the
//! event after that: on an H100, a probe's one-pass sum of 2^20 floats took 18.4 us from launch
//! to result with the copy and 10.2 us polled, tally's f32 sum 18.4-19.0 us before and 11.0-11.3
//! us after (docs/PERF.md, v26). A post is seen before the grid retires, so the kernel must
//! store nothing after it that the host or later work depends on. Word 0 of the host words holds
//! the sequence number; the result words follow it, however they came back.
//!
//! Page-locked memory is slow to allocate (and its allocation may synchronise the device), so a
//! stream keeps the read-backs that plans give back and lends them to the next plans
//! ([`Stream::read_back`]): a plan made for one call costs no allocation after the first.

use super::Stream;
use crate::device::memory::DevPtr;
use crate::device::memory::DeviceView;
use crate::error::{driver, Error, Result};
use cudarc::driver::sys::{self, CUevent_flags};
use cudarc::driver::{result, CudaContext, CudaEvent};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Words a pooled read-back holds at least (one 4 KiB page): enough for every plan's result (a
/// small histogram's posted counters, at most [`POSTED_WORDS_MAX`], are the most), so any kept
/// one serves any plan.
const POOLED_WORDS: usize = 512;

/// Read-backs a stream keeps for later plans at most.
const POOL_SIZE: usize = 64;

/// The read-backs a stream keeps.
pub(crate) type ReadBackPool = Arc<Mutex<Vec<Words>>>;

/// Word 0 of the host words: the sequence number of the last post. The result words follow.
const FIRST_WORD: usize = 1;

/// The most result words a plan's read-back should hold, so that a kept one always serves it.
pub(crate) const POSTED_WORDS_MAX: usize = POOLED_WORDS - FIRST_WORD;

/// How long a wait polls a posted result before it blocks on the launch's event instead (a
/// long kernel should not keep a core busy).
const POLL_LIMIT: std::time::Duration = std::time::Duration::from_millis(2);

/// Page-locked host words that a stream's copies land in, and the event that marks the last.
pub(crate) struct Words {
    host: *mut u64,
    /// The device's address of the same memory (mapped), for kernels that post into it; None
    /// where the driver gives none.
    device: Option<u64>,
    /// The sequence number of the last post handed out.
    sequence: u64,
    capacity: usize,
    /// Recorded after each queued copy and each posting launch (never recorded: waiting returns
    /// at once).
    event: CudaEvent,
    /// The stream the last copy or posting launch was queued on (its raw handle), if any.
    last_stream: Option<usize>,
    /// Whether the last copy or post is known to have landed (waited for, or its number seen):
    /// nothing on the device writes the words any more, so they may go back to the pool
    /// without waiting for the event (a posting kernel writes nothing after its number).
    settled: bool,
    ctx: Arc<CudaContext>,
}

// SAFETY: the host words belong to this value alone (allocated by it, freed by its drop); the
// result words are read only after the copy or post that writes them landed, and word 0 while a
// post may land only atomically (`ReadBack::wait_posted`); the event and context handles are
// cudarc's `Send` types.
unsafe impl Send for Words {}

impl Words {
    fn new(ctx: &Arc<CudaContext>, capacity: usize) -> Result<Words> {
        ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        // SAFETY: a fresh allocation of `capacity` words (cached, as the host reads it; mapped
        // into the device's address space for posts), zeroed before anything reads it and freed
        // once, by the drop.
        let host = unsafe { result::malloc_host(capacity * 8, sys::CU_MEMHOSTALLOC_DEVICEMAP) }
            .map_err(driver("cuMemHostAlloc"))? as *mut u64;
        // SAFETY: as above; `host` holds `capacity` u64s.
        unsafe { std::ptr::write_bytes(host, 0, capacity) };
        let mut device: sys::CUdeviceptr = 0;
        // SAFETY: `host` is a live mapped allocation of this context; the driver writes one
        // address into `device`.
        let mapped = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host.cast(), 0) }.result();
        let device = mapped.ok().map(|()| device as u64).filter(|&d| d != 0);
        // The context's own way of waiting (spinning while a core is free), as for a stream.
        let event = ctx.new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING)).map_err(driver("cuEventCreate"))?;
        Ok(Words { host, device, sequence: 0, capacity, event, last_stream: None, settled: true, ctx: ctx.clone() })
    }

    /// Waits for the last queued copy or posting launch.
    fn synchronize(&self) -> Result<()> {
        self.event.synchronize().map_err(|source| Error::Cuda {
            call: "cuEventSynchronize after the work that writes the result".into(),
            source,
        })
    }
}

impl Drop for Words {
    fn drop(&mut self) {
        // A copy or post still in flight writes these words: wait for it before freeing them.
        let _ = self.event.synchronize();
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by `Words::new` with cuMemHostAlloc, freed once, nothing writes it now.
        let _ = unsafe { result::free_host(self.host as *mut std::ffi::c_void) };
    }
}

/// `len` result words read back through page-locked memory: lent by a stream's pool, given back
/// when it goes (after its last copy or post landed).
pub struct ReadBack {
    words: Option<Words>,
    len: usize,
    /// The result words the last copy or post wrote (`len` until one lands: zeros): `len`, or
    /// fewer for a plan's copy of the words it does not post (`ReadBack::queue_prefix`).
    filled: usize,
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
            let fit = pool.iter().position(|w| w.capacity >= FIRST_WORD + words);
            fit.map(|i| pool.swap_remove(i))
        };
        let mut w = match kept {
            Some(w) => w,
            None => Words::new(self.inner.context(), (FIRST_WORD + words).max(POOLED_WORDS))?,
        };
        // SAFETY: the kept words' last copy or post landed before they went back to the pool
        // (see the drop below), so nothing writes them. Their sequence goes on from where it
        // was, so no post of an earlier owner matches a number this one waits for.
        unsafe { std::ptr::write_bytes(w.host, 0, w.capacity) };
        w.last_stream = None;
        Ok(ReadBack { words: Some(w), len: words, filled: words, pool: self.read_backs.clone() })
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
        self.queue_prefix(stream, from)
    }

    /// [`ReadBack::queue`] of fewer words than this holds, into the first ones: for a plan
    /// whose posts carry more words than it copies (a histogram's counters beside its
    /// outliers); the next [`ReadBack::wait`] returns `from.len()` words.
    pub(crate) fn queue_prefix(&mut self, stream: &Stream, from: &DeviceView<'_, u64>) -> Result<()> {
        if from.len() > self.len {
            return Err(Error::invalid(format!("{} words do not fit a read-back of {}", from.len(), self.len)));
        }
        self.filled = from.len();
        if from.is_empty() {
            return Ok(());
        }
        let len = from.len();
        let w = self.words.as_mut().expect("a read-back holds its words until it goes");
        let cu = &stream.inner;
        // The raw copy runs in the thread's current context: the stream's, which another
        // device's work (a device set's) may have replaced.
        cu.context().bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        let handle = cu.cu_stream() as usize;
        if w.last_stream.is_some_and(|s| s != handle) {
            w.synchronize()?;
        }
        // Until the event is recorded again, the last write is not marked: wait for it on any
        // error below before the words can be read or freed.
        w.last_stream = Some(handle);
        w.settled = false;
        // SAFETY: the host words are `capacity >= len` page-locked u64s of this value, which it
        // keeps until the copy completed (reads and the drop wait for the event, recorded
        // below, or synchronise the stream where recording fails); the source is a live view
        // of `len` words read in the stream's order.
        let copied = unsafe {
            let dst = std::slice::from_raw_parts_mut(w.host.add(FIRST_WORD), len);
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
    /// words it copied. An error here is a fault in that work.
    pub fn wait(&mut self) -> Result<&[u64]> {
        let w = self.words.as_mut().expect("a read-back holds its words until it goes");
        w.synchronize()?;
        w.settled = true;
        Ok(self.result_words())
    }

    /// The result words after word 0 that the last copy or post wrote.
    fn result_words(&self) -> &[u64] {
        let w = self.words();
        // SAFETY: `FIRST_WORD + filled <= FIRST_WORD + len <= capacity` initialised u64s (zeroed
        // when lent), no longer written: the copy or post that writes them completed (the
        // callers waited for it), and the next one needs `&mut self`.
        unsafe { std::slice::from_raw_parts(w.host.add(FIRST_WORD), self.filled) }
    }

    /// Where the next launch may post its result words ([`PostTarget`]), or None where the
    /// words are not mapped into the device's address space. The caller queues that launch on
    /// `stream` at once, passing the target to the kernel, and then calls
    /// [`ReadBack::posted`]; [`ReadBack::wait_posted`] waits for the words.
    pub(crate) fn post_target(&mut self, stream: &Stream) -> Result<Option<PostTarget>> {
        let w = self.words.as_mut().expect("a read-back holds its words until it goes");
        let Some(device) = w.device else { return Ok(None) };
        // As for a copy: the event must go on marking the last write of the words.
        if w.last_stream.is_some_and(|s| s != stream.inner.cu_stream() as usize) {
            w.synchronize()?;
        }
        w.sequence += 1;
        // A post writes every word.
        self.filled = self.len;
        Ok(Some(PostTarget { words: DevPtr::mapped_host(device), sequence: w.sequence }))
    }

    /// Marks the launch just queued on `stream` with the event, after a [`ReadBack::post_target`]:
    /// what a wait checks for faults, and what the words wait for before they are freed or lent
    /// again.
    pub(crate) fn posted(&mut self, stream: &Stream) -> Result<()> {
        let w = self.words.as_mut().expect("a read-back holds its words until it goes");
        let cu = &stream.inner;
        w.last_stream = Some(cu.cu_stream() as usize);
        w.settled = false;
        let recorded = w.event.record(cu).map_err(driver("cuEventRecord"));
        if recorded.is_err() {
            let _ = cu.synchronize();
        }
        recorded
    }

    /// Waits until the launch that took `target` has posted its words, and returns them. Polls
    /// word 0 for the target's sequence number; checks the launch's event now and then (a fault
    /// in the launch is an error here) and blocks on it after `POLL_LIMIT`. It returns once the
    /// words are there, which may be before the launch has retired (the kernel writes nothing
    /// after them) and before work queued after it on the stream.
    pub(crate) fn wait_posted(&mut self, target: PostTarget) -> Result<&[u64]> {
        let w = self.words.as_mut().expect("a read-back holds its words until it goes");
        // SAFETY: word 0 is a live, aligned u64 of this value's page-locked memory; the device
        // writes it only as a whole word (after the result words, behind a system fence), so
        // reading it atomically sees either the old or the new number.
        let sequence = unsafe { AtomicU64::from_ptr(w.host) };
        let arrived = || sequence.load(Ordering::Acquire) == target.sequence;
        let start = std::time::Instant::now();
        let mut spins = 0u32;
        while !arrived() {
            spins = spins.wrapping_add(1);
            if !spins.is_multiple_of(256) {
                std::hint::spin_loop();
                continue;
            }
            let done = w
                .event
                .try_is_complete()
                .map_err(|source| Error::Cuda { call: "a kernel that posts its result".into(), source })?;
            if done || start.elapsed() > POLL_LIMIT {
                w.synchronize()?;
                if !arrived() {
                    return Err(Error::invalid(
                        "the kernel completed without posting its result (no block finished the reduction)",
                    ));
                }
                break;
            }
        }
        w.settled = true;
        Ok(self.result_words())
    }
}

/// Where a kernel posts its result words: the device's address of a read-back's mapped host
/// words, and the number the kernel writes to word 0 after the words.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PostTarget {
    pub words: DevPtr<u64>,
    pub sequence: u64,
}

/// A plan's read-back. Plans read through `&self`, so their words sit behind a lock; one stream
/// at a time uses a plan, so nothing contends for it.
#[derive(Debug)]
pub(crate) struct PlanReadBack(Mutex<PlanWords>);

#[derive(Debug)]
struct PlanWords {
    back: ReadBack,
    /// The words a read copies where the launch did not post (the first ones; a post may carry
    /// more).
    copied: usize,
    /// The post of the last launch, until it is read.
    pending: Option<PostTarget>,
}

impl PlanReadBack {
    /// `words` result words lent by `stream`'s pool, posted or copied alike.
    pub(crate) fn new(stream: &Stream, words: usize) -> Result<PlanReadBack> {
        PlanReadBack::with_posted(stream, words, 0)
    }

    /// `copied` result words, and `posted` more that only a post carries (a histogram's
    /// counters beside its outlier counters).
    pub(crate) fn with_posted(stream: &Stream, copied: usize, posted: usize) -> Result<PlanReadBack> {
        let back = stream.read_back(copied + posted)?;
        Ok(PlanReadBack(Mutex::new(PlanWords { back, copied, pending: None })))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PlanWords> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues a launch on `stream` that posts its result words: `launch` gets where to post
    /// them (None where the words are not mapped: then it posts nothing) and queues the kernel;
    /// the next [`PlanReadBack::read`] waits for the post.
    pub(crate) fn launch_posting(
        &self,
        stream: &Stream,
        launch: impl FnOnce(Option<PostTarget>) -> Result<()>,
    ) -> Result<()> {
        let mut plan = self.lock();
        plan.pending = None;
        let target = plan.back.post_target(stream)?;
        launch(target)?;
        if let Some(target) = target {
            plan.back.posted(stream)?;
            plan.pending = Some(target);
        }
        Ok(())
    }

    /// Whether the last launch posts its words for the next read.
    pub(crate) fn has_post(&self) -> bool {
        self.lock().pending.is_some()
    }

    /// Forgets the post of an earlier launch: the next launch writes the device's words only,
    /// so a read must copy them.
    pub(crate) fn forget_post(&self) {
        self.lock().pending = None;
    }

    /// The words of the last launch: its post where it made one (and it was not read yet),
    /// which may come before the launch has retired: every word the read-back holds;
    /// otherwise a copy of `from` (the copied words, exactly) after the work queued on
    /// `stream` so far: those words alone.
    pub(crate) fn read(&self, stream: &Stream, from: &DeviceView<'_, u64>) -> Result<Vec<u64>> {
        let mut plan = self.lock();
        if from.len() != plan.copied {
            return Err(Error::invalid(format!(
                "{} words read into a plan's {} copied words",
                from.len(),
                plan.copied
            )));
        }
        if let Some(target) = plan.pending.take() {
            return Ok(plan.back.wait_posted(target)?.to_vec());
        }
        plan.back.queue_prefix(stream, from)?;
        Ok(plan.back.wait()?.to_vec())
    }
}

impl Drop for ReadBack {
    fn drop(&mut self) {
        let Some(w) = self.words.take() else { return };
        // Back to the pool only once no copy or post writes the words (a post whose number was
        // seen has landed: its kernel writes nothing after it); otherwise `Words`' drop waits.
        if !w.settled && w.synchronize().is_err() {
            return;
        }
        let mut pool = self.pool.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if pool.len() < POOL_SIZE {
            pool.push(w);
        }
    }
}
