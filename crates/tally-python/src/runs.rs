//! Runs of equal consecutive keys: `Backend::unique`, `run_length_encode` and `reduce_by_key`,
//! into outputs the Python layer allocated with room for one run per key (numpy arrays, or
//! device memory of the caller's array library that the kernels write in place). The Python
//! layer cuts them to the number of runs these functions return (a number Python needs, so
//! these calls wait for their work). Plans for device arrays are kept between calls
//! (`plans.rs`), keyed by the primitive, its types and the length.

use crate::array::{parse_dtype, write_out, Held, Out, Subject, Target};
use crate::dispatch;
use crate::error::{to_py, value_error};
use crate::plans;
use pyo3::prelude::*;
use std::any::type_name;
use std::sync::Arc;
use tally::{CudaDevice, Input, ReduceByKeyInto, RunKey, RunOp, RunsPlan, ScanElement, ScanValue};

/// Runs `work` with the plan for `what` over `n` elements on `dev` (the types are part of the
/// key): the one kept from an earlier call, else `make`'s, kept afterwards.
fn with_plan<K: 'static, V: 'static, O: 'static>(
    dev: &Arc<CudaDevice>,
    what: &str,
    n: usize,
    make: impl FnOnce() -> tally::Result<RunsPlan<K, V, O>>,
    work: impl FnOnce(&mut RunsPlan<K, V, O>) -> tally::Result<u64>,
) -> tally::Result<u64>
where
    RunsPlan<K, V, O>: Send,
{
    let what = format!("runs {what} {} {} {}", type_name::<K>(), type_name::<V>(), type_name::<O>());
    let key = (Arc::as_ptr(dev) as usize, what, n);
    let mut plan = plans::take(&key, make)?;
    let done = work(&mut plan);
    plans::keep(key, plan);
    done
}

/// The first key of every run of `x` into `out_keys`, and with `out_counts` the run lengths.
fn encode_typed<K: RunKey>(
    py: Python<'_>,
    x: &Subject<'_>,
    out_keys: &Bound<'_, PyAny>,
    out_counts: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    let target = &x.target;
    let keys = x.held::<K>()?;
    let n = keys.len();
    let mut out = Out::<K>::new(out_keys, target, n)?;
    let mut counts = out_counts.map(|c| Out::<u64>::new(c, target, n)).transpose()?;
    let backend = target.backend();
    py.detach(|| -> tally::Result<u64> {
        let device = match (target, keys.input(), out.device()) {
            (Target::Cuda(dev), Input::Device(view), Some(dest)) => Some((dev, view, dest)),
            _ => None,
        };
        let Some((dev, view, mut dest)) = device else {
            let (values, lengths) = match counts {
                None => (backend.unique_vec(keys.input())?, None),
                Some(_) => backend.run_length_encode_vec(keys.input()).map(|(v, c)| (v, Some(c)))?,
            };
            if let (Some(c), Some(lengths)) = (counts.as_mut(), lengths) {
                write_out(c, target, &lengths)?;
            }
            return write_out(&mut out, target, &values).map(|()| values.len() as u64);
        };
        let stream = dev.stream();
        match counts.as_mut().map(|c| c.device()) {
            None => with_plan(
                dev,
                "unique",
                n,
                || RunsPlan::<K>::unique(dev, n),
                |plan| {
                    plan.launch_unique(stream, &view, &mut dest)?;
                    plan.read(stream)
                },
            ),
            Some(Some(mut lengths)) => with_plan(
                dev,
                "encode",
                n,
                || RunsPlan::<K>::encode(dev, n),
                |plan| {
                    plan.launch_encode(stream, &view, &mut dest, &mut lengths)?;
                    plan.read(stream)
                },
            ),
            Some(None) => Err(tally::Error::invalid("run lengths on the host for keys on the device")),
        }
    })
    .map_err(to_py)
}

