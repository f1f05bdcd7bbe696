//! Arrays as the Python layer hands them over: a host array (anything with the buffer
//! protocol, numpy's arrays above all) or a device array by address and length, with its dtype
//! by name and the device and stream the call runs on. One place turns them into the library's
//! `Input`s and output views, and dispatches on the dtype.

use crate::device;
use crate::error::{to_py, type_error, value_error};
use cudarc::driver::DeviceRepr;
use pyo3::prelude::*;
use std::sync::Arc;
use tally::{Backend, CallerStreamOrder, CudaDevice, DeviceViewMut, ElementType, ExternalBuffer, Input};

/// numpy's name of an element type.
pub fn numpy_name(t: ElementType) -> &'static str {
    match t {
        ElementType::U8 => "uint8",
        ElementType::I8 => "int8",
        ElementType::U16 => "uint16",
        ElementType::I16 => "int16",
        ElementType::U32 => "uint32",
        ElementType::I32 => "int32",
        ElementType::U64 => "uint64",
        ElementType::I64 => "int64",
        ElementType::F32 => "float32",
        ElementType::F64 => "float64",
        ElementType::F16 => "float16",
        ElementType::BF16 => "bfloat16",
    }
}

/// The element type of numpy's name `name`.
pub fn parse_dtype(name: &str) -> PyResult<ElementType> {
    ElementType::ALL.into_iter().find(|&t| numpy_name(t) == name).ok_or_else(|| {
        let all: Vec<&str> = ElementType::ALL.into_iter().map(numpy_name).collect();
        type_error(format!("tally has no dtype '{name}' (it takes {})", all.join(", ")))
    })
}

/// Runs `$body` with `$T` the Rust type of `$dtype`, for the types listed; any other dtype is a
/// `TypeError` that says which types `$what` takes.
#[macro_export]
macro_rules! dispatch {
    ($dtype:expr, $what:expr, $T:ident => $body:expr, [$($v:ident: $t:ty),+ $(,)?]) => {
        match $dtype {
            $(tally::ElementType::$v => {
                type $T = $t;
                $body
            })+
            #[allow(unreachable_patterns)]
            other => Err($crate::array::unsupported(other, $what, &[$(tally::ElementType::$v),+])),
        }
    };
    ($dtype:expr, $what:expr, $T:ident => $body:expr) => {
        $crate::dispatch!($dtype, $what, $T => $body, [
            U8: u8, I8: i8, U16: u16, I16: i16, U32: u32, I32: i32, U64: u64, I64: i64, F32: f32, F64: f64,
            F16: tally::half::f16, BF16: tally::half::bf16
        ])
    };
}

/// The error for a dtype that `what` does not take.
pub fn unsupported(dtype: ElementType, what: &str, types: &[ElementType]) -> PyErr {
    let names: Vec<&str> = types.iter().map(|&t| numpy_name(t)).collect();
    type_error(format!(
        "{what} does not take {} (it takes {}); convert the array first",
        numpy_name(dtype),
        names.join(", ")
    ))
}

/// Where a call runs: the CPU backend, or a CUDA device queueing on the legacy default stream
/// or on tally's own stream (see `device::for_call`).
#[derive(Clone)]
pub enum Target {
    Cpu,
    Cuda(Arc<CudaDevice>),
}

impl Target {
    /// `None`: the CPU; `(ordinal, stream)`: that device, for a call on the caller's raw
    /// stream, with the order to keep for the length of the call (none on the legacy default
    /// stream).
    pub fn for_call(device: Option<(usize, usize)>) -> PyResult<(Target, Option<CallerStreamOrder>)> {
        match device {
            None => Ok((Target::Cpu, None)),
            Some((ordinal, stream)) => {
                device::for_call(ordinal, stream).map(|(dev, order)| (Target::Cuda(dev), order)).map_err(to_py)
            }
        }
    }

