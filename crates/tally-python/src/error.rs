//! tally's errors as Python exceptions: `ValueError` for bad arguments and empty inputs,
//! `OverflowError` for results that do not fit, `MemoryError` for device memory, and
//! `RuntimeError` for the device, the driver and NVRTC. The message is tally's.

use pyo3::exceptions::{PyMemoryError, PyOverflowError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::PyErr;
use tally::Error;

/// The Python exception for a tally error.
pub fn to_py(e: Error) -> PyErr {
    let message = e.to_string();
    match e {
        Error::InvalidArgument(_) | Error::EmptyInput(_) | Error::WrongBackend { .. } => PyValueError::new_err(message),
        Error::Overflow(_) => PyOverflowError::new_err(message),
        Error::OutOfMemory { .. } => PyMemoryError::new_err(message),
        _ => PyRuntimeError::new_err(message),
    }
}

/// A `TypeError` with this message.
pub fn type_error(message: impl Into<String>) -> PyErr {
    PyTypeError::new_err(message.into())
}

/// A `ValueError` with this message.
pub fn value_error(message: impl Into<String>) -> PyErr {
    PyValueError::new_err(message.into())
}
