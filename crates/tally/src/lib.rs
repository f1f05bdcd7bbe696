//! tally: GPU primitives that count and combine, built from one hierarchy: combine in
//! registers (warp), then in shared memory (block), and touch global memory once per block
//! (device). A CPU backend with the same API runs everywhere and is the reference for tests.
//!
//! ```no_run
//! use tally::{Backend, HistogramSpec, Strategy};
//! let backend = Backend::auto();
//! let samples: Vec<u8> = (0..1000u32).map(|i| (i % 256) as u8).collect();
//! let h = backend.histogram(&samples, &HistogramSpec::even(256, 0.0, 256.0), Strategy::Auto).unwrap();
//! assert_eq!(h.counts[0].iter().sum::<u64>(), 1000);
//! ```

pub mod data;
pub mod device;
pub mod error;
pub mod histogram;
pub mod kernels;
pub mod lab;
pub mod sample;

pub use device::{Backend, BackendKind, Buffer, Input};
pub use error::{Error, Result};
pub use histogram::{
    Accumulation, Bins, Channels, Histogram, Histogram2d, Histogram2dSpec, HistogramSpec, Pairs, SharedAtomics,
    Strategy, WeightedHistogram, WeightedOptions,
};
pub use sample::{DType, Sample};
