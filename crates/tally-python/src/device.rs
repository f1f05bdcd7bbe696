//! The CUDA devices a process uses, opened once each, and the order of tally's work with the
//! callers' streams. Calls on the legacy default stream (handle 0) queue on it directly, as the
//! device's own default stream is that stream. Calls on any other stream of the caller's (a
//! PyTorch side stream, a CuPy stream) queue on one stream that tally owns per device, ordered
//! after the caller's stream at the start of the call and before it at the end (two events):
//! plans and scratch kept between calls are then never freed on a caller's stream, which the
//! caller may destroy at any time after its call (CuPy does when a `Stream` object goes). The
//! price: calls on different side streams of one device run in the order of the calls, not
//! side by side, and a caller's stream after its call also waits for what earlier calls' streams
//! had queued before them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use tally::{CallerStreamOrder, CudaDevice, DeviceOptions};

/// Per ordinal: the device on the legacy default stream, and (once a call needs it) the same
/// device on a stream of tally's own.
#[derive(Default)]
struct Opened {
    default: Option<Arc<CudaDevice>>,
    own_stream: Option<Arc<CudaDevice>>,
}

type Devices = Mutex<HashMap<usize, Opened>>;

fn devices() -> &'static Devices {
    static DEVICES: OnceLock<Devices> = OnceLock::new();
    DEVICES.get_or_init(Devices::default)
}

/// Device `ordinal` on the legacy default stream, opened on first use.
pub fn on_default_stream(ordinal: usize) -> tally::Result<Arc<CudaDevice>> {
    let mut map = devices().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    default_of(map.entry(ordinal).or_default(), ordinal)
}

fn default_of(opened: &mut Opened, ordinal: usize) -> tally::Result<Arc<CudaDevice>> {
    if let Some(dev) = &opened.default {
        return Ok(dev.clone());
    }
    let dev = CudaDevice::with_options(DeviceOptions { ordinal, ..DeviceOptions::from_env() })?;
    opened.default = Some(dev.clone());
    Ok(dev)
}

/// Device `ordinal` for one call on the caller's raw stream `stream` (0: the legacy default
/// stream), and for any other stream the order that ties tally's stream to it: kept for the
/// length of the call, it makes the caller's stream wait for the call's work when it goes.
pub fn for_call(ordinal: usize, stream: usize) -> tally::Result<(Arc<CudaDevice>, Option<CallerStreamOrder>)> {
    // `CU_STREAM_LEGACY` (1) names the legacy default stream too (DLPack and the CUDA array
    // interface write it so); the one place it becomes 0.
    let stream = if stream == 1 { 0 } else { stream };
    let dev = {
        let mut map = devices().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let opened = map.entry(ordinal).or_default();
        let default = default_of(opened, ordinal)?;
        if stream == 0 {
            return Ok((default, None));
        }
        match &opened.own_stream {
            Some(dev) => dev.clone(),
            None => {
                let dev = default.with_stream(default.new_stream()?)?;
                opened.own_stream = Some(dev.clone());
                dev
            }
        }
    };
    // SAFETY: the Python layer passes the current stream of PyTorch, CuPy or the array's
    // `__cuda_array_interface__` (or the one the caller named), a stream of the device's primary
    // context (the context tally opens) that the caller is working on and so keeps alive while
    // its call runs; the order lives only as long as the call.
    let order = unsafe { dev.order_with_caller_stream(stream as cudarc::driver::sys::CUstream) }?;
    Ok((dev, Some(order)))
}

/// The ordinal of the device that holds `address` (for arrays that do not say which device
/// they are on, such as a `__cuda_array_interface__`).
pub fn device_of(address: u64) -> tally::Result<usize> {
    use cudarc::driver::sys::{self, CUpointer_attribute};
    tally::device::cuda::libraries_present()?;
    cudarc::driver::result::init().map_err(|e| tally::Error::CudaUnavailable(e.to_string()))?;
    let mut ordinal: i32 = -1;
    // SAFETY: one attribute, written to an int that lives across the call; the driver answers
    // for any address (unknown ones are an error code, not a fault).
    let status = unsafe {
        sys::cuPointerGetAttribute(
            &mut ordinal as *mut i32 as *mut std::ffi::c_void,
            CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            address,
        )
    };
    match status.result() {
        Ok(()) if ordinal >= 0 => Ok(ordinal as usize),
        _ => Err(tally::Error::invalid(format!(
            "the address {address:#x} is not device memory that the CUDA driver knows"
        ))),
    }
}
