//! Reductions: `Backend::reduce` on one array, the result as a Python number.

use crate::array::{Held, Subject, Target};
use crate::dispatch;
use crate::error::{to_py, value_error};
use crate::plans;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use std::any::type_name;
use std::sync::Arc;
use std::time::Instant;
use tally::{CmpOp, Compare, Input, ReduceElement, ReduceOp, ReduceOptions, ReducePlan, Reduction};

/// The op named `name`, with `compare` = (symbol, value) for count.
pub(crate) fn parse_op(name: &str, compare: Option<(String, f64)>) -> PyResult<ReduceOp> {
    let compare = match compare {
        None => None,
        Some((symbol, value)) => Some(Compare::new(
            CmpOp::from_symbol(&symbol).ok_or_else(|| {
                value_error(format!("unknown comparison '{symbol}' (expected <, <=, >, >=, == or !=)"))
            })?,
            value,
        )),
    };
    ReduceOp::from_name(name, compare).map_err(to_py)
}

/// An integer result exactly, else the float.
fn number(py: Python<'_>, value: f64, exact: Option<i128>) -> PyResult<Py<PyAny>> {
    match exact {
        Some(i) => i.into_py_any(py),
        None => value.into_py_any(py),
    }
}

/// The reduction's value as Python sees it: an int for integer sums, minima and maxima, the
/// index, the count; a float otherwise; a pair for minmax.
pub(crate) fn to_python(py: Python<'_>, r: &Reduction) -> PyResult<Py<PyAny>> {
    match r.op {
        ReduceOp::Sum | ReduceOp::Min | ReduceOp::Max => number(py, r.value, r.exact),
        ReduceOp::Mean => r.value.into_py_any(py),
        ReduceOp::MinMax => {
            let lo = number(py, r.value, r.exact)?;
            let hi = number(py, r.max.unwrap_or(f64::NAN), r.max_exact)?;
            (lo, hi).into_py_any(py)
        }
        ReduceOp::ArgMin | ReduceOp::ArgMax => r.index.unwrap_or(0).into_py_any(py),
        ReduceOp::Count(_) => r.count.unwrap_or(0).into_py_any(py),
    }
}

/// Runs `op` over `x` `reps` times (at least once) with the GIL released; the last result and
/// the mean seconds per call.
fn run(
    py: Python<'_>,
    x: &Subject<'_>,
    op: ReduceOp,
    options: ReduceOptions,
    reps: usize,
) -> PyResult<(Reduction, f64)> {
    dispatch!(x.dtype, "a reduction", T => {
        let held = x.held::<T>()?;
        let target = &x.target;
        py.detach(|| {
            let start = Instant::now();
            let mut r = reduce_once(target, &held, op, options);
            for _ in 1..reps {
                r = reduce_once(target, &held, op, options);
            }
            r.map(|r| (r, start.elapsed().as_secs_f64() / reps.max(1) as f64))
        })
        .map_err(to_py)
    })
}

/// One reduction: of device memory by a plan kept between calls, else by the backend.
fn reduce_once<T: ReduceElement>(
    target: &Target,
    x: &Held<T>,
    op: ReduceOp,
    options: ReduceOptions,
) -> tally::Result<Reduction> {
    let (Target::Cuda(dev), Input::Device(view)) = (target, x.input()) else {
        return target.backend().reduce(x.input(), op, options);
    };
    let key = (Arc::as_ptr(dev) as usize, format!("reduce {} {op:?} {options:?}", type_name::<T>()), view.len());
    let mut plan = plans::take(&key, || ReducePlan::<T>::new(dev, op, options, view.len()))?;
    plan.launch(dev.stream(), &view)?;
    let r = plan.read(dev.stream());
    plans::keep(key, plan);
    r
}

/// Reduces `x` (see `Subject`) by `op` ("sum", "min", "max", "minmax", "argmin", "argmax",
/// "mean", "count" with `compare` = (comparison, value)).
#[pyfunction]
#[pyo3(signature = (x, op, exact=false, skip_nan=false, compare=None))]
pub fn reduce(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    op: &str,
    exact: bool,
    skip_nan: bool,
    compare: Option<(String, f64)>,
) -> PyResult<Py<PyAny>> {
    let op = parse_op(op, compare)?;
    let (r, _) = run(py, &Subject::new(x)?, op, ReduceOptions { exact, skip_nan }, 1)?;
    to_python(py, &r)
}

/// The mean seconds of one library call of [`reduce`] (no comparison, default options) over
/// `reps` calls, timed inside the extension: what a call costs without the Python layer (the
/// benchmark's baseline).
#[pyfunction]
pub fn time_reduce(py: Python<'_>, x: &Bound<'_, PyAny>, op: &str, reps: usize) -> PyResult<f64> {
    let op = parse_op(op, None)?;
    run(py, &Subject::new(x)?, op, ReduceOptions::default(), reps).map(|(_, seconds)| seconds)
}
