//! One error type for the library. The CLI maps every variant to a one-line message and exit 2.

use cudarc::driver::DriverError;
use thiserror::Error;

/// Everything a tally call can fail with.
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
    OutOfMemory {
        /// The size of the allocation that failed.
        bytes: usize,
        /// What it was for.
        what: String,
    },
    /// A CUDA driver call failed; the driver's error (with its code) is the source.
    #[error("CUDA error in {call}: {source}")]
    Cuda {
        /// The call, and what it was for.
        call: String,
        /// The driver's error.
        #[source]
        source: DriverError,
    },
    /// The device cannot run what was asked of it (a block that does not fit, no cluster
    /// that can be co-scheduled).
    #[error("the device cannot run {what}: {why}")]
    Unsupported {
        /// What was asked for.
        what: String,
        /// Why it cannot run.
        why: String,
    },
    /// NVRTC failed outside a compilation (loading, version queries).
    #[error("NVRTC error in {call}: {message}")]
    Nvrtc {
        /// The NVRTC call.
        call: String,
        /// NVRTC's message.
        message: String,
    },
    /// NVRTC rejected a kernel; the log says why.
    #[error("NVRTC could not compile {kernel} ({options}):\n{log}")]
    Compile {
        /// The translation unit.
        kernel: String,
        /// The options it was compiled with.
        options: String,
        /// NVRTC's log.
        log: String,
    },
    /// A buffer lives on a different backend than the one asked to use it.
    #[error("buffer belongs to the {buffer} backend, but the {backend} backend was asked to use it")]
    WrongBackend {
        /// Where the buffer lives.
        buffer: &'static str,
        /// The backend that was asked.
        backend: &'static str,
    },
    /// A computation's exact result does not fit its output type.
    #[error("overflow: {0}")]
    Overflow(String),
    /// The input is empty and the operation has no value for an empty input.
    #[error("empty input: {0}")]
    EmptyInput(String),
    /// An NCCL call failed (the collectives of a [`crate::multi::DeviceSet`]).
    #[error("NCCL error in {call}: {message}")]
    Nccl {
        /// The NCCL call, and what it was for.
        call: String,
        /// NCCL's result code and its meaning.
        message: String,
    },
    /// Another rank of a [`crate::multi::DeviceSet`] whose ranks span processes failed in the
    /// same call (its own process returns why); this process stopped with it rather than wait
    /// for it in a collective.
    #[error("rank {rank} of the device set failed in this call (its process reports why)")]
    RankFailed {
        /// The lowest rank of the processes that failed (a process marks all its ranks).
        rank: usize,
    },
    /// Reading an input failed (a streamed file or pipe).
    #[error("I/O error ({what}): {source}")]
    Io {
        /// What was being read.
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A result checked against the value it must have was wrong (the lab's final counters).
    #[error("wrong result: {0}")]
    WrongResult(String),
}

/// `Result` with tally's [`Error`](enum@Error).
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An [`Error::InvalidArgument`] with this message.
    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidArgument(msg.into())
    }

    /// The driver's error code, where a driver call failed.
    pub fn driver_code(&self) -> Option<cudarc::driver::sys::CUresult> {
        match self {
            Error::Cuda { source, .. } => Some(source.0),
            _ => None,
        }
    }
}

/// Maps a failed driver call to [`Error::Cuda`], naming the call.
pub(crate) fn driver(call: &str) -> impl FnOnce(DriverError) -> Error + '_ {
    move |source| Error::Cuda { call: call.to_string(), source }
}
