//! Memory and streams that tally does not own, taken by address: a caller's device allocation
//! (from PyTorch, CuPy, a driver call) and a caller's CUDA stream, for bindings to other
//! languages, where the memory comes as an integer. These are the device layer's only public
//! constructors from raw handles, and they are `unsafe`: an address carries no lifetime, so the
//! caller vouches for it. What can be checked is checked (the memory's device, its alignment).

use super::{CudaDevice, Stream};
use crate::device::memory::{DeviceView, DeviceViewMut};
use crate::device::workspace::Workspace;
use crate::error::{driver, Error, Result};
use cudarc::driver::sys::{self, CUmemorytype, CUpointer_attribute};
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DeviceRepr};
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::sync::Arc;

impl Stream {
    /// A caller's CUDA stream of `device`'s context, borrowed: tally queues its work on it and
    /// never destroys it. The stream gets a workspace of its own (scratch is reused in the
    /// stream's order), so a caller keeps one `Stream` per raw stream rather than one per call.
    /// `cu_stream` may also be one of the driver's special handles: null or `CU_STREAM_LEGACY`
    /// (1) for the legacy default stream, `CU_STREAM_PER_THREAD` (2).
    ///
    /// # Safety
    ///
    /// `cu_stream` must be a stream created in `device`'s context (the primary context of its
    /// GPU, which PyTorch and CuPy use too) or a special handle, and it must stay alive while
    /// the returned `Stream`, or a device made with it ([`CudaDevice::with_stream`]), is used
    /// or still has work queued, and while a plan that allocated on it lives (a plan made on
    /// such a device, or one launched on this stream twice: it keeps its tile states there).
    pub unsafe fn from_raw(device: &CudaDevice, cu_stream: sys::CUstream) -> Stream {
        // SAFETY: the caller guarantees that the stream belongs to this context and outlives
        // every use of the wrapper; cudarc does not destroy a borrowed stream.
        let inner = unsafe { device.ctx.wrap_borrowed_stream(cu_stream) };
        Stream::wrap(inner, Workspace::default_limit(device.info.total_memory))
    }
}

impl CudaDevice {
    /// This device queueing its work on `stream`: the same context, properties, options and
    /// compiled kernels (shared, not loaded again), with `stream` as the default stream that
    /// the [`crate::Backend`] calls use. The way to run tally on a caller's stream.
    pub fn with_stream(self: &Arc<Self>, stream: Stream) -> Result<Arc<CudaDevice>> {
        if **stream.inner.context() != *self.ctx {
            return Err(Error::invalid(format!(
                "the stream belongs to another context (device {}) than this device's (device {})",
                stream.inner.context().ordinal(),
                self.ctx.ordinal()
            )));
        }
        Ok(Arc::new(CudaDevice {
            ctx: self.ctx.clone(),
            stream,
            info: self.info.clone(),
            modules: self.modules.clone(),
            pinned: self.pinned.clone(),
            cache: self.cache.clone(),
            nvrtc_options: self.nvrtc_options.clone(),
            tuning: self.tuning.clone(),
        }))
    }
}

/// tally's work on its own stream, ordered with a caller's stream for the length of one call:
/// made by [`CudaDevice::order_with_caller_stream`], which makes the device's stream wait for
/// what the caller queued before the call; finishing it (or dropping it) makes the caller's
/// stream wait for what the device's stream queued meanwhile. Unlike a device on
/// [`Stream::from_raw`], nothing tally keeps (plans, their buffers, the workspace) is allocated
/// or freed on the caller's stream, so the caller may destroy that stream once the call is done;
/// freeing memory that a destroyed stream was given is undefined behaviour, and a binding that
/// keeps plans between calls cannot know when a caller destroys a stream.
#[must_use = "the caller's stream is ordered after tally's work only when this is finished or dropped"]
pub struct CallerStreamOrder {
    own: Arc<CudaStream>,
    caller: Arc<CudaStream>,
    /// Made with the order, so that ending it only records and waits (no allocation to fail).
    done: CudaEvent,
    finished: bool,
}

