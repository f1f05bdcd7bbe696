//! Limits checked before anything large is allocated: a request that cannot fit in this
//! machine's memory is one clear error, not an abort halfway through.

use anyhow::bail;

/// Physical memory of this machine in bytes (`MemTotal`), where the OS says.
pub fn physical_memory() -> Option<u128> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u128 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn gib(b: u128) -> String {
    format!("{:.1} GiB", b as f64 / (1u128 << 30) as f64)
}

/// Refuses a plan that needs `bytes` (None: more than 2^128) of host memory for `what` when
/// that is more than this machine has (or more than 2^47 bytes where it cannot tell).
pub fn check_memory(bytes: Option<u128>, what: &str) -> anyhow::Result<()> {
    let limit = physical_memory().unwrap_or(1 << 47);
    match bytes {
        Some(b) if b <= limit => Ok(()),
        Some(b) => bail!("{what} needs about {} of memory, more than this machine has ({})", gib(b), gib(limit)),
        None => bail!("{what} needs more memory than any machine has"),
    }
}

/// Host memory for counting into `counters` counters on the CPU backend: the result and the
/// workers' private copies.
pub fn counting_bytes(counters: u128) -> u128 {
    let threads = rayon::current_num_threads().max(1) as u128;
    counters * 8 * (2 * threads + 2)
}

/// `--reps`, wherever it is taken: at least one timed run.
pub fn check_reps(reps: usize) -> anyhow::Result<()> {
    if reps == 0 {
        bail!("--reps must be at least 1 (nothing would be timed)");
    }
    Ok(())
}
