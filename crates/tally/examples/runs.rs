//! Runs of equal consecutive keys: unique, run-length encoding and reduce-by-key, on the GPU
//! when there is one, else on the CPU. `cargo run -p tally --example runs`
use tally::{Backend, RunOp};

fn main() -> tally::Result<()> {
    let detected = Backend::detect();
    println!("{detected}");
    let backend = detected.backend;
    // Sensor ids in time order, with a reading each.
    let ids: Vec<u32> = (0..1_000_000u32).map(|i| (i / 7) % 1000).collect();
    let readings: Vec<f32> = (0..ids.len()).map(|i| (i % 13) as f32 * 0.5).collect();
    let unique = backend.unique_vec(&ids)?;
    let (keys, lengths) = backend.run_length_encode_vec(&ids)?;
    let (_, sums): (Vec<u32>, Vec<f32>) = backend.reduce_by_key_vec(&ids, &readings, RunOp::Sum)?;
    let (_, peaks): (Vec<u32>, Vec<f32>) = backend.reduce_by_key_vec(&ids, &readings, RunOp::Max)?;
    println!("{} keys in {} runs", ids.len(), unique.len());
    for r in 0..3 {
        println!("run {r}: key {} x{}, sum {}, max {}", keys[r], lengths[r], sums[r], peaks[r]);
    }
    assert_eq!(lengths.iter().sum::<u64>(), ids.len() as u64);
    Ok(())
}
