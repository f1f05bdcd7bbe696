//! A histogram of generated data on whatever this machine has: the GPU where CUDA and NVRTC
//! are usable, else the CPU (same API, same counts).
//!
//! `cargo run --release --example histogram -p tally [n]`

use tally::data::{samples, Distribution};
use tally::{Backend, HistogramSpec, Strategy};

fn main() -> tally::Result<()> {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1 << 20);
    // CUDA if a device and NVRTC are usable, else the CPU (`Backend::detect` also says why).
    let backend = Backend::auto();
    let on = if backend.cuda_device().is_some() { "the GPU" } else { "the CPU" };
    println!("backend: {} (running on {on})", backend.name());

    // Zipf-distributed bytes: bin 0 the most frequent, a long tail after it.
    let xs: Vec<u8> = samples(Distribution::Zipf, 256, n, 42);
    // Upload once; the buffer stays resident for as many primitives as use it.
    let buf = backend.upload(&xs)?;
    let spec = HistogramSpec::even(256, 0.0, 256.0);
    let h = backend.histogram(&buf, &spec, Strategy::Auto)?;

    println!("{n} u8 samples, 256 bins, strategy {}", h.strategy);
    for (bin, count) in h.counts[0].iter().enumerate().take(5) {
        println!("  bin {bin:>3}: {count}");
    }
    println!("  bin 255: {}", h.counts[0][255]);
    println!("below {}, above {}, nan {}", h.below[0], h.above[0], h.nan[0]);
    assert_eq!(h.total(), n as u64, "every sample is counted somewhere");
    Ok(())
}