impl CudaDevice {
    /// Orders this device's stream after the work queued so far on the caller's stream
    /// `cu_stream`, for one call; see [`CallerStreamOrder`]. Two events a call. Calls on
    /// different caller streams that use one device share its stream, so their work runs in
    /// the order of the calls, and a caller's stream, after its call, also waits for what the
    /// calls before it on that device waited for.
    ///
    /// # Safety
    ///
    /// `cu_stream` must be a stream of this device's context (or one of the driver's special
    /// handles: null or `CU_STREAM_LEGACY` for the legacy default stream,
    /// `CU_STREAM_PER_THREAD`), alive until the returned order is finished or dropped.
    pub unsafe fn order_with_caller_stream(&self, cu_stream: sys::CUstream) -> Result<CallerStreamOrder> {
        // SAFETY: the caller guarantees that the stream belongs to this context and lives as
        // long as the order, which is the only holder of this wrapper; cudarc never destroys a
        // borrowed stream.
        let caller = unsafe { self.ctx.wrap_borrowed_stream(cu_stream) };
        let own = self.stream.inner.clone();
        let done = self.ctx.new_event(None).map_err(driver("cuEventCreate"))?;
        own.join(&caller).map_err(driver("cuStreamWaitEvent (tally's stream after the caller's)"))?;
        Ok(CallerStreamOrder { own, caller, done, finished: false })
    }
}

impl CallerStreamOrder {
    /// Makes the caller's stream wait for the work queued on the device's stream since the
    /// order was made.
    pub fn finish(mut self) -> Result<()> {
        self.finished = true;
        self.order_caller()
    }

    fn order_caller(&self) -> Result<()> {
        self.done.record(&self.own).map_err(driver("cuEventRecord (tally's work of the call)"))?;
        self.caller.wait(&self.done).map_err(driver("cuStreamWaitEvent (the caller's stream after tally's)"))
    }
}

impl Drop for CallerStreamOrder {
    fn drop(&mut self) {
        if !self.finished {
            // A call that ends early (an error, a panic) still orders the caller's stream
            // after whatever it queued. With the event made, recording and waiting fail only
            // on a context that a fault already broke, which every later call reports; a drop
            // has no one to tell.
            let _ = self.order_caller();
        }
    }
}

/// `len` elements of `T` in device memory that tally does not own (a PyTorch tensor's storage,
/// a CuPy array, a caller's `cuMemAlloc`), read or written in place and never freed by tally.
/// Views of it go wherever a [`DeviceView`] or [`DeviceViewMut`] goes.
pub struct ExternalBuffer<T> {
    /// A cudarc slice over the caller's memory, never dropped: it is leaked (given up without
    /// a free) when the buffer goes.
    slice: ManuallyDrop<CudaSlice<T>>,
}

impl<T: DeviceRepr> ExternalBuffer<T> {
    /// The caller's `len` elements at device address `address`, used in the order of `stream`.
    /// An error (not undefined behaviour) where the driver does not know the address as device
    /// memory, where it is on another device than `stream`'s, or where it is not aligned for
    /// `T`. An empty buffer may have any address (0 included); it is never dereferenced.
    ///
    /// # Safety
    ///
    /// - For `len > 0`, `address .. address + len * size_of::<T>()` lies in one live device
    ///   allocation, and holds valid values of `T` where it is read.
    /// - The memory stays allocated, and nothing else writes it (nor, through
    ///   [`ExternalBuffer::view_mut`], reads it) other than in `stream`'s order, while this
    ///   buffer and its views are used and until the work they queued on `stream` is done:
    ///   free or reuse it only after synchronising `stream` or ordering after it. (The
    ///   [`crate::Backend`] calls that return results on the host wait for their stream.)
    /// - `stream` is the stream that work on these views is queued on.
    pub unsafe fn from_raw_parts(stream: &Stream, address: u64, len: usize) -> Result<Self> {
        let size = std::mem::size_of::<T>();
        if len > 0 {
            if address == 0 {
                return Err(Error::invalid(format!("a null device address for {len} elements")));
            }
            if (len as u64).checked_mul(size as u64).and_then(|b| b.checked_add(address)).is_none() {
                return Err(Error::invalid(format!("{len} elements at {address:#x} run past the address space")));
            }
            if !address.is_multiple_of(std::mem::align_of::<T>() as u64) {
                return Err(Error::invalid(format!(
                    "the device address {address:#x} is not aligned for {} ({}-byte elements)",
                    std::any::type_name::<T>(),
                    std::mem::align_of::<T>()
                )));
            }
            check_device_memory(stream, address)?;
        }
        // SAFETY: the caller guarantees that the memory is a live allocation of `len` elements,
        // used in `stream`'s order; the slice is never dropped (so never freed), only leaked.
        // Event tracking is off in the contexts tally opens, so cudarc creates no events here.
        let slice = unsafe { stream.inner.upgrade_device_ptr::<T>(address, len) };
        Ok(ExternalBuffer { slice: ManuallyDrop::new(slice) })
    }
}

