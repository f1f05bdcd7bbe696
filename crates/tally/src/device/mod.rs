//! The device layer every primitive is built on: backends, typed device memory, kernel
//! parameters checked against the C++ side, the kernel registry, streams with their scratch
//! workspace, and one launch path. CUDA specifics stay behind this module (see
//! docs/ARCHITECTURE.md for what a second GPU API would have to provide).

pub mod cache;
pub mod cpu;
pub mod cuda;
pub mod memory;
pub mod nvrtc;
pub mod params;
pub mod registry;
pub mod staging;
pub mod workspace;

pub use cuda::{
    CallerStreamOrder, CudaDevice, DeviceInfo, DeviceOptions, EventTimer, ExternalBuffer, Kernel, LaunchShape,
    ReadBack, Stream, KEPT_PINNED_BYTES,
};
pub(crate) use cuda::{PlanReadBack, POSTED_WORDS_MAX};
pub use memory::{DevPtr, DeviceBuffer, DeviceView, DeviceViewMut, Input};
pub use staging::{ChunkLayout, ChunkPipeline, ChunkSource, FileSource, PlainData, ReadSource, SliceSource};

use crate::error::{Error, Result};
use crate::sample::Sample;
use std::str::FromStr;
use std::sync::Arc;

impl DeviceOptions {
    /// The defaults, with what the environment sets: `TALLY_CACHE_DIR` (the kernel cache),
    /// `TALLY_NVRTC_OPTIONS` (extra NVRTC options, space-separated) and the [`crate::Tuning`]
    /// knobs `TALLY_HOT_SLOTS`, `TALLY_PASS_KEYS`, `TALLY_CLUSTER`, `TALLY_AGGREGATE`,
    /// `TALLY_SCAN_BLOCK_THREADS`, `TALLY_SCAN_VECS`, `TALLY_SCAN_MIN_BLOCKS`,
    /// `TALLY_SCAN_STAGED` (0 or 1), `TALLY_SCAN_WINDOWS`, `TALLY_SCAN_SPLIT` (0 or 1),
    /// `TALLY_SCAN_ORDERED` (0 or 1),
    /// `TALLY_PARTITION_SLICE`, `TALLY_PARTITION_THREADS`,
    /// `TALLY_PARTITION_ITEMS`, `TALLY_PARTITION_BLOCKS_PER_SM`, `TALLY_PARTITION_MATCH` (0 or 1),
    /// `TALLY_PARTITION_CHUNK_SHIFT`,
    /// `TALLY_STREAM_CHUNK`, `TALLY_STREAM_BUFFERS`, `TALLY_STREAM_THRESHOLD` (bytes),
    /// `TALLY_COMPACT_THREADS`, `TALLY_COMPACT_VECS`, `TALLY_COMPACT_MIN_BLOCKS`,
    /// `TALLY_REDUCE_VECS`, `TALLY_REDUCE_BLOCKS_PER_SM`,
    /// `TALLY_SPARE_COUNTERS` (bytes), `TALLY_POSTED_COUNTS` (bytes), `TALLY_HIST_GRID`. Empty or
    /// unparsable values are ignored.
    pub fn from_env() -> DeviceOptions {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let number = |name: &str| var(name).and_then(|v| v.parse::<u64>().ok());
        let mut options = DeviceOptions::default();
        if let Some(dir) = var("TALLY_CACHE_DIR") {
            options.cache_dir = Some(dir.into());
        }
        if let Some(extra) = var("TALLY_NVRTC_OPTIONS") {
            options.nvrtc_options = extra.split_whitespace().map(String::from).collect();
        }
        options.tuning = crate::Tuning {
            hot_slots: number("TALLY_HOT_SLOTS").map(|v| v as usize),
            pass_keys: number("TALLY_PASS_KEYS").map(|v| v as usize),
            cluster: number("TALLY_CLUSTER").map(|v| v as u32),
            aggregate: number("TALLY_AGGREGATE").map(|v| v != 0),
            scan_block_threads: number("TALLY_SCAN_BLOCK_THREADS").map(|v| v as u32),
            scan_vecs: number("TALLY_SCAN_VECS").map(|v| v as u32),
            scan_min_blocks: number("TALLY_SCAN_MIN_BLOCKS").map(|v| v.min(u32::MAX as u64) as u32),
            scan_staged: number("TALLY_SCAN_STAGED").map(|v| v != 0),
            scan_windows: number("TALLY_SCAN_WINDOWS").map(|v| v.min(u32::MAX as u64) as u32),
            scan_split: number("TALLY_SCAN_SPLIT").map(|v| v != 0),
            scan_ordered: number("TALLY_SCAN_ORDERED").map(|v| v != 0),
            partition_slice: number("TALLY_PARTITION_SLICE").map(|v| v as usize),
            partition_threads: number("TALLY_PARTITION_THREADS").map(|v| v.min(u32::MAX as u64) as u32),
            partition_items: number("TALLY_PARTITION_ITEMS").map(|v| v.min(u32::MAX as u64) as u32),
            partition_blocks_per_sm: number("TALLY_PARTITION_BLOCKS_PER_SM").map(|v| v.min(u32::MAX as u64) as u32),
            partition_match: number("TALLY_PARTITION_MATCH").map(|v| v != 0),
            partition_chunk_shift: number("TALLY_PARTITION_CHUNK_SHIFT").map(|v| v.min(31) as u32),
            stream_chunk_bytes: number("TALLY_STREAM_CHUNK").map(|v| v as usize),
            stream_buffers: number("TALLY_STREAM_BUFFERS").map(|v| v as usize),
            stream_threshold: number("TALLY_STREAM_THRESHOLD").map(|v| v as usize),
            compact_block_threads: number("TALLY_COMPACT_THREADS").map(|v| v.min(u32::MAX as u64) as u32),
            compact_vecs: number("TALLY_COMPACT_VECS").map(|v| v.min(u32::MAX as u64) as u32),
            compact_min_blocks: number("TALLY_COMPACT_MIN_BLOCKS").map(|v| v.min(u32::MAX as u64) as u32),
            reduce_vecs: number("TALLY_REDUCE_VECS").map(|v| v.min(u32::MAX as u64) as u32),
            reduce_blocks_per_sm: number("TALLY_REDUCE_BLOCKS_PER_SM").map(|v| v.min(u32::MAX as u64) as u32),
            spare_counters_max_bytes: number("TALLY_SPARE_COUNTERS").map(|v| v as usize),
            posted_counts_max_bytes: number("TALLY_POSTED_COUNTS").map(|v| v as usize),
            hist_grid: number("TALLY_HIST_GRID").map(|v| v.clamp(1, u32::MAX as u64) as u32),
        };
        options
    }
}

