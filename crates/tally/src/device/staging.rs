//! Out-of-core input: host data streamed to the device in chunks through pinned staging
//! buffers, the copy of each chunk overlapping the kernels of the ones before it.
//!
//! A [`ChunkPipeline`] holds N (2 to 8, by default 2) slots, each a pinned host buffer and a
//! device buffer of one chunk, and a copy stream beside the device's default (compute) stream.
//! For chunk `k` in slot `k % N`, the host waits until the slot's previous copy has finished
//! (its `copied` event) before refilling the pinned buffer; the copy stream waits until the
//! slot's previous kernels have finished (its `consumed` event) before overwriting the device
//! buffer; the compute stream waits for the copy before the chunk's kernels. So while the
//! kernels of chunk `k` run, chunk `k + 1` is on its way and chunk `k + 2` is being read, and
//! the host never waits for the device except for a free slot.
//!
//! The primitives combine across chunks in their own `stream` modules: each gets the chunk on
//! the device and the index of its first element (`on_chunk`), which is also where a scan's
//! carry or a selection's output offset would go.

mod source;

pub use source::{ChunkSource, FileSource, PlainData, ReadSource, SliceSource};

use super::cuda::{CudaDevice, Stream};
use super::memory::{DeviceBuffer, DeviceView};
use crate::error::{driver, Error, Result};
use crate::histogram::Tuning;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, PinnedHostSlice};
use serde::Serialize;
use std::sync::Arc;

/// Bytes of one chunk unless tuned (`TALLY_STREAM_CHUNK`): large enough that a copy's fixed
/// cost (a few microseconds) is lost in its transfer time, small enough that the slots take
/// little memory.
pub const DEFAULT_CHUNK_BYTES: usize = 64 << 20;

/// Slots (pinned and device buffer pairs) unless tuned (`TALLY_STREAM_BUFFERS`): one being
/// filled on the host while the other is copied and counted. Measured on an H200 from host
/// memory (docs/PERF.md, v13): 64 MiB chunks in two slots streamed 256-bin histograms at
/// 92.8-94.4% of the pinned upload, three slots at 83.7-86.3%.
pub const DEFAULT_BUFFERS: usize = 2;

/// The most elements in one chunk: plans index a chunk with 32-bit counters.
pub const MAX_CHUNK_ELEMENTS: usize = 1 << 30;

/// How a stream is cut: what [`chunk_layout`] decides and the streamed calls report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ChunkLayout {
    /// Elements per chunk (the last one may be shorter).
    pub chunk_elements: usize,
    /// Bytes of one element.
    pub element_bytes: usize,
    /// Slots: chunks in flight at once.
    pub buffers: usize,
}

impl ChunkLayout {
    /// Bytes of one chunk.
    pub fn chunk_bytes(&self) -> usize {
        self.chunk_elements * self.element_bytes
    }

    /// Chunks that `elements` make.
    pub fn chunks(&self, elements: u64) -> u64 {
        elements.div_ceil(self.chunk_elements as u64)
    }
}

/// The chunking of a stream of `input` elements (None: unknown) of `element_bytes` each, as a
/// pure function: the tuned or default chunk bytes, at most an eighth of `device_memory` for
/// all slots together (0: no device, no such bound), no more than the input needs, and a whole
/// multiple of `align` elements (a histogram of interleaved channels keeps every chunk on the
/// same channel phase).
pub fn chunk_layout(
    device_memory: usize,
    input: Option<u64>,
    element_bytes: usize,
    align: usize,
    tuning: &Tuning,
) -> ChunkLayout {
    let (element_bytes, align) = (element_bytes.max(1), align.max(1));
    let buffers = tuning.stream_buffers.unwrap_or(DEFAULT_BUFFERS).clamp(2, 8);
    let mut bytes = tuning.stream_chunk_bytes.unwrap_or(DEFAULT_CHUNK_BYTES);
    if device_memory > 0 {
        bytes = bytes.min(device_memory / 8 / buffers);
    }
    let mut elements = (bytes / element_bytes).min(MAX_CHUNK_ELEMENTS) / align * align;
    if let Some(n) = input {
        let needed = (n.min(MAX_CHUNK_ELEMENTS as u64) as usize).next_multiple_of(align);
        elements = elements.min(needed);
    }
    ChunkLayout { chunk_elements: elements.max(align), element_bytes, buffers }
}

/// The layout a stream of `input` elements (None: unknown) of `T` takes on `dev` (None: the
/// CPU backend): chunks of whole multiples of `align` elements, as the device's tuning says
/// (on the CPU, the tuning of the environment, [`super::DeviceOptions::from_env`], that a
/// device opened now would take).
pub(crate) fn layout_for<T>(dev: Option<&CudaDevice>, input: Option<u64>, align: usize) -> ChunkLayout {
    let (memory, tuning) = match dev {
        Some(d) => (d.info().total_memory, d.tuning().clone()),
        None => (0, super::DeviceOptions::from_env().tuning),
    };
    chunk_layout(memory, input, std::mem::size_of::<T>(), align, &tuning)
}