impl<T> ExternalBuffer<T> {
    /// Elements in the buffer.
    pub fn len(&self) -> usize {
        self.slice.len()
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.slice.is_empty()
    }

    /// The elements, for reading.
    pub fn view(&self) -> DeviceView<'_, T> {
        DeviceView::from(&*self.slice)
    }

    /// The elements, for writing.
    pub fn view_mut(&mut self) -> DeviceViewMut<'_, T> {
        DeviceViewMut::from(&mut *self.slice)
    }
}

impl<T> Drop for ExternalBuffer<T> {
    fn drop(&mut self) {
        // SAFETY: the slice is taken once, here, and not used again.
        let slice = unsafe { ManuallyDrop::take(&mut self.slice) };
        // The memory is the caller's: give up the slice without freeing it.
        let _address = slice.leak();
    }
}

impl<T> std::fmt::Debug for ExternalBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ExternalBuffer<{}>[{}]", std::any::type_name::<T>(), self.len())
    }
}

impl<'a, T> From<&'a ExternalBuffer<T>> for crate::device::Input<'a, T> {
    fn from(b: &'a ExternalBuffer<T>) -> Self {
        crate::device::Input::Device(b.view())
    }
}

/// Checks that the driver knows `address` as device (or managed) memory of `stream`'s device.
fn check_device_memory(stream: &Stream, address: u64) -> Result<()> {
    let ctx = stream.inner.context();
    ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
    let mut memory_type: u32 = 0;
    let mut ordinal: i32 = -1;
    let mut attributes = [
        CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
    ];
    let mut data = [&mut memory_type as *mut u32 as *mut c_void, &mut ordinal as *mut i32 as *mut c_void];
    // SAFETY: two attributes, each with a pointer to storage of its documented type (an
    // unsigned int for the memory type, an int for the ordinal), live across the call. The
    // driver answers for any address: unknown ones get zeroed attributes, not a fault.
    unsafe {
        sys::cuPointerGetAttributes(attributes.len() as u32, attributes.as_mut_ptr(), data.as_mut_ptr(), address)
    }
    .result()
    .map_err(driver("cuPointerGetAttributes"))?;
    let device = ctx.ordinal();
    if memory_type == CUmemorytype::CU_MEMORYTYPE_HOST as u32 {
        return Err(Error::invalid(format!(
            "the address {address:#x} is page-locked host memory; tally reads device arrays in place (copy it to device {device})"
        )));
    }
    if memory_type != CUmemorytype::CU_MEMORYTYPE_DEVICE as u32
        && memory_type != CUmemorytype::CU_MEMORYTYPE_UNIFIED as u32
    {
        return Err(Error::invalid(format!(
            "the address {address:#x} is not device memory that the CUDA driver knows (a host address?)"
        )));
    }
    if ordinal != device as i32 {
        return Err(Error::invalid(format!(
            "the array is on device {ordinal}, but the call runs on device {device}: move it, or ask for device {ordinal}"
        )));
    }
    Ok(())
}