    /// The library's backend for this target.
    pub fn backend(&self) -> Backend {
        match self {
            Target::Cpu => Backend::Cpu,
            Target::Cuda(dev) => Backend::Cuda(dev.clone()),
        }
    }

    /// The device, where the call needs one.
    pub fn cuda(&self, what: &str) -> PyResult<&Arc<CudaDevice>> {
        match self {
            Target::Cuda(dev) => Ok(dev),
            Target::Cpu => Err(value_error(format!("{what} is device memory, but the call runs on the CPU"))),
        }
    }
}

/// The array a call is about and where the call runs, as the Python layer passes them:
/// `((address, elements, on_host), dtype, device)`, the device `None` for the CPU backend or
/// `(ordinal, raw stream handle)`. The call's other arrays run where this one does.
pub struct Subject<'py> {
    /// `(address, elements, on_host)`, for [`Held::new`].
    pub parts: Bound<'py, PyAny>,
    /// The element type.
    pub dtype: ElementType,
    /// Where the call runs.
    pub target: Target,
    /// Orders the caller's stream after the call's work when the subject goes, at the end of
    /// the call (on success and on error alike; see `CallerStreamOrder`'s drop).
    _order: Option<CallerStreamOrder>,
}

impl<'py> Subject<'py> {
    /// Reads the Python layer's triple.
    pub fn new(arg: &Bound<'py, PyAny>) -> PyResult<Subject<'py>> {
        type Triple<'py> = (Bound<'py, PyAny>, String, Option<(usize, usize)>);
        let (parts, dtype, device): Triple<'py> =
            arg.extract().map_err(|_| type_error("expected ((address, elements, on_host), dtype, device)"))?;
        let dtype = parse_dtype(&dtype)?;
        let (target, order) = Target::for_call(device)?;
        Ok(Subject { parts, dtype, target, _order: order })
    }

    /// The array, held for reading as `T`.
    pub fn held<T: DeviceRepr>(&self) -> PyResult<Held<T>> {
        Held::new(&self.parts, &self.target, "x")
    }
}

/// An array as the Python layer passes it: `(address, elements, on_host)`. Host arrays are
/// numpy arrays (their `__array_interface__` address; the buffer protocol is not part of the
/// stable ABI before Python 3.11), device arrays the caller's memory; the Python layer holds a
/// reference to the array for the whole call.
fn parts(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<(u64, usize, bool)> {
    obj.extract().map_err(|_| type_error(format!("{what}: expected (address, elements, on_host)")))
}

/// Checks a host address for `len` elements of `T`.
fn check_host<T>(address: u64, len: usize, what: &str) -> PyResult<()> {
    if len > 0 && (address == 0 || !address.is_multiple_of(std::mem::align_of::<T>() as u64)) {
        return Err(value_error(format!(
            "{what}: the host address {address:#x} is not aligned for {}",
            std::any::type_name::<T>()
        )));
    }
    Ok(())
}

/// An input array held for the length of a call: host memory by address, or the caller's
/// device memory wrapped without a copy.
pub enum Held<T> {
    Host { address: u64, len: usize },
    Device(ExternalBuffer<T>),
}

impl<T: DeviceRepr> Held<T> {
    /// Takes `obj` (named `what` in errors) for reading on `target`.
    pub fn new(obj: &Bound<'_, PyAny>, target: &Target, what: &str) -> PyResult<Held<T>> {
        let (address, len, on_host) = parts(obj, what)?;
        if on_host {
            check_host::<T>(address, len, what)?;
            return Ok(Held::Host { address, len });
        }
        let dev = target.cuda(what)?;
        // SAFETY: the Python layer passes the address and length of a live, contiguous device
        // array of `T` that it holds a reference to for the whole call, and the call's work is
        // queued on the target's stream, which is the caller's (the legacy default stream) or
        // ordered after it for the call (`Subject`'s order). Work still queued when the call
        // returns is ordered before anything the caller queues next on its stream, and
        // PyTorch's and CuPy's allocators reuse freed memory in that stream's order, as for
        // their own kernels.
        let buffer = unsafe { ExternalBuffer::from_raw_parts(dev.stream(), address, len) }.map_err(to_py)?;
        Ok(Held::Device(buffer))
    }

    /// Elements.
    pub fn len(&self) -> usize {
        match self {
            Held::Host { len, .. } => *len,
            Held::Device(b) => b.len(),
        }
    }

    /// The array as the library's input.
    pub fn input(&self) -> Input<'_, T> {
        match *self {
            Held::Host { len: 0, .. } => Input::Host(&[]),
            // SAFETY: the Python layer passes a C-contiguous numpy array of `T` (it checks the
            // dtype and the flags) and holds it for the whole call, which outlives this borrow;
            // `Held::new` checked the address for null and alignment. Writes by other threads
            // during the call are the caller's to avoid, as with numpy's own GIL-free loops.
            Held::Host { address, len } => Input::Host(unsafe { std::slice::from_raw_parts(address as *const T, len) }),
            Held::Device(ref b) => Input::Device(b.view()),
        }
    }
}

