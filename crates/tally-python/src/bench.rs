//! The benches' data for the Python benchmark: the arrays `tally bench` generates, so that the
//! Python calls and the Rust library's are timed on the same data (a histogram's or a
//! selection's speed depends on its data, not only on its size).

use crate::array::{Out, Target};
use crate::error::value_error;
use cudarc::driver::DeviceRepr;
use pyo3::prelude::*;
use tally::data::{self, Distribution};

fn fill<T: DeviceRepr + Copy + Send>(
    py: Python<'_>,
    out: &Bound<'_, PyAny>,
    n: usize,
    make: impl FnOnce() -> Vec<T> + Send,
) -> PyResult<()> {
    let mut o = Out::<T>::new(out, &Target::Cpu, n)?;
    let values = py.detach(make);
    o.host().ok_or_else(|| value_error("the benches' data are written into a host array"))?.copy_from_slice(&values);
    Ok(())
}

/// Writes `n` elements of the bench data `name` into `out` (a host array of its type):
/// "reduce f32", "reduce i32" (`tally bench reduce`), "scan f32", "scan i32" (`tally bench
/// scan`), "hist f32", "hist i32" (`tally bench hist`, uniform over 256 bins), "peer f32" (the
/// select and reduce-by-key benches' values), "keys i32/8" (the run benches' keys).
#[pyfunction]
pub fn bench_data(py: Python<'_>, name: &str, n: usize, out: &Bound<'_, PyAny>) -> PyResult<()> {
    let hist_seed = data::HIST_SEED ^ 256;
    match name {
        "reduce f32" => fill(py, out, n, || data::bench_values::<f32>(n, data::REDUCE_SEED)),
        "reduce i32" => fill(py, out, n, || data::bench_values::<i32>(n, data::REDUCE_SEED)),
        "scan f32" => fill(py, out, n, || data::bench_values::<f32>(n, data::SCAN_SEED_F32)),
        "scan i32" => fill(py, out, n, || data::bench_values::<i32>(n, data::SCAN_SEED_I32)),
        "hist f32" => fill(py, out, n, || data::samples::<f32>(Distribution::Uniform, 256, n, hist_seed)),
        "hist i32" => fill(py, out, n, || data::samples::<i32>(Distribution::Uniform, 256, n, hist_seed)),
        "peer f32" => fill(py, out, n, || data::peer_values(n, 1)),
        "keys i32/8" => fill(py, out, n, || data::peer_keys(n, 8)),
        other => Err(value_error(format!("no bench data '{other}'"))),
    }
}