/// Host inputs above this many bytes stream by default: where even a device's first streamed
/// call, which pins its staging buffers (30-100 ms on an H100 host), keeps up with one pageable
/// upload (PERF v17: a 256-bin histogram of 1 GiB, pinning every call, 133 ms against 136 ms
/// uploaded whole). Later calls reuse the kept buffers and gain from 64 MiB on (4.7 ms against
/// 10.3 ms; 4 GiB: 172-213 ms against 637 ms): a caller that streams often may lower the
/// threshold (`TALLY_STREAM_THRESHOLD`).
pub const STREAM_ABOVE_BYTES: usize = 1 << 30;

/// Whether a host input of `bytes` goes through the pipeline rather than one upload: above
/// the tuned threshold (`TALLY_STREAM_THRESHOLD`), by default [`STREAM_ABOVE_BYTES`] or a
/// quarter of `device_memory` where that is less (one upload would crowd the device).
pub fn streams_host_input(device_memory: usize, bytes: usize, tuning: &Tuning) -> bool {
    bytes > tuning.stream_threshold.unwrap_or((device_memory / 4).min(STREAM_ABOVE_BYTES))
}

/// What a streamed primitive does with each chunk: `(stream, chunk, index of its first element)`.
pub type OnChunk<'f, T> = dyn FnMut(&Stream, &DeviceView<'_, T>, u64) -> Result<()> + 'f;

/// One slot: a chunk's pinned host buffer, its device buffer, and the events that order their
/// reuse.
struct Slot<T> {
    /// Bytes of pinned memory, at least a chunk of `T` (page-aligned, as the driver allocates
    /// it); taken from the device's kept buffers and given back when the pipeline goes.
    host: PinnedHostSlice<u8>,
    device: DeviceBuffer<T>,
    /// Recorded on the copy stream after the chunk's copy: the pinned buffer may be refilled.
    copied: CudaEvent,
    /// Recorded on the compute stream after the chunk's kernels: the device buffer may be
    /// overwritten.
    consumed: CudaEvent,
}

/// Pinned staging buffers, device chunks, a copy stream and the events between them (see the
/// module's documentation). Made once for a layout and run over any number of sources.
pub struct ChunkPipeline<T> {
    dev: Arc<CudaDevice>,
    copy: Stream,
    layout: ChunkLayout,
    slots: Vec<Slot<T>>,
}

/// A slot's pinned bytes as `elements` elements of `T`.
fn typed_mut<T: PlainData>(host: &mut PinnedHostSlice<u8>, elements: usize) -> Result<&mut [T]> {
    let bytes = host.as_mut_slice().map_err(driver("cuEventSynchronize"))?;
    if bytes.len() < elements * std::mem::size_of::<T>() || !bytes.as_ptr().cast::<T>().is_aligned() {
        return Err(Error::invalid("a pinned staging buffer too small or misaligned for its chunk"));
    }
    // SAFETY: the bytes are live pinned memory borrowed mutably from `host` for the returned
    // lifetime, aligned for `T` and long enough (checked above), and `T` is plain data, valid
    // for every bit pattern (`PlainData`).
    Ok(unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast::<T>(), elements) })
}

impl<T> Drop for ChunkPipeline<T> {
    fn drop(&mut self) {
        // A run that stopped at an error may leave copies from the pinned buffers in flight:
        // they finish before the buffers go back to the device for other calls.
        if self.copy.synchronize("the staging copies").is_ok() {
            self.dev.keep_pinned(self.slots.drain(..).map(|slot| slot.host));
        }
    }
}