/// An output array held for the length of a call: a host array or device memory that the
/// Python layer allocated for it.
pub enum Out<T> {
    Host { address: u64, len: usize },
    Device(ExternalBuffer<T>),
}

impl<T: DeviceRepr> Out<T> {
    /// Takes `obj` for writing `len` elements on `target`.
    pub fn new(obj: &Bound<'_, PyAny>, target: &Target, len: usize) -> PyResult<Out<T>> {
        let (address, n, on_host) = parts(obj, "the output")?;
        if n != len {
            return Err(value_error(format!("the output holds {n} elements, {len} are needed")));
        }
        if on_host {
            check_host::<T>(address, len, "the output")?;
            return Ok(Out::Host { address, len });
        }
        let dev = target.cuda("the output")?;
        // SAFETY: the Python layer allocated this device array for the call's output on the
        // call's device and holds it for the whole call; nothing else has it until the call
        // returns, and later work on it is queued after the call's (see `Held::new`).
        Ok(Out::Device(unsafe { ExternalBuffer::from_raw_parts(dev.stream(), address, n) }.map_err(to_py)?))
    }

    /// The host elements (None for device output).
    pub fn host(&mut self) -> Option<&mut [T]> {
        match *self {
            Out::Host { len: 0, .. } => Some(&mut []),
            // SAFETY: the Python layer allocated this C-contiguous numpy array of `T` for this
            // call alone and holds it for the whole call, so no other reference reads or writes
            // it while this borrow lives; `Out::new` checked the address.
            Out::Host { address, len } => Some(unsafe { std::slice::from_raw_parts_mut(address as *mut T, len) }),
            Out::Device(_) => None,
        }
    }

    /// The device elements (None for host output).
    pub fn device(&mut self) -> Option<DeviceViewMut<'_, T>> {
        match self {
            Out::Device(b) => Some(b.view_mut()),
            Out::Host { .. } => None,
        }
    }
}

/// Writes `values` into the front of a host output, or into a device output of their length
/// on `target`'s stream.
pub fn write_out<T: DeviceRepr + Copy>(out: &mut Out<T>, target: &Target, values: &[T]) -> tally::Result<()> {
    if let Some(host) = out.host() {
        let room = host.len();
        host.get_mut(..values.len())
            .ok_or_else(|| tally::Error::invalid(format!("{} results for an output of {room}", values.len())))?
            .copy_from_slice(values);
        return Ok(());
    }
    match (out.device(), target) {
        (Some(mut view), Target::Cuda(dev)) => {
            dev.stream().copy_to_device(values, &mut view)?;
            dev.stream().synchronize("the copy of the results")
        }
        _ => Err(tally::Error::invalid("a device output for a call on the CPU")),
    }
}
