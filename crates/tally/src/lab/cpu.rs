//! The global lab on the CPU: rayon threads hammering `AtomicU32`/`AtomicU64` counters with the
//! same operation-to-counter mapping as the GPU kernels. Integers use `fetch_add`; floats, for
//! which the CPU has no atomic add, a compare-and-swap loop on the bits. Threads do not form
//! warps, so there is one mode, plain.

use super::{
    check_counters, global_expected, scramble, CounterType, GlobalConfig, GlobalMode, GlobalReport, GlobalRow, Progress,
};
use crate::error::{Error, Result};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

/// Operations per rayon task: enough that scheduling is not what is measured.
const CHUNK: usize = 1 << 12;

enum Counters {
    Narrow(Vec<AtomicU32>),
    Wide(Vec<AtomicU64>),
}

impl Counters {
    fn new(t: CounterType, n: usize) -> Counters {
        match t.size() {
            4 => Counters::Narrow((0..n).map(|_| AtomicU32::new(0)).collect()),
            _ => Counters::Wide((0..n).map(|_| AtomicU64::new(0)).collect()),
        }
    }

    fn reset(&self) {
        match self {
            Counters::Narrow(v) => v.iter().for_each(|c| c.store(0, Relaxed)),
            Counters::Wide(v) => v.iter().for_each(|c| c.store(0, Relaxed)),
        }
    }

    fn value(&self, t: CounterType, i: usize) -> f64 {
        match (self, t) {
            (Counters::Narrow(v), CounterType::F32) => f32::from_bits(v[i].load(Relaxed)) as f64,
            (Counters::Narrow(v), _) => v[i].load(Relaxed) as f64,
            (Counters::Wide(v), CounterType::F64) => f64::from_bits(v[i].load(Relaxed)),
            (Counters::Wide(v), _) => v[i].load(Relaxed) as f64,
        }
    }
}

fn run_once(t: CounterType, counters: &Counters, ops: u64, addresses: u64) {
    let (bits, mask) = (ops.trailing_zeros(), (addresses - 1) as u32);
    let body = |k: u32| {
        let a = (scramble(k, bits) & mask) as usize;
        match (counters, t) {
            (Counters::Narrow(v), CounterType::U32) => {
                v[a].fetch_add(1, Relaxed);
            }
            (Counters::Narrow(v), _) => {
                let _ = v[a].fetch_update(Relaxed, Relaxed, |x| Some((f32::from_bits(x) + 1.0).to_bits()));
            }
            (Counters::Wide(v), CounterType::U64) => {
                v[a].fetch_add(1, Relaxed);
            }
            (Counters::Wide(v), _) => {
                let _ = v[a].fetch_update(Relaxed, Relaxed, |x| Some((f64::from_bits(x) + 1.0).to_bits()));
            }
        }
    };
    (0..ops as u32).into_par_iter().with_min_len(CHUNK).for_each(body);
}

/// One row of the CPU global lab: `ops` increments of 1 over `addresses` counters of type `t`,
/// the median of `reps` timed runs after a warm-up, its counters checked.
pub fn global_row(t: CounterType, ops: u64, addresses: u64, reps: usize) -> GlobalRow {
    let counters = Counters::new(t, addresses as usize);
    let mut times = Vec::new();
    // One warm-up, then `reps` timed runs, each from zero.
    for rep in 0..=reps.max(1) {
        counters.reset();
        let start = std::time::Instant::now();
        run_once(t, &counters, ops, addresses);
        if rep > 0 {
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    times.sort_by(|a, b| a.total_cmp(b));
    let ms = times[times.len() / 2];
    let mode = GlobalMode::Plain;
    let expected = global_expected(t, mode, ops, addresses);
    let check = check_counters((0..addresses as usize).map(|i| counters.value(t, i)), expected);
    GlobalRow::new(t, mode, ops, addresses, check.map(|()| ms))
}

/// The CPU global lab: every (type, ops, addresses) of `config` (plain mode only), reporting
/// each row to `progress`.
pub fn global(config: &GlobalConfig, progress: Progress) -> Result<GlobalReport> {
    config.validate()?;
    if let Some(m) = config.modes.iter().find(|&&m| m != GlobalMode::Plain) {
        return Err(Error::invalid(format!("the CPU lab has one mode, plain ('{}' is a GPU mode)", m.name())));
    }
    let sizes = config.sizes();
    let total = sizes.len() * config.types.len();
    let mut rows = Vec::with_capacity(total);
    for &t in &config.types {
        for &(ops, addresses) in &sizes {
            progress(rows.len(), total, &format!("{} {ops} ops over {addresses}", t.name()));
            rows.push(global_row(t, ops, addresses, config.reps));
        }
    }
    progress(total, total, "done");
    let threads = rayon::current_num_threads();
    let mut report = GlobalReport {
        lab: "global",
        backend: "cpu",
        device: format!("CPU, {threads} threads"),
        config: config.clone(),
        rows,
        notes: vec![format!(
            "{threads} rayon threads; integers by fetch_add, floats by a compare-and-swap loop; operation k adds 1 to counter scramble(k) mod addresses"
        )],
    };
    report.fill_ratios();
    Ok(report)
}