impl<T: PlainData> ChunkPipeline<T> {
    /// Allocates `layout.buffers` slots of `layout.chunk_elements` elements on `dev`, their
    /// pinned buffers reused from earlier pipelines of the device where it kept some.
    pub fn new(dev: &Arc<CudaDevice>, layout: ChunkLayout) -> Result<Self> {
        if layout.element_bytes != std::mem::size_of::<T>() || layout.chunk_elements == 0 {
            return Err(Error::invalid(format!(
                "a layout of {}-byte elements cannot stream {}-byte elements",
                layout.element_bytes,
                std::mem::size_of::<T>()
            )));
        }
        let ctx = dev.cuda_context();
        let event = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING)).map_err(driver("cuEventCreate"));
        let mut slots = Vec::with_capacity(layout.buffers);
        for _ in 0..layout.buffers {
            let host = dev.take_pinned(layout.chunk_bytes())?;
            let device = dev.stream().alloc::<T>(layout.chunk_elements, "streamed chunk")?;
            slots.push(Slot { host, device, copied: event()?, consumed: event()? });
        }
        Ok(ChunkPipeline { dev: dev.clone(), copy: dev.new_stream()?, layout, slots })
    }

    /// The device it streams to.
    pub fn device(&self) -> &Arc<CudaDevice> {
        &self.dev
    }

    /// Fills every staging buffer and device chunk with `byte` (tests: a result must not depend
    /// on what the buffers held, such as a stale chunk or elements past the last one's end).
    #[doc(hidden)]
    pub fn poison(&mut self, byte: u8) -> Result<()> {
        let stream = self.dev.stream();
        for slot in &mut self.slots {
            slot.host.as_mut_slice().map_err(driver("cuEventSynchronize"))?.fill(byte);
            let mut junk = vec![T::default(); slot.device.len()];
            source::as_bytes_mut(&mut junk).fill(byte);
            stream.copy_to_device(&junk, &mut slot.device.view_mut())?;
        }
        stream.synchronize("poisoning the staging buffers")
    }

    /// The chunking.
    pub fn layout(&self) -> ChunkLayout {
        self.layout
    }

    /// The pinned host-to-device bandwidth of one chunk (GB/s): the median of `reps` copies of a
    /// staging buffer into its device chunk on the copy stream, timed by events (what a stream
    /// of chunks can reach at best).
    pub fn upload_bandwidth(&mut self, reps: usize) -> Result<f64> {
        let bytes = self.layout.chunk_bytes() as f64;
        let chunk = self.layout.chunk_elements;
        let slot = &mut self.slots[0];
        let host: &[T] = typed_mut(&mut slot.host, chunk)?;
        let device = &mut slot.device;
        let ms = self.copy.timer()?.median_ms(reps, || self.copy.copy_to_device(host, &mut device.view_mut()))?;
        Ok(bytes / (ms * 1e6))
    }

    /// Streams `source` through the device. For each chunk in order, `on_chunk(stream, chunk,
    /// first)` queues work on `stream` (the device's default stream) that reads `chunk`, whose
    /// first element is element `first` of the input; it must not wait for that work unless it
    /// needs to. Returns the elements streamed, once all queued work has finished.
    pub fn run(&mut self, source: &mut dyn ChunkSource<T>, on_chunk: &mut OnChunk<'_, T>) -> Result<u64> {
        let compute = self.dev.stream();
        let chunk = self.layout.chunk_elements;
        let mut first = 0u64;
        for k in 0.. {
            let slot = &mut self.slots[k % self.layout.buffers];
            slot.copied.synchronize().map_err(driver("cuEventSynchronize (staging buffer free)"))?;
            let host = typed_mut::<T>(&mut slot.host, chunk)?;
            let got = source.fill(host)?;
            if got > chunk {
                return Err(Error::invalid(format!("a source filled {got} elements into a chunk of {chunk}")));
            }
            if got == 0 {
                break;
            }
            let copy = self.copy.cuda_stream();
            copy.wait(&slot.consumed).map_err(driver("cuStreamWaitEvent (device chunk free)"))?;
            let mut device = slot.device.view_mut();
            let mut target = device.slice_mut(..got).expect("a chunk fits its slot");
            self.copy.copy_to_device(&host[..got], &mut target)?;
            slot.copied.record(copy).map_err(driver("cuEventRecord (chunk copied)"))?;
            compute.cuda_stream().wait(&slot.copied).map_err(driver("cuStreamWaitEvent (chunk copied)"))?;
            let view = slot.device.view();
            on_chunk(compute, &view.slice(..got).expect("a chunk fits its slot"), first)?;
            slot.consumed.record(compute.cuda_stream()).map_err(driver("cuEventRecord (chunk consumed)"))?;
            first += got as u64;
            if got < chunk {
                break;
            }
        }
        compute.synchronize("the streamed chunks")?;
        Ok(first)
    }
}

/// A streamed primitive's plans: one for the full chunks and one for the shorter last chunk,
/// each built when the first chunk of its length arrives (a plan is shaped by its length).
pub(crate) struct ChunkPlans<P> {
    full_len: usize,
    plans: [Option<P>; 2],
}

impl<P> ChunkPlans<P> {
    /// No plans yet, for chunks of `full_len` elements (and one shorter last chunk).
    pub(crate) fn new(full_len: usize) -> Self {
        ChunkPlans { full_len, plans: [None, None] }
    }

    /// Whether a chunk of `len` elements is the shorter last one.
    pub(crate) fn is_last(&self, len: usize) -> bool {
        len != self.full_len
    }

    /// The plan for a chunk of `len` elements, built by `build` the first time.
    pub(crate) fn for_chunk(&mut self, len: usize, build: impl FnOnce() -> Result<P>) -> Result<&mut P> {
        let slot = &mut self.plans[self.is_last(len) as usize];
        match slot {
            Some(p) => Ok(p),
            None => Ok(slot.insert(build()?)),
        }
    }

