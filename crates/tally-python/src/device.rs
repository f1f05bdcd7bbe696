//! The CUDA devices a process uses, opened once each, and their views on the callers' streams.
//! A raw stream handle gets one `CudaDevice` (sharing the device's compiled kernels) with its own
//! workspace, kept for the process. Work that a call leaves queued on its stream is ordered
//! before the next call's on that stream; a handle that a new stream reuses names a stream that
//! the driver released, which it does only once the old stream's work is done.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use tally::{CudaDevice, DeviceOptions, Stream};

type Devices = Mutex<HashMap<(usize, usize), Arc<CudaDevice>>>;

fn devices() -> &'static Devices {
    static DEVICES: OnceLock<Devices> = OnceLock::new();
    DEVICES.get_or_init(Devices::default)
}

/// Device `ordinal` queueing on the raw stream `stream` (0: the legacy default stream, which
/// the device's own default stream is).
pub fn on_stream(ordinal: usize, stream: usize) -> tally::Result<Arc<CudaDevice>> {
    let mut map = devices().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(dev) = map.get(&(ordinal, stream)) {
        return Ok(dev.clone());
    }
    let base = match map.get(&(ordinal, 0)) {
        Some(dev) => dev.clone(),
        None => {
            let dev = CudaDevice::with_options(DeviceOptions { ordinal, ..DeviceOptions::from_env() })?;
            map.insert((ordinal, 0), dev.clone());
            dev
        }
    };
    if stream == 0 {
        return Ok(base);
    }
    // SAFETY: the Python layer passes the current stream of PyTorch, CuPy or the array's
    // `__cuda_array_interface__`, all streams of the device's primary context (the context tally
    // opens), and the caller keeps a stream alive while it queues work on it. A handle that is
    // later destroyed and reused names the new stream: the driver releases a destroyed stream
    // (and so its handle) only after its queued work is done, so the cached wrapper's workspace
    // has no work of the old stream pending when the new one uses it.
    let raw = unsafe { Stream::from_raw(&base, stream as cudarc::driver::sys::CUstream) };
    let dev = base.with_stream(raw)?;
    map.insert((ordinal, stream), dev.clone());
    Ok(dev)
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
