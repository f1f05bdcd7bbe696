//! Backends: where the counting happens. `Backend::auto()` takes the GPU when one is usable and
//! otherwise the CPU, saying so in one line on stderr.

pub mod cache;
pub mod cpu;
pub mod cuda;
pub mod nvrtc;

use crate::error::{Error, Result};
use crate::sample::Sample;
pub use cuda::{CudaDevice, DeviceInfo};
use cudarc::driver::CudaSlice;
use std::str::FromStr;
use std::sync::Arc;

/// Which backend a caller asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    Auto,
    Cpu,
    Cuda,
}

impl FromStr for BackendKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(BackendKind::Auto),
            "cpu" => Ok(BackendKind::Cpu),
            "cuda" => Ok(BackendKind::Cuda),
            _ => Err(Error::invalid(format!("unknown backend '{s}' (expected auto, cpu or cuda)"))),
        }
    }
}

/// A backend handle: cheap to clone, holds the device and its kernel cache.
#[derive(Clone, Debug)]
pub enum Backend {
    Cpu,
    Cuda(Arc<CudaDevice>),
}

impl Backend {
    pub fn cpu() -> Backend {
        Backend::Cpu
    }

    /// The first CUDA device, or the reason there is none.
    pub fn cuda() -> Result<Backend> {
        CudaDevice::new(0).map(Backend::Cuda)
    }

    /// CUDA when a device and NVRTC are usable, otherwise the CPU with one line on stderr.
    pub fn auto() -> Backend {
        match Backend::cuda() {
            Ok(b) => b,
            Err(e) => {
                eprintln!("tally: no usable GPU ({e}); using the CPU backend");
                Backend::Cpu
            }
        }
    }

    pub fn new(kind: BackendKind) -> Result<Backend> {
        match kind {
            BackendKind::Auto => Ok(Backend::auto()),
            BackendKind::Cpu => Ok(Backend::Cpu),
            BackendKind::Cuda => Backend::cuda(),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Cuda(_) => "cuda",
        }
    }

    pub fn cuda_device(&self) -> Option<&Arc<CudaDevice>> {
        match self {
            Backend::Cuda(d) => Some(d),
            Backend::Cpu => None,
        }
    }

    /// Copies samples to where this backend reads them, once, for many primitives to use.
    pub fn upload<T: Sample>(&self, data: &[T]) -> Result<Buffer<T>> {
        match self {
            Backend::Cpu => Ok(Buffer::Host(data.to_vec())),
            Backend::Cuda(d) => Ok(Buffer::Cuda { data: d.upload(data, "samples")?, len: data.len() }),
        }
    }
}

/// Samples resident on a backend.
pub enum Buffer<T> {
    Host(Vec<T>),
    Cuda { data: CudaSlice<T>, len: usize },
}

impl<T> Buffer<T> {
    pub fn len(&self) -> usize {
        match self {
            Buffer::Host(v) => v.len(),
            Buffer::Cuda { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn backend_name(&self) -> &'static str {
        match self {
            Buffer::Host(_) => "cpu",
            Buffer::Cuda { .. } => "cuda",
        }
    }
}

/// What a primitive reads: host memory, or a buffer already on the backend.
pub enum Input<'a, T> {
    Host(&'a [T]),
    Resident(&'a Buffer<T>),
}

impl<'a, T> From<&'a [T]> for Input<'a, T> {
    fn from(s: &'a [T]) -> Self {
        Input::Host(s)
    }
}

impl<'a, T> From<&'a Vec<T>> for Input<'a, T> {
    fn from(s: &'a Vec<T>) -> Self {
        Input::Host(s.as_slice())
    }
}

impl<'a, T> From<&'a Buffer<T>> for Input<'a, T> {
    fn from(b: &'a Buffer<T>) -> Self {
        Input::Resident(b)
    }
}
