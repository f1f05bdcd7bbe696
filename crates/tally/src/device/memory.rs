//! Typed device memory: owned buffers, borrowed views, and the typed addresses that kernel
//! parameters hold. No safe public function takes a raw device address; a [`DevPtr`] can only
//! be made inside the crate, from a view whose lifetime covers the launch that uses it.

use cudarc::driver::{
    CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceRepr, ValidAsZeroBits,
};
use std::marker::PhantomData;
use std::ops::RangeBounds;

/// Elements of `T` on one CUDA device, owned: the GPU side of a [`crate::Buffer`], and what
/// primitives allocate for their outputs. Wraps a cudarc [`CudaSlice`], which callers that use
/// cudarc themselves can take out ([`DeviceBuffer::into_cuda_slice`]) or bring in (`From`).
pub struct DeviceBuffer<T> {
    slice: CudaSlice<T>,
    /// Elements in use; the allocation holds at least one, so that empty inputs have an address.
    len: usize,
}

impl<T> DeviceBuffer<T> {
    pub(crate) fn from_parts(slice: CudaSlice<T>, len: usize) -> Self {
        debug_assert!(len <= slice.len());
        DeviceBuffer { slice, len }
    }

    /// Elements in the buffer.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The whole buffer, borrowed.
    pub fn view(&self) -> DeviceView<'_, T> {
        DeviceView { inner: self.slice.slice(0..self.len) }
    }

    /// A sub-range of the buffer, borrowed; None where it reaches past the end.
    pub fn slice(&self, range: std::ops::Range<usize>) -> Option<DeviceView<'_, T>> {
        if range.start > range.end || range.end > self.len {
            return None;
        }
        Some(DeviceView { inner: self.slice.slice(range) })
    }

    /// The whole buffer, borrowed for writing.
    pub fn view_mut(&mut self) -> DeviceViewMut<'_, T> {
        DeviceViewMut { inner: self.slice.slice_mut(0..self.len) }
    }

    /// The cudarc slice underneath (its length may exceed [`DeviceBuffer::len`] by one element
    /// for an empty buffer).
    pub fn as_cuda_slice(&self) -> &CudaSlice<T> {
        &self.slice
    }

    /// Gives the allocation back as a cudarc slice.
    pub fn into_cuda_slice(self) -> CudaSlice<T> {
        self.slice
    }
}

impl<T> From<CudaSlice<T>> for DeviceBuffer<T> {
    fn from(slice: CudaSlice<T>) -> Self {
        let len = slice.len();
        DeviceBuffer { slice, len }
    }
}

impl<T> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer<{}>[{}]", std::any::type_name::<T>(), self.len)
    }
}

/// Elements of `T` on the device, borrowed for reading: from a [`DeviceBuffer`], or from a
/// caller's own cudarc [`CudaSlice`] or [`CudaView`] with no copy.
pub struct DeviceView<'a, T> {
    inner: CudaView<'a, T>,
}

impl<'a, T> DeviceView<'a, T> {
    /// Elements in view.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.inner.len() == 0
    }

    /// A sub-range of this view, or None where it reaches past the end.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Option<DeviceView<'_, T>> {
        self.inner.try_slice(range).map(|inner| DeviceView { inner })
    }

    /// The same elements again (views are cheap; this one borrows from `self`).
    pub fn reborrow(&self) -> DeviceView<'_, T> {
        DeviceView { inner: self.inner.slice(..) }
    }

    /// The cudarc view underneath.
    pub fn as_cuda_view(&self) -> &CudaView<'a, T> {
        &self.inner
    }

    /// The typed address a kernel parameter holds; valid while this view is borrowed.
    pub(crate) fn ptr(&self, stream: &CudaStream) -> DevPtr<T> {
        let (address, _record) = self.inner.device_ptr(stream);
        DevPtr::new(address)
    }
}

impl<'a, T> From<&'a CudaSlice<T>> for DeviceView<'a, T> {
    fn from(s: &'a CudaSlice<T>) -> Self {
        DeviceView { inner: s.slice(..) }
    }
}

impl<'a, T> From<CudaView<'a, T>> for DeviceView<'a, T> {
    fn from(inner: CudaView<'a, T>) -> Self {
        DeviceView { inner }
    }
}

impl<'a, T> From<&'a DeviceBuffer<T>> for DeviceView<'a, T> {
    fn from(b: &'a DeviceBuffer<T>) -> Self {
        b.view()
    }
}

/// Elements of `T` on the device, borrowed for writing (outputs, in-place operations).
pub struct DeviceViewMut<'a, T> {
    inner: CudaViewMut<'a, T>,
}

