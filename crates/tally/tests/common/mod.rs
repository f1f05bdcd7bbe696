//! Pieces every integration test binary of the library shares: finding the GPU, or saying why
//! a GPU test skips; a deterministic generator of random inputs.
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

/// A small deterministic generator: the splitmix64 sequence from a seed.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        let z = tally::data::splitmix64(self.0);
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z
    }
}
