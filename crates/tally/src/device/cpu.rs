//! The CPU backend: rayon's worker threads stand in for blocks, each with private state merged
//! once at the end. Embedded default where no GPU is present, and the reference for tests.

use serde::Serialize;

/// What `tally info` reports about the CPU backend.
#[derive(Clone, Debug, Serialize)]
pub struct CpuInfo {
    /// Worker threads in rayon's global pool: the CPU backend's parallelism.
    pub threads: usize,
}

/// The CPU backend's properties on this machine.
pub fn info() -> CpuInfo {
    CpuInfo { threads: rayon::current_num_threads() }
}

/// Read bandwidth of this machine's cores in GB/s: a parallel reduction over `bytes` of memory,
/// median of `reps` passes. The CPU yardstick, as `tally_read_bandwidth` is the GPU's.
pub fn read_bandwidth(bytes: usize, reps: usize) -> f64 {
    use rayon::prelude::*;
    let data: Vec<u64> = (0..bytes / 8).into_par_iter().map(|i| i as u64).collect();
    let mut times = Vec::new();
    for _ in 0..reps.max(1) + 1 {
        let t = std::time::Instant::now();
        let x = data.par_chunks(1 << 16).map(|c| c.iter().fold(0u64, |a, &b| a ^ b)).reduce(|| 0, |a, b| a ^ b);
        std::hint::black_box(x);
        times.push(t.elapsed().as_secs_f64());
    }
    times.remove(0); // the first pass also faults pages in
    times.sort_by(|a, b| a.total_cmp(b));
    (data.len() * 8) as f64 / times[times.len() / 2] / 1e9
}
