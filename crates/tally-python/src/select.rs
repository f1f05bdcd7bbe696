//! Stream compaction: `Backend::select`, `select_flagged`, `partition`, `select_indices` and
//! `count_if`, into an output the Python layer allocated with room for every element (a numpy
//! array, or device memory of the caller's array library that the kernels write in place). The
//! Python layer cuts the output to the count these functions return: that count is a number
//! Python needs, so these calls wait for their work. Plans for device arrays are kept between
//! calls (`plans.rs`), keyed by the element type, mode, predicate and length.

use crate::array::{write_out, Held, Out, Subject, Target};
use crate::dispatch;
use crate::error::{to_py, value_error};
use crate::plans;
use pyo3::prelude::*;
use std::any::type_name;
use std::sync::Arc;
use tally::{CudaDevice, Input, Predicate, SelectElement, SelectMode, SelectOptions, SelectPlan};

/// How elements are chosen.
#[derive(Clone, Copy)]
enum How<'a> {
    /// By a predicate: the passing elements (`SelectMode::Stable`) or a partition.
    Predicate(&'a Predicate, SelectMode),
    /// By a mask of bytes, one per element.
    Flags(&'a Held<u8>),
}

/// Runs `work` with the plan of `mode` (by `predicate`, or by flags where it is `None`) over
/// `n` elements of `T` on `dev`: the one kept from an earlier call with the same key, else a
/// new one, kept afterwards (a plan's kernel lookup and count word cost about as much as
/// the selection of a small array).
fn with_plan<T: SelectElement>(
    dev: &Arc<CudaDevice>,
    predicate: Option<&Predicate>,
    mode: SelectMode,
    n: usize,
    work: impl FnOnce(&mut SelectPlan<T>) -> tally::Result<u64>,
) -> tally::Result<u64> {
    let what = match predicate {
        Some(p) => format!("select {} {mode:?} {}", type_name::<T>(), p.bind::<T>()?.cpp()),
        None => format!("select {} flagged", type_name::<T>()),
    };
    let key = (Arc::as_ptr(dev) as usize, what, n);
    let mut plan = plans::take(&key, || match predicate {
        Some(p) => SelectPlan::<T>::new(dev, p, mode, n),
        None => SelectPlan::<T>::flagged(dev, n),
    })?;
    let done = work(&mut plan);
    plans::keep(key, plan);
    done
}

/// The chosen elements of `x` (a partition: all of them, the chosen first) into `out`.
fn values_into<T: SelectElement>(
    py: Python<'_>,
    target: &Target,
    x: &Held<T>,
    out: &mut Out<T>,
    how: How<'_>,
) -> PyResult<u64> {
    let backend = target.backend();
    py.detach(|| -> tally::Result<u64> {
        let (Target::Cuda(dev), Input::Device(view), Some(mut dest)) = (target, x.input(), out.device()) else {
            let (values, kept) = match how {
                How::Flags(f) => {
                    let v = backend.select_flagged_vec(x.input(), f.input())?;
                    let kept = v.len() as u64;
                    (v, kept)
                }
                How::Predicate(p, SelectMode::Partition) => backend.partition_vec(x.input(), p)?,
                How::Predicate(p, _) => {
                    let v = backend.select_vec(x.input(), p, SelectOptions::default())?;
                    let kept = v.len() as u64;
                    (v, kept)
                }
            };
            return write_out(out, target, &values).map(|()| kept);
        };
        // Device in, device out: the kernels write the caller's array in place.
        let stream = dev.stream();
        match how {
            How::Flags(f) => {
                let Input::Device(flags) = f.input() else {
                    return Err(tally::Error::invalid("a host mask for device values"));
                };
                with_plan::<T>(dev, None, SelectMode::Flagged, view.len(), |plan| {
                    plan.launch_flagged(stream, &view, &flags, &mut dest)?;
                    plan.read(stream)
                })
            }
            How::Predicate(p, mode) => with_plan::<T>(dev, Some(p), mode, view.len(), |plan| {
                plan.launch(stream, &view, &mut dest)?;
                plan.read(stream)
            }),
        }
    })
    .map_err(to_py)
}

/// The indices of the elements of `x` that pass `p` into `out` (uint64).
fn indices_into<T: SelectElement>(
    py: Python<'_>,
    target: &Target,
    x: &Held<T>,
    out: &mut Out<u64>,
    p: &Predicate,
) -> PyResult<u64> {
    let backend = target.backend();
    py.detach(|| -> tally::Result<u64> {
        let (Target::Cuda(dev), Input::Device(view), Some(mut dest)) = (target, x.input(), out.device()) else {
            let v = backend.select_indices_vec(x.input(), p)?;
            return write_out(out, target, &v).map(|()| v.len() as u64);
        };
        let stream = dev.stream();
        with_plan::<T>(dev, Some(p), SelectMode::Indices, view.len(), |plan| {
            plan.launch_indices(stream, &view, &mut dest)?;
            plan.read(stream)
        })
    })
    .map_err(to_py)
}

fn select_typed<T: SelectElement>(
    py: Python<'_>,
    x: &Subject<'_>,
    (predicate, mask): (Option<&Predicate>, Option<&Bound<'_, PyAny>>),
    want: &str,
    out: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    let target = &x.target;
    let held = x.held::<T>()?;
    let n = held.len();
    let mask = mask.map(|m| Held::<u8>::new(m, target, "where")).transpose()?;
    let output = || out.ok_or_else(|| value_error("the selection needs an output"));
    match (want, &mask, predicate) {
        ("values", Some(m), _) => {
            if m.len() != n {
                return Err(value_error(format!("{} mask elements for {n} values: one per value", m.len())));
            }
            values_into(py, target, &held, &mut Out::new(output()?, target, n)?, How::Flags(m))
        }
        (_, Some(_), _) => Err(value_error(format!("a mask selects values; '{want}' takes a predicate"))),
        (_, None, None) => Err(value_error("a selection needs a predicate or a mask")),
        ("values", None, Some(p)) => {
            values_into(py, target, &held, &mut Out::new(output()?, target, n)?, How::Predicate(p, SelectMode::Stable))
        }
        ("partition", None, Some(p)) => values_into(
            py,
            target,
            &held,
            &mut Out::new(output()?, target, n)?,
            How::Predicate(p, SelectMode::Partition),
        ),
        ("indices", None, Some(p)) => indices_into(py, target, &held, &mut Out::new(output()?, target, n)?, p),
        ("count", None, Some(p)) => {
            let backend = target.backend();
            py.detach(|| backend.count_if(held.input(), p)).map_err(to_py)
        }
        (other, _, _) => {
            Err(value_error(format!("unknown selection '{other}' (expected values, indices, partition or count)")))
        }
    }
}

/// Selects from `x` (see `Subject`) by `predicate` (tally's expression over `x`, such as
/// `"x > 0 && x < 1"`) or by `mask` (`(address, elements, on_host)` of one byte per element,
/// nonzero to keep), as `want` says: "values" (the chosen elements, in order), "indices" (theirs,
/// uint64), "partition" (the passing elements first, then the rest, each in order) or "count".
/// Writes the front of `out` (room for every element) and returns how many were chosen.
#[pyfunction]
#[pyo3(signature = (x, want, out=None, predicate=None, mask=None))]
pub fn select(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    want: &str,
    out: Option<&Bound<'_, PyAny>>,
    predicate: Option<&str>,
    mask: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    let x = Subject::new(x)?;
    let predicate = predicate.map(Predicate::parse).transpose().map_err(to_py)?;
    dispatch!(x.dtype, "a selection", T => select_typed::<T>(py, &x, (predicate.as_ref(), mask), want, out))
}