/// The first key of every run of `keys` (see `Subject`) into `out_keys`, and with `out_counts`
/// (uint64) every run's length: `unique` (consecutive duplicates dropped, as CUB's
/// `DeviceSelect::Unique` and `torch.unique_consecutive`) and the run-length encoding. Returns the
/// number of runs.
#[pyfunction]
#[pyo3(signature = (keys, out_keys, out_counts=None))]
pub fn runs(
    py: Python<'_>,
    keys: &Bound<'_, PyAny>,
    out_keys: &Bound<'_, PyAny>,
    out_counts: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    let x = Subject::new(keys)?;
    dispatch!(x.dtype, "unique", K => encode_typed::<K>(py, &x, out_keys, out_counts))
}

/// The arrays of one reduce-by-key: keys, values, and the two outputs.
struct ByKey<'a, 'py> {
    keys: Subject<'py>,
    values: &'a Bound<'py, PyAny>,
    out_keys: &'a Bound<'py, PyAny>,
    out_values: &'a Bound<'py, PyAny>,
}

fn reduce_typed<K: RunKey, V: ReduceByKeyInto<O>, O: ScanValue>(
    py: Python<'_>,
    a: &ByKey<'_, '_>,
    op: RunOp,
) -> PyResult<u64> {
    let target = &a.keys.target;
    let keys = a.keys.held::<K>()?;
    let values = Held::<V>::new(a.values, target, "values")?;
    let n = keys.len();
    if values.len() != n {
        return Err(value_error(format!("{n} keys for {} values: one key per value", values.len())));
    }
    let mut out_keys = Out::<K>::new(a.out_keys, target, n)?;
    let mut out_values = Out::<O>::new(a.out_values, target, n)?;
    let backend = target.backend();
    py.detach(|| -> tally::Result<u64> {
        let device = match (target, keys.input(), values.input(), out_keys.device(), out_values.device()) {
            (Target::Cuda(dev), Input::Device(k), Input::Device(v), Some(ok), Some(ov)) => Some((dev, k, v, ok, ov)),
            _ => None,
        };
        let Some((dev, k, v, mut ok, mut ov)) = device else {
            let (ks, vs) = backend.reduce_by_key_vec::<K, V, O>(keys.input(), values.input(), op)?;
            write_out(&mut out_values, target, &vs)?;
            return write_out(&mut out_keys, target, &ks).map(|()| ks.len() as u64);
        };
        let stream = dev.stream();
        let what = format!("reduce_by_key {op:?}");
        with_plan(
            dev,
            &what,
            n,
            || RunsPlan::<K, V, O>::reduce_by_key(dev, op, n),
            |plan| {
                plan.launch_reduce(stream, &k, &v, &mut ok, &mut ov)?;
                plan.read(stream)
            },
        )
    })
    .map_err(to_py)
}

/// The first key of every run of `keys` (see `Subject`) into `out_keys`, and `op` ("sum", "min",
/// "max") over the run's `values` (`((address, elements, on_host), dtype)`, one per key) into
/// `out_values`: sums as numpy's `cumsum` types (int64 for signed integers, uint64 for unsigned
/// ones, the float type itself; a 64-bit sum that leaves its range is an `OverflowError`), min
/// and max as the values' type. Returns the number of runs.
#[pyfunction]
pub fn reduce_by_key(
    py: Python<'_>,
    keys: &Bound<'_, PyAny>,
    values: (Bound<'_, PyAny>, String),
    op: &str,
    out: (Bound<'_, PyAny>, Bound<'_, PyAny>),
) -> PyResult<u64> {
    let (values, value_dtype) = values;
    let a = ByKey { keys: Subject::new(keys)?, values: &values, out_keys: &out.0, out_values: &out.1 };
    let op = match op {
        "sum" => RunOp::Sum,
        "min" => RunOp::Min,
        "max" => RunOp::Max,
        other => return Err(value_error(format!("unknown reduce_by_key op '{other}' (expected sum, min or max)"))),
    };
    dispatch!(a.keys.dtype, "reduce_by_key keys", K => {
        dispatch!(parse_dtype(&value_dtype)?, "reduce_by_key values", V => {
            match op {
                RunOp::Sum => reduce_typed::<K, V, <V as ScanElement>::Wide>(py, &a, op),
                _ => reduce_typed::<K, V, <V as ScanElement>::Extreme>(py, &a, op),
            }
        })
    })
}
