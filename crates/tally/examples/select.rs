//! Stream compaction on whatever backend this machine has (the GPU where there is one, else the
//! CPU): values and indices that pass a predicate, a stable partition, a selection by flags, a
//! count, and the time of a stable select of f32 values against a plain sequential filter.
//!
//! `cargo run --release --example select [log2 n]`

use std::time::Instant;
use tally::{Backend, Predicate, SelectOptions};

fn main() -> tally::Result<()> {
    let detected = Backend::detect();
    println!("{detected}");
    let backend = detected.backend;

    let xs = [0.5f32, -1.0, f32::NAN, 2.0, 0.25, 0.0];
    let p = Predicate::parse("x > 0 && x < 1 || isnan(x)")?;
    println!("predicate: {p}");
    println!("select {:?} = {:?}", xs, backend.select_vec(&xs, &p, SelectOptions::default())?);
    println!("indices = {:?}", backend.select_indices_vec(&xs, &p)?);
    println!("nonzero = {:?}", backend.nonzero_vec(&xs)?);
    let (parted, kept) = backend.partition_vec(&xs, &p)?;
    println!("partition = {parted:?} ({kept} first)");
    let flags = [true, false, false, true, false, true];
    println!("flagged = {:?}", backend.select_flagged_vec(&xs, &flags)?);
    let ints = [3i32, 7, 250, -4];
    let p_int = Predicate::parse("x > 2.5 && x < 1e9")?;
    println!("count of {p_int} in {ints:?} = {}", backend.count_if(&ints, &p_int)?);
    match Predicate::parse("x > > 1") {
        Err(e) => println!("a bad predicate: {e}"),
        Ok(_) => unreachable!("does not parse"),
    }

    let log2: u32 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(24);
    let n = 1usize << log2;
    let data: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 * 1e-3 - 0.5).collect();
    let half = Predicate::parse("x > 0 && x < 0.5")?;
    let _ = backend.select_vec(&data, &half, SelectOptions::default())?; // warm-up (and the GPU's compile)
    let mut kept = Vec::new();
    let mut select_s = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        kept = backend.select_vec(&data, &half, SelectOptions::default())?;
        select_s = select_s.min(t.elapsed().as_secs_f64());
    }
    let t = Instant::now();
    let seq: Vec<f32> = data.iter().copied().filter(|&x| x > 0.0 && x < 0.5).collect();
    let seq_s = t.elapsed().as_secs_f64();
    assert_eq!(kept, seq);
    println!(
        "select of 2^{log2} f32 ({} kept): {:.2} ms (a sequential filter: {:.2} ms)",
        kept.len(),
        select_s * 1e3,
        seq_s * 1e3
    );
    Ok(())
}