    /// The plan that ran the full chunks (`last` false) or the last chunk, if one did.
    pub(crate) fn get(&self, last: bool) -> Option<&P> {
        self.plans[last as usize].as_ref()
    }
}

/// An error unless every chunk of `layout` is a whole, nonzero number of `align`-element
/// groups (the interleaved samples of a histogram): a chunk that split a sample would count its
/// channels against the wrong ones.
pub(crate) fn check_chunk(layout: ChunkLayout, align: usize) -> Result<()> {
    let chunk = layout.chunk_elements;
    if chunk == 0 || !chunk.is_multiple_of(align.max(1)) {
        return Err(Error::invalid(format!("chunks of {chunk} elements are not whole {align}-element samples")));
    }
    Ok(())
}

/// Streams `source` on the host for the CPU backend: `on_chunk(chunk, first)` for each chunk of
/// `layout` in order, one host buffer reused.
pub(crate) fn run_on_host<T: PlainData>(
    layout: ChunkLayout,
    source: &mut dyn ChunkSource<T>,
    mut on_chunk: impl FnMut(&[T], u64) -> Result<()>,
) -> Result<u64> {
    check_chunk(layout, 1)?;
    let mut buffer = vec![T::default(); layout.chunk_elements];
    let mut first = 0u64;
    loop {
        let got = source.fill(&mut buffer)?;
        if got == 0 {
            break;
        }
        on_chunk(&buffer[..got], first)?;
        first += got as u64;
        if got < buffer.len() {
            break;
        }
    }
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_follows_tuning_memory_input_and_alignment() {
        let t = Tuning::default();
        let l = chunk_layout(80 << 30, None, 4, 1, &t);
        assert_eq!((l.chunk_bytes(), l.buffers), (DEFAULT_CHUNK_BYTES, DEFAULT_BUFFERS));
        // A small device: three slots within an eighth of its memory.
        let l = chunk_layout(96 << 20, None, 4, 1, &t);
        assert!(l.chunk_bytes() * l.buffers <= 12 << 20, "{l:?}");
        // No larger than the input, rounded up to the alignment.
        assert_eq!(chunk_layout(80 << 30, Some(10), 4, 3, &t).chunk_elements, 12);
        assert_eq!(chunk_layout(80 << 30, Some(0), 4, 3, &t).chunk_elements, 3);
        let tiny = Tuning { stream_chunk_bytes: Some(1), stream_buffers: Some(1), ..Tuning::default() };
        let l = chunk_layout(80 << 30, Some(1000), 8, 4, &tiny);
        assert_eq!((l.chunk_elements, l.buffers), (4, 2));
        assert_eq!(l.chunks(1000), 250);
        assert!(chunk_layout(0, None, 1, 1, &Tuning::default()).chunk_elements <= MAX_CHUNK_ELEMENTS);
    }

    #[test]
    fn threshold() {
        let t = Tuning::default();
        assert!(!streams_host_input(80 << 30, 1 << 30, &t));
        assert!(streams_host_input(80 << 30, (1 << 30) + 1, &t));
        // A small device: a quarter of its memory.
        assert!(!streams_host_input(2 << 30, 512 << 20, &t));
        assert!(streams_host_input(2 << 30, (512 << 20) + 1, &t));
        let always = Tuning { stream_threshold: Some(0), ..Tuning::default() };
        assert!(streams_host_input(80 << 30, 1, &always));
    }

    #[test]
    fn host_chunks_cover_the_input_in_order() {
        let data: Vec<u32> = (0..103).collect();
        for chunk in [1, 2, 102, 103, 104, 1000] {
            let layout = ChunkLayout { chunk_elements: chunk, element_bytes: 4, buffers: 2 };
            let mut seen = Vec::new();
            let n = run_on_host(layout, &mut SliceSource::new(&data), |c, first| {
                assert_eq!(first as usize, seen.len());
                seen.extend_from_slice(c);
                Ok(())
            })
            .unwrap();
            assert_eq!((n, &seen), (103, &data));
        }
        let empty = ChunkLayout { chunk_elements: 0, element_bytes: 4, buffers: 2 };
        let r = run_on_host(empty, &mut SliceSource::new(&data), |_, _| Ok(()));
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    }

    #[test]
    fn chunks_must_be_whole_samples() {
        let layout = |chunk_elements| ChunkLayout { chunk_elements, element_bytes: 4, buffers: 2 };
        assert!(check_chunk(layout(6), 3).is_ok() && check_chunk(layout(1), 1).is_ok());
        for (chunk, align) in [(0, 1), (0, 3), (4, 3), (1, 2)] {
            assert!(matches!(check_chunk(layout(chunk), align), Err(Error::InvalidArgument(_))), "{chunk} {align}");
        }
    }
}