/// Which backend a caller asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// The GPU when one is usable, else the CPU.
    Auto,
    /// The CPU backend.
    Cpu,
    /// The CUDA backend; an error where it cannot be had.
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

/// A backend handle: cheap to clone; the CUDA one holds the device, its compiled kernels and
/// its default stream.
#[derive(Clone, Debug)]
pub enum Backend {
    /// rayon threads with private state, merged once.
    Cpu,
    /// One CUDA device.
    Cuda(Arc<CudaDevice>),
}

/// What [`Backend::detect`] found: the backend, and why the GPU was not taken where it was not.
#[derive(Debug)]
pub struct Detected {
    /// The backend to use.
    pub backend: Backend,
    /// Why the CUDA backend could not be had (None when it was taken).
    pub fallback: Option<Error>,
}

/// `backend: cuda`, or `backend: cpu (no GPU: ...)` with the reason the GPU was not taken.
impl std::fmt::Display for Detected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "backend: {}", self.backend.name())?;
        match &self.fallback {
            Some(why) => write!(f, " (no GPU: {why})"),
            None => Ok(()),
        }
    }
}

impl Backend {
    /// The CPU backend.
    pub fn cpu() -> Backend {
        Backend::Cpu
    }

    /// The first CUDA device, or the reason there is none.
    pub fn cuda() -> Result<Backend> {
        CudaDevice::new(0).map(Backend::Cuda)
    }

    /// CUDA when a device and NVRTC are usable, otherwise the CPU, silently; see
    /// [`Backend::detect`] for the reason.
    pub fn auto() -> Backend {
        Backend::detect().backend
    }

    /// CUDA when a device and NVRTC are usable, otherwise the CPU and the reason.
    pub fn detect() -> Detected {
        match Backend::cuda() {
            Ok(backend) => Detected { backend, fallback: None },
            Err(e) => Detected { backend: Backend::Cpu, fallback: Some(e) },
        }
    }

    /// The backend of `kind` (auto: [`Backend::auto`]).
    pub fn new(kind: BackendKind) -> Result<Backend> {
        match kind {
            BackendKind::Auto => Ok(Backend::auto()),
            BackendKind::Cpu => Ok(Backend::Cpu),
            BackendKind::Cuda => Backend::cuda(),
        }
    }

    /// "cpu" or "cuda".
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Cuda(_) => "cuda",
        }
    }

    /// The CUDA device, for the CUDA backend.
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
            Backend::Cuda(d) => Ok(Buffer::Cuda(d.stream().upload(data, "samples")?)),
        }
    }
}

/// Samples resident on a backend: what [`Backend::upload`] returns.
pub enum Buffer<T> {
    /// On the host (the CPU backend).
    Host(Vec<T>),
    /// On a CUDA device.
    Cuda(DeviceBuffer<T>),
}

impl<T> Buffer<T> {
    /// Elements in the buffer.
    pub fn len(&self) -> usize {
        match self {
            Buffer::Host(v) => v.len(),
            Buffer::Cuda(b) => b.len(),
        }
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// "cpu" or "cuda".
    pub fn backend_name(&self) -> &'static str {
        match self {
            Buffer::Host(_) => "cpu",
            Buffer::Cuda(_) => "cuda",
        }
    }
}

impl<'a, T> From<&'a Buffer<T>> for Input<'a, T> {
    fn from(b: &'a Buffer<T>) -> Self {
        match b {
            Buffer::Host(v) => Input::Host(v.as_slice()),
            Buffer::Cuda(d) => Input::Device(d.view()),
        }
    }
}

/// Where a primitive's input is on the CUDA backend: borrowed in place, or uploaded for the
/// call (host input) and kept alive as long as the view is used.
pub(crate) enum DeviceInput<'a, T> {
    Borrowed(DeviceView<'a, T>),
    Uploaded(DeviceBuffer<T>),
}

impl<T: cudarc::driver::DeviceRepr> DeviceInput<'_, T> {
    /// The input on `stream`'s device: host slices are uploaded, device views borrowed.
    pub(crate) fn new<'a>(stream: &Stream, input: Input<'a, T>, what: &str) -> Result<DeviceInput<'a, T>> {
        Ok(match input {
            Input::Host(s) => DeviceInput::Uploaded(stream.upload(s, what)?),
            Input::Device(v) => DeviceInput::Borrowed(v),
        })
    }

    /// The input as a view.
    pub(crate) fn view(&self) -> DeviceView<'_, T> {
        match self {
            DeviceInput::Borrowed(v) => v.reborrow(),
            DeviceInput::Uploaded(b) => b.view(),
        }
    }
}
