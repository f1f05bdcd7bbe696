//! Pieces every integration test binary of the library shares: finding the GPU, or saying why
//! a GPU test skips.
#![allow(dead_code)] // each test binary uses its own subset

use std::sync::Arc;
use tally::device::CudaDevice;
use tally::Backend;

/// The CUDA device, or None with a line on stderr; with TALLY_REQUIRE_GPU=1 no GPU is a failure,
/// so that a GPU host cannot pass these tests by skipping them.
pub fn gpu() -> Option<Arc<CudaDevice>> {
    match Backend::cuda() {
        Ok(Backend::Cuda(d)) => Some(d),
        Ok(Backend::Cpu) => unreachable!(),
        Err(e) => {
            if std::env::var("TALLY_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("TALLY_REQUIRE_GPU=1 but no GPU: {e}");
            }
            eprintln!("skipping GPU test: {e}");
            None
        }
    }
}