impl<'a, T> DeviceViewMut<'a, T> {
    /// Elements in view.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.inner.len() == 0
    }

    /// The same elements, for reading.
    pub fn as_view(&self) -> DeviceView<'_, T> {
        DeviceView { inner: self.inner.as_view() }
    }

    /// A sub-range of this view, for writing, or None where it reaches past the end.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Option<DeviceViewMut<'_, T>> {
        self.inner.try_slice_mut(range).map(|inner| DeviceViewMut { inner })
    }

    pub(crate) fn inner_mut(&mut self) -> &mut CudaViewMut<'a, T> {
        &mut self.inner
    }

    /// The typed address a kernel parameter holds; valid while this view is borrowed.
    pub(crate) fn ptr_mut(&mut self, stream: &CudaStream) -> DevPtr<T> {
        let (address, _record) = self.inner.device_ptr_mut(stream);
        DevPtr::new(address)
    }
}

impl<'a, T> From<&'a mut CudaSlice<T>> for DeviceViewMut<'a, T> {
    fn from(s: &'a mut CudaSlice<T>) -> Self {
        DeviceViewMut { inner: s.slice_mut(..) }
    }
}

impl<'a, T> From<CudaViewMut<'a, T>> for DeviceViewMut<'a, T> {
    fn from(inner: CudaViewMut<'a, T>) -> Self {
        DeviceViewMut { inner }
    }
}

/// A device address of `T` elements as a kernel parameter holds it: `const T*` or `T*` on the
/// C++ side, 8 bytes. Made only from a view inside the crate; the null address is the default.
#[repr(transparent)]
pub struct DevPtr<T> {
    address: u64,
    _elements: PhantomData<fn() -> T>,
}

impl<T> DevPtr<T> {
    fn new(address: u64) -> Self {
        DevPtr { address, _elements: PhantomData }
    }

    /// The device's address of mapped page-locked host memory (a read-back's words).
    pub(crate) fn mapped_host(address: u64) -> Self {
        DevPtr::new(address)
    }

    /// This address moved `elements` elements on, for kernels that read interleaved data
    /// through two pointers.
    pub(crate) fn offset(self, elements: u64) -> Self {
        DevPtr::new(self.address + elements * std::mem::size_of::<T>() as u64)
    }

    /// The address as a number, for libraries that take untyped device pointers (NCCL).
    pub(crate) fn address(self) -> u64 {
        self.address
    }

    /// The same address seen as elements of another type (byte buffers carved into typed
    /// arrays by the workspace).
    pub(crate) fn cast<U>(self) -> DevPtr<U> {
        DevPtr::new(self.address)
    }
}

impl<T> Clone for DevPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DevPtr<T> {}
impl<T> Default for DevPtr<T> {
    fn default() -> Self {
        DevPtr::new(0)
    }
}
impl<T> std::fmt::Debug for DevPtr<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#x}", self.address)
    }
}
// SAFETY: a device address is eight bytes of plain data, as `T*` is on the device.
unsafe impl<T> DeviceRepr for DevPtr<T> {}
// SAFETY: the null address is the all-zero bit pattern.
unsafe impl<T> ValidAsZeroBits for DevPtr<T> {}

/// Where a primitive's input lives: host memory (copied to the device by a GPU backend), or
/// device memory read in place.
pub enum Input<'a, T> {
    /// Host memory.
    Host(&'a [T]),
    /// Device memory, read in place (a [`DeviceBuffer`], or a caller's cudarc slice or view).
    Device(DeviceView<'a, T>),
}

impl<T> Input<'_, T> {
    /// Elements of input.
    pub fn len(&self) -> usize {
        match self {
            Input::Host(s) => s.len(),
            Input::Device(v) => v.len(),
        }
    }

    /// Whether there is no input.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'a, T> From<&'a [T]> for Input<'a, T> {
    fn from(s: &'a [T]) -> Self {
        Input::Host(s)
    }
}

impl<'a, T> From<&'a Vec<T>> for Input<'a, T> {
    fn from(s: &'a Vec<T>) -> Self {
        Input::Host(s.as_slice())
    }
}

impl<'a, T, const N: usize> From<&'a [T; N]> for Input<'a, T> {
    fn from(s: &'a [T; N]) -> Self {
        Input::Host(s.as_slice())
    }
}

impl<'a, T> From<DeviceView<'a, T>> for Input<'a, T> {
    fn from(v: DeviceView<'a, T>) -> Self {
        Input::Device(v)
    }
}

impl<'a, T> From<&'a DeviceBuffer<T>> for Input<'a, T> {
    fn from(b: &'a DeviceBuffer<T>) -> Self {
        Input::Device(b.view())
    }
}

impl<'a, T> From<&'a CudaSlice<T>> for Input<'a, T> {
    fn from(s: &'a CudaSlice<T>) -> Self {
        Input::Device(s.into())
    }
}

/// Zeroes `view` on `stream` (asynchronously).
pub(crate) fn memset_zeros<T: DeviceRepr + ValidAsZeroBits>(
    stream: &std::sync::Arc<CudaStream>,
    view: &mut DeviceViewMut<'_, T>,
) -> crate::Result<()> {
    if view.is_empty() {
        return Ok(());
    }
    stream.memset_zeros(view.inner_mut()).map_err(crate::error::driver("cuMemsetD8Async"))
}
