//! Scans: `Backend::scan` and `Backend::scan_by_key` into an output the Python layer allocated
//! (a numpy array, or device memory of the caller's array library that the kernels write in
//! place).

use crate::array::{write_out, Held, Out, Subject, Target};
use crate::dispatch;
use crate::error::{to_py, value_error};
use crate::plans;
use cudarc::driver::DeviceRepr;
use pyo3::prelude::*;
use std::any::type_name;
use std::sync::Arc;
use tally::{Input, ScanElement, ScanInto, ScanKey, ScanOp, ScanOptions, ScanPlan, ScanValue};

/// The arrays of one scan.
struct Arrays<'a, 'py> {
    x: Subject<'py>,
    out: &'a Bound<'py, PyAny>,
    keys: Option<&'a Bound<'py, PyAny>>,
}

/// Scans `x` of `T` into `out` of `O`, by the keys of `K` where there are keys.
fn scan_typed<T, O, K>(py: Python<'_>, a: &Arrays<'_, '_>, op: ScanOp, options: ScanOptions) -> PyResult<()>
where
    T: ScanInto<O>,
    O: ScanValue + DeviceRepr,
    K: ScanKey,
{
    let target = &a.x.target;
    let x = a.x.held::<T>()?;
    let keys = a.keys.map(|k| Held::<K>::new(k, target, "keys")).transpose()?;
    let mut out = Out::<O>::new(a.out, target, x.len())?;
    if let Some(k) = &keys {
        if k.len() != x.len() {
            return Err(value_error(format!("{} keys for {} values: one key per value", k.len(), x.len())));
        }
    }
    let backend = target.backend();
    let in_place = matches!(out, Out::Device(_));
    py.detach(|| -> tally::Result<()> {
        if !in_place {
            let values = match &keys {
                None => backend.scan_vec::<T, O>(x.input(), op, options)?,
                Some(k) => backend.scan_by_key_vec::<K, T, O>(k.input(), x.input(), op, options)?,
            };
            return write_out(&mut out, target, &values);
        }
        // Device in, device out: the kernels write the caller's array in place.
        let (Target::Cuda(dev), Input::Device(view), Some(mut dest)) = (target, x.input(), out.device()) else {
            return Err(tally::Error::invalid("a device output needs device input on a device"));
        };
        let stream = dev.stream();
        let key_type = keys.as_ref().map(|_| std::any::type_name::<K>());
        let what = format!("scan {} {} {op:?} {options:?} {key_type:?}", type_name::<T>(), type_name::<O>());
        let plan_key = (Arc::as_ptr(dev) as usize, what, view.len());
        let mut plan = plans::take(&plan_key, || match keys {
            None => ScanPlan::<T, O>::new(dev, op, options, view.len()),
            Some(_) => ScanPlan::<T, O>::by_key::<K>(dev, op, options, view.len()),
        })?;
        match keys.as_ref().map(|k| k.input()) {
            None => plan.launch(stream, &view, &mut dest)?,
            Some(Input::Device(k)) => plan.launch_by_key(stream, &k, &view, &mut dest)?,
            Some(Input::Host(_)) => return Err(tally::Error::invalid("host keys for device values")),
        }
        let finished = finish(&plan, stream, view.len());
        plans::keep(plan_key, plan);
        finished
    })
    .map_err(to_py)
}

/// Ends a device scan of `n` elements: waits for it only where a checked sum may report an
/// overflow; the other scans' results stay queued, ordered before the caller's later work on its
/// stream, as the caller's own kernels would be. Sums of fewer than 2^32 elements of 32 bits or
/// less cannot leave the 64 bits they are summed in (2^32 * 2^32 = 2^64 unsigned, 2^32 * 2^31 =
/// 2^63 signed).
fn finish<T: ScanInto<O>, O: ScanValue>(plan: &ScanPlan<T, O>, stream: &tally::Stream, n: usize) -> tally::Result<()> {
    let may_overflow = std::mem::size_of::<T>() > 4 || n as u64 >= 1 << 32;
    if plan.checks_overflow() && may_overflow {
        plan.read(stream)
    } else {
        Ok(())
    }
}

/// Scans `x` (see `Subject`) by `op` ("sum", "min", "max") into `out`: for sums numpy's
/// `cumsum` type (int64 for signed integers, uint64 for unsigned ones, the float type itself),
/// for min and max the input's type. With `keys` (uint32 or uint64 by `key_dtype`; signed keys
/// are passed as their bits), the scan restarts wherever the key changes.
#[pyfunction]
#[pyo3(signature = (x, op, exclusive, out, keys=None, key_dtype="uint32"))]
pub fn scan(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    op: &str,
    exclusive: bool,
    out: &Bound<'_, PyAny>,
    keys: Option<&Bound<'_, PyAny>>,
    key_dtype: &str,
) -> PyResult<()> {
    let arrays = Arrays { x: Subject::new(x)?, out, keys };
    let op = ScanOp::from_name(op).map_err(to_py)?;
    let options = if exclusive { ScanOptions::exclusive() } else { ScanOptions::inclusive() };
    let wide_keys = match key_dtype {
        "uint32" => false,
        "uint64" => true,
        other => return Err(value_error(format!("scan keys are 32- or 64-bit integers, not {other}"))),
    };
    dispatch!(arrays.x.dtype, "a scan", T => {
        match (op, wide_keys) {
            (ScanOp::Sum, false) => scan_typed::<T, <T as ScanElement>::Wide, u32>(py, &arrays, op, options),
            (ScanOp::Sum, true) => scan_typed::<T, <T as ScanElement>::Wide, u64>(py, &arrays, op, options),
            (_, false) => scan_typed::<T, <T as ScanElement>::Extreme, u32>(py, &arrays, op, options),
            (_, true) => scan_typed::<T, <T as ScanElement>::Extreme, u64>(py, &arrays, op, options),
        }
    })
}
