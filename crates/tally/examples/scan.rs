//! Prefix scans on whatever backend this machine has (the GPU where there is one, else the
//! CPU): numpy's cumsum, an exclusive running max, a scan by key, a custom operation, and the
//! time of an inclusive f32 sum against a plain sequential loop.
//!
//! `cargo run --release --example scan [log2 n]`

use std::time::Instant;
use tally::{Backend, CustomOp, ScanOp, ScanOptions};

fn main() -> tally::Result<()> {
    let detected = Backend::detect();
    println!("{detected}");
    let backend = detected.backend;

    let xs = [3i32, -1, 4, 1, -5, 9];
    println!("cumsum {:?} = {:?}", xs, backend.cumsum_vec(&xs)?);
    let running_max: Vec<i32> = backend.scan_vec(&xs, ScanOp::Max, ScanOptions::exclusive())?;
    println!("exclusive running max = {running_max:?}");
    let keys = [0u32, 0, 0, 1, 1, 2];
    let by_key: Vec<i64> = backend.scan_by_key_vec(&keys, &xs, ScanOp::Sum, ScanOptions::default())?;
    println!("sum by key {keys:?} = {by_key:?}");
    let absmax = CustomOp::new("max(abs(a), abs(b))", "0", 0i32, |a: i32, b: i32| a.abs().max(b.abs()));
    println!("running max |x| = {:?}", backend.scan_custom_vec(&xs, &absmax, ScanOptions::default())?);

    let log2: u32 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(24);
    let n = 1usize << log2;
    let data: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 * 1e-3 - 0.5).collect();
    let _ = backend.cumsum_vec(&data)?; // warm-up (and the kernel's compile on a GPU)
                                        // The best of five runs of each, so that a busy machine does not decide.
    let mut out = Vec::new();
    let mut scan_s = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        out = backend.cumsum_vec(&data)?;
        scan_s = scan_s.min(t.elapsed().as_secs_f64());
    }
    let mut seq = vec![0.0f32; n];
    let mut seq_s = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        let mut run = 0.0f32;
        for (y, &x) in seq.iter_mut().zip(&data) {
            run += x;
            *y = run;
        }
        seq_s = seq_s.min(t.elapsed().as_secs_f64());
    }
    let worst = out.iter().zip(&seq).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    println!(
        "inclusive f32 sum of 2^{log2}: {:.2} ms (with copies), sequential loop {:.2} ms; largest difference {worst:e}",
        scan_s * 1e3,
        seq_s * 1e3
    );
    Ok(())
}
