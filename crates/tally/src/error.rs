//! One error type for the library; the CLI maps every variant to a one-line message and exit 2.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    /// The caller asked for something that has no meaning (zero bins, an empty range, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A CUDA backend was asked for explicitly but cannot be had on this machine.
    #[error("CUDA backend unavailable: {0}")]
    CudaUnavailable(String),
    /// The device ran out of memory for an allocation of `bytes`.
    #[error("GPU out of memory: could not allocate {bytes} bytes ({what})")]
    OutOfMemory { bytes: usize, what: String },
    /// Any other CUDA driver error, with the call that raised it.
    #[error("CUDA error in {call}: {message}")]
    Cuda { call: String, message: String },
    /// NVRTC rejected a kernel; the log says why.
    #[error("NVRTC could not compile {kernel} ({options}):\n{log}")]
    Compile { kernel: String, options: String, log: String },
    /// A buffer lives on a different backend than the one asked to use it.
    #[error("buffer belongs to the {buffer} backend, but the {backend} backend was asked to use it")]
    WrongBackend { buffer: &'static str, backend: &'static str },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An [`Error::InvalidArgument`] with this message.
    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidArgument(msg.into())
    }
}
