//! `tally._native`: the extension module under the `tally` Python package. Each primitive has
//! one file here (`histogram`, `reduce`, `scan`, `select`, `runs`; `multi` for device sets) and
//! one Python module over it; the Python layer
//! reads the caller's arrays (numpy, PyTorch, CuPy, DLPack, `__cuda_array_interface__`), picks
//! the device and stream, allocates outputs, and calls these functions with each array as
//! `(address, elements, on_host)`. Every call releases the GIL while tally works.
//!
//! Adding a primitive: a file with its `#[pyfunction]`s built on `array::{Held, Out, Target}`
//! and `dispatch!`, one line per function below, and a Python module in `python/tally/`.

mod array;
mod bench;
mod device;
mod dlpack;
mod error;
mod histogram;
mod multi;
mod plans;
mod reduce;
mod runs;
mod scan;
mod select;

use pyo3::prelude::*;

/// A device's name, compute capability, multiprocessors, bytes of memory and NVRTC target.
type DeviceSummary = (String, (i32, i32), u32, usize, String);

/// The CUDA device `ordinal` as tally sees it: `(name, (major, minor), multiprocessors, bytes
/// of memory, NVRTC target)`; a `RuntimeError` with the reason where there is none.
#[pyfunction]
fn device_info(ordinal: usize) -> PyResult<DeviceSummary> {
    let dev = device::on_default_stream(ordinal).map_err(error::to_py)?;
    let i = dev.info();
    Ok((i.name.clone(), i.compute_capability, i.multiprocessors, i.total_memory, i.target.clone()))
}

/// The ordinal of the CUDA device that holds device memory at `address`.
#[pyfunction]
fn device_of(address: u64) -> PyResult<usize> {
    device::device_of(address).map_err(error::to_py)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(device_info, m)?)?;
    m.add_function(wrap_pyfunction!(device_of, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack::dlpack_info, m)?)?;
    m.add_function(wrap_pyfunction!(histogram::histogram, m)?)?;
    m.add_function(wrap_pyfunction!(histogram::histogram_start, m)?)?;
    m.add_function(wrap_pyfunction!(histogram::histogram_finish, m)?)?;
    m.add_class::<histogram::PendingHistogram>()?;
    m.add_function(wrap_pyfunction!(histogram::histogram_weighted, m)?)?;
    m.add_function(wrap_pyfunction!(histogram::histogram2d, m)?)?;
    m.add_function(wrap_pyfunction!(histogram::image_histogram, m)?)?;
    m.add_function(wrap_pyfunction!(histogram::rule_edges, m)?)?;
    m.add_function(wrap_pyfunction!(reduce::reduce, m)?)?;
    m.add_function(wrap_pyfunction!(reduce::time_reduce, m)?)?;
    m.add_function(wrap_pyfunction!(bench::bench_data, m)?)?;
    m.add_function(wrap_pyfunction!(scan::scan, m)?)?;
    m.add_function(wrap_pyfunction!(select::select, m)?)?;
    m.add_function(wrap_pyfunction!(runs::runs, m)?)?;
    m.add_function(wrap_pyfunction!(runs::reduce_by_key, m)?)?;
    m.add_class::<multi::PyDeviceSet>()?;
    Ok(())
}
