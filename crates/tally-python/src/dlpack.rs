//! Reading a DLPack capsule (what `__dlpack__()` returns): the address, device, dtype, shape and
//! strides of the tensor it describes. tally only reads the description; the capsule, which
//! the Python layer holds for the whole call, keeps the memory alive and frees it when it goes.

use crate::error::{type_error, value_error};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use std::ffi::{c_void, CStr};

/// DLPack's `DLDevice`.
#[repr(C)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

/// DLPack's `DLDataType`.
#[repr(C)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

/// DLPack's `DLTensor`, the first member of a `DLManagedTensor`.
#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *const i64,
    strides: *const i64,
    byte_offset: u64,
}

const CAPSULE_NAME: &CStr = c"dltensor";

/// `(address, device_type, device_id, dtype_code, bits, lanes, shape, strides)` of the tensor in
/// `capsule`; strides are `None` for a compact row-major tensor. Device types are DLPack's
/// (1 CPU, 2 CUDA, 3 CUDA host, 13 CUDA managed); dtype codes 0 int, 1 uint, 2 float.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn dlpack_info(capsule: &Bound<'_, PyAny>) -> PyResult<(u64, i32, i32, u8, u8, u16, Vec<i64>, Option<Vec<i64>>)> {
    let capsule =
        capsule.cast::<PyCapsule>().map_err(|_| type_error("__dlpack__() did not return a DLPack capsule"))?;
    if !capsule.is_valid_checked(Some(CAPSULE_NAME)) {
        return Err(value_error("the DLPack capsule was already consumed (or is of a newer, versioned kind)"));
    }
    let pointer = capsule.pointer_checked(Some(CAPSULE_NAME))?;
    // SAFETY: a capsule named "dltensor" holds a `DLManagedTensor`, whose first member is the
    // `DLTensor` (DLPack's ABI, which the structs above follow); the producer keeps it and the
    // arrays it points to alive until the capsule's destructor runs, and the capsule outlives
    // this function.
    let t = unsafe { &*(pointer.as_ptr() as *const DlTensor) };
    let ndim = usize::try_from(t.ndim).map_err(|_| value_error("a DLPack tensor with a negative rank"))?;
    let read = |p: *const i64| -> Vec<i64> {
        if p.is_null() || ndim == 0 {
            Vec::new()
        } else {
            // SAFETY: DLPack's shape and (non-null) strides arrays hold `ndim` entries.
            unsafe { std::slice::from_raw_parts(p, ndim) }.to_vec()
        }
    };
    if ndim > 0 && t.shape.is_null() {
        return Err(value_error("a DLPack tensor without a shape"));
    }
    let strides = (!t.strides.is_null()).then(|| read(t.strides));
    Ok((
        (t.data as u64).wrapping_add(t.byte_offset),
        t.device.device_type,
        t.device.device_id,
        t.dtype.code,
        t.dtype.bits,
        t.dtype.lanes,
        read(t.shape),
        strides,
    ))
}
