//! tally: GPU primitives that count and combine, built from one hierarchy: combine in
//! registers (warp), then in shared memory (block), and touch global memory once per block
//! (device). A CPU backend with the same API runs everywhere and is the reference for tests.
//!
//! ```
//! use tally::{Backend, HistogramSpec, Strategy};
//! let backend = Backend::cpu(); // Backend::auto() takes the GPU where there is one
//! let samples: Vec<u8> = (0..1000u32).map(|i| (i % 256) as u8).collect();
//! let h = backend.histogram(&samples, &HistogramSpec::even(256, 0.0, 256.0), Strategy::Auto).unwrap();
//! assert_eq!(h.counts[0].iter().sum::<u64>(), 1000);
//! ```
//!
//! The layers (docs/ARCHITECTURE.md): primitive modules ([`histogram`]) with their plans and
//! policies, over the device layer ([`device`]: typed buffers, checked kernel parameters, the
//! kernel registry, streams with a scratch workspace, one launch path), over the kernels
//! ([`kernels`]: warp, block and device pieces in CUDA C++).
#![warn(missing_docs)]

pub mod data;
pub mod device;
pub mod error;
pub mod histogram;
pub(crate) mod host_alloc;
pub mod kernels;
pub mod lab;
pub mod multi;
pub mod predicate;
pub mod reduce;
pub mod runs;
pub mod sample;
pub mod scan;
pub mod select;

pub use device::{
    Backend, BackendKind, Buffer, CallerStreamOrder, CudaDevice, Detected, DeviceBuffer, DeviceOptions, DeviceView,
    DeviceViewMut, ExternalBuffer, Input, Stream,
};
pub use error::{Error, Result};
/// The 16-bit float types tally reads ([`half::f16`], [`half::bf16`]), re-exported.
pub use half;
pub use histogram::{
    Accumulation, Bins, Brightness, Channels, DevicePairs, Histogram, Histogram2d, Histogram2dSpec, HistogramPlan,
    HistogramSpec, Image, ImageLayout, Pairs, SharedAtomics, Strategy, Tuning, WeightedHistogram, WeightedOptions,
};
pub use predicate::Predicate;
pub use reduce::{
    CmpOp, Compare, CustomOp, ElementType, ExactSum, ReduceElement, ReduceOp, ReduceOptions, ReducePlan, Reduction,
};
pub use runs::{ReduceByKeyInto, RunKey, RunOp, Runs, RunsPlan};
pub use sample::{DType, Sample};
pub use scan::{ScanElement, ScanInto, ScanKey, ScanOp, ScanOptions, ScanPlan, ScanValue};
pub use select::{SelectElement, SelectFlag, SelectMode, SelectOptions, SelectPlan};
