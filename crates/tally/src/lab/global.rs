//! The global lab: throughput of `atomicAdd` on global memory against the number of distinct
//! addresses, per counter type and issue mode, and the exact values its counters must end at.

use crate::error::{Error, Result};
use serde::Serialize;
use std::str::FromStr;

/// The counter types of the global lab.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CounterType {
    /// `unsigned int`: native integer atomics.
    U32,
    /// `unsigned long long`: native 64-bit integer atomics.
    U64,
    /// `float`: native float `atomicAdd` (stops counting at 2^24).
    F32,
    /// `double`: native double `atomicAdd`.
    F64,
}

impl CounterType {
    /// Every counter type.
    pub const ALL: [CounterType; 4] = [CounterType::U32, CounterType::U64, CounterType::F32, CounterType::F64];

    /// The name the CLI and reports use (`u32`, ...).
    pub fn name(self) -> &'static str {
        match self {
            CounterType::U32 => "u32",
            CounterType::U64 => "u64",
            CounterType::F32 => "f32",
            CounterType::F64 => "f64",
        }
    }

    /// The C++ type the kernel is specialised for.
    pub fn cuda_type(self) -> &'static str {
        match self {
            CounterType::U32 => "unsigned int",
            CounterType::U64 => "unsigned long long",
            CounterType::F32 => "float",
            CounterType::F64 => "double",
        }
    }

    /// Bytes per counter.
    pub fn size(self) -> usize {
        match self {
            CounterType::U32 | CounterType::F32 => 4,
            CounterType::U64 | CounterType::F64 => 8,
        }
    }

    /// Reads counter `i` of a little-endian buffer of this type, exactly, as an f64 (counts stay
    /// below 2^53).
    pub fn decode(self, bytes: &[u8], i: usize) -> f64 {
        let at = |n: usize| &bytes[i * n..(i + 1) * n];
        match self {
            CounterType::U32 => u32::from_le_bytes(at(4).try_into().unwrap()) as f64,
            CounterType::U64 => u64::from_le_bytes(at(8).try_into().unwrap()) as f64,
            CounterType::F32 => f32::from_le_bytes(at(4).try_into().unwrap()) as f64,
            CounterType::F64 => f64::from_le_bytes(at(8).try_into().unwrap()),
        }
    }
}

impl FromStr for CounterType {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        CounterType::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| Error::invalid(format!("unknown counter type '{s}' (expected u32, u64, f32 or f64)")))
    }
}

/// How the global lab issues its increments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GlobalMode {
    /// One `atomicAdd` per lane, the address computed from a run-time counter count: nothing the
    /// compiler can prove about it, so nothing it can combine.
    Plain,
    /// `__match_any_sync` groups the lanes with the same address; one leader adds the group's
    /// size (`__popc`).
    WarpAggregated,
    /// The plain source with the counter count a compile-time constant: where that makes the
    /// address provably uniform (one counter), the compiler may aggregate by itself.
    Compiler,
}

impl GlobalMode {
    /// Every mode.
    pub const ALL: [GlobalMode; 3] = [GlobalMode::Plain, GlobalMode::WarpAggregated, GlobalMode::Compiler];

    /// The name the CLI and reports use (`plain`, `warp-aggregated`, `compiler`).
    pub fn name(self) -> &'static str {
        match self {
            GlobalMode::Plain => "plain",
            GlobalMode::WarpAggregated => "warp-aggregated",
            GlobalMode::Compiler => "compiler",
        }
    }
}

impl FromStr for GlobalMode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        GlobalMode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| Error::invalid(format!("unknown mode '{s}' (expected plain, warp-aggregated or compiler)")))
    }
}

/// What the global lab runs: every (ops, addresses, type, mode) combination.
#[derive(Clone, Debug, Serialize)]
pub struct GlobalConfig {
    /// Operations per run; powers of two, at most 2^31.
    pub ops: Vec<u64>,
    /// Distinct addresses (counters); powers of two, at most the operations of a run.
    pub addresses: Vec<u64>,
    /// Counter types to run.
    pub types: Vec<CounterType>,
    /// Ways of issuing the increments to run (the CPU has only `plain`).
    pub modes: Vec<GlobalMode>,
    /// Timed runs per row (fewer for runs slower than 50 ms), after one warm-up.
    pub reps: usize,
}

/// The address counts the global lab sweeps by default: from all on one counter to 2^20.
pub const DEFAULT_ADDRESSES: [u64; 6] = [1, 32, 256, 1024, 65536, 1 << 20];

impl GlobalConfig {
    /// The sizes: 2^20 and 2^28 operations over 1 to 2^20 addresses, every type and mode.
    pub fn gpu_default() -> Self {
        GlobalConfig {
            ops: vec![1 << 20, 1 << 28],
            addresses: DEFAULT_ADDRESSES.to_vec(),
            types: CounterType::ALL.to_vec(),
            modes: GlobalMode::ALL.to_vec(),
            reps: 10,
        }
    }

    /// Smaller runs for the CPU, which has one mode (threads do not form warps).
    pub fn cpu_default() -> Self {
        GlobalConfig {
            ops: vec![1 << 20, 1 << 22],
            addresses: DEFAULT_ADDRESSES.to_vec(),
            types: CounterType::ALL.to_vec(),
            modes: vec![GlobalMode::Plain],
            reps: 5,
        }
    }

    /// Checks that the sizes are powers of two in range, that no list is empty, that some
    /// (ops, addresses) pair is runnable, and that something is timed.
    pub fn validate(&self) -> Result<()> {
        for &o in &self.ops {
            if !o.is_power_of_two() || o > 1 << 31 {
                return Err(Error::invalid(format!("operations must be a power of two up to 2^31, not {o}")));
            }
        }
        for &a in &self.addresses {
            if !a.is_power_of_two() || a > 1 << 30 {
                return Err(Error::invalid(format!("addresses must be a power of two up to 2^30, not {a}")));
            }
        }
        if self.ops.is_empty() || self.addresses.is_empty() || self.types.is_empty() || self.modes.is_empty() {
            return Err(Error::invalid("nothing to run: an empty list of operations, addresses, types or modes"));
        }
        if self.sizes().is_empty() {
            return Err(Error::invalid(
                "nothing to run: every address count is larger than every operation count (addresses must be at most the operations)",
            ));
        }
        if self.reps == 0 {
            return Err(Error::invalid("reps must be at least 1 (nothing would be timed)"));
        }
        Ok(())
    }

    /// The (ops, addresses) pairs that make sense: no more addresses than operations.
    pub fn sizes(&self) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        for &o in &self.ops {
            for &a in &self.addresses {
                if a <= o {
                    v.push((o, a));
                }
            }
        }
        v
    }
}

/// One measured row. `error` is set, and the figures are not, when the final values were wrong
/// or the run failed.
#[derive(Clone, Debug, Serialize)]
pub struct GlobalRow {
    /// The counter type.
    #[serde(rename = "type")]
    pub counter_type: CounterType,
    /// How the increments were issued.
    pub mode: GlobalMode,
    /// Increments per run.
    pub ops: u64,
    /// Distinct counters they were spread over.
    pub addresses: u64,
    /// Median milliseconds of a run.
    pub ms: Option<f64>,
    /// Increments per second at that median.
    pub ops_per_second: Option<f64>,
    /// ops/s over the ops/s of the row with the most addresses (no contention) of the same
    /// type, mode and operation count.
    pub vs_uncontended: Option<f64>,
    /// Whether every counter held its expected final value.
    pub verified: bool,
    /// What went wrong, where something did.
    pub error: Option<String>,
}

impl GlobalRow {
    /// The row of `ops` increments over `addresses` counters: the median milliseconds of a run
    /// whose counters were right, or what went wrong.
    pub fn new(counter_type: CounterType, mode: GlobalMode, ops: u64, addresses: u64, ms: Result<f64>) -> GlobalRow {
        let (ms, error) = match ms {
            Ok(ms) => (Some(ms), None),
            Err(e) => (None, Some(e.to_string())),
        };
        GlobalRow {
            counter_type,
            mode,
            ops,
            addresses,
            ms,
            ops_per_second: ms.map(|ms| ops as f64 / (ms * 1e-3)),
            vs_uncontended: None,
            verified: error.is_none(),
            error,
        }
    }
}

/// The global lab's result: its configuration, a row per measurement, and notes on the method.
#[derive(Clone, Debug, Serialize)]
pub struct GlobalReport {
    /// "global".
    pub lab: &'static str,
    /// "cpu" or "cuda".
    pub backend: &'static str,
    /// The device's name (or the CPU's thread count).
    pub device: String,
    /// What was run.
    pub config: GlobalConfig,
    /// One row per (type, mode, ops, addresses).
    pub rows: Vec<GlobalRow>,
    /// How the runs were made, and what the compiler mode showed.
    pub notes: Vec<String>,
}

impl GlobalReport {
    /// Fills `vs_uncontended` from the rows with the most addresses.
    pub(crate) fn fill_ratios(&mut self) {
        let rows = self.rows.clone();
        for r in &mut self.rows {
            let reference = rows
                .iter()
                .filter(|q| q.counter_type == r.counter_type && q.mode == r.mode && q.ops == r.ops)
                .max_by_key(|q| q.addresses);
            if let (Some(q), Some(x)) = (reference, r.ops_per_second) {
                r.vs_uncontended = q.ops_per_second.map(|y| x / y);
            }
        }
    }

    /// Where the compiler mode with one counter ran as fast as the hand-aggregated one (the
    /// compiler combined the warp's atomics) or as slow as the plain one (it did not).
    pub(crate) fn note_compiler_aggregation(&mut self) {
        let find = |t, m, o| {
            self.rows
                .iter()
                .find(|r| r.counter_type == t && r.mode == m && r.ops == o && r.addresses == 1)
                .and_then(|r| r.ops_per_second)
        };
        let mut notes = Vec::new();
        for &o in &self.config.ops {
            for &t in &self.config.types {
                let (Some(p), Some(h), Some(c)) = (
                    find(t, GlobalMode::Plain, o),
                    find(t, GlobalMode::WarpAggregated, o),
                    find(t, GlobalMode::Compiler, o),
                ) else {
                    continue;
                };
                let verdict =
                    if (c / p) > (h / c) { "aggregated by the compiler" } else { "not aggregated by the compiler" };
                notes.push(format!(
                    "{} {} ops, one address: compiler mode {:.1}x plain, {:.2}x hand-aggregated: {verdict}",
                    t.name(),
                    o,
                    c / p,
                    c / h
                ));
            }
        }
        self.notes.extend(notes);
    }
}

/// What the final value of every counter must be.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Expected {
    /// Exactly this value.
    Exact(f64),
    /// Inclusive bounds, where rounding makes the exact value depend on the order.
    Between(f64, f64),
}

impl Expected {
    /// Whether `x` is an acceptable final value (within bounds, a whole number).
    pub fn admits(self, x: f64) -> bool {
        match self {
            Expected::Exact(v) => x == v,
            Expected::Between(lo, hi) => x >= lo && x <= hi && x.fract() == 0.0,
        }
    }
}

/// The final value of each counter after `ops` increments of 1 spread over `addresses`
/// counters by [`scramble`]: exactly ops / addresses each, as long as the type counts that far.
/// An f32 stops counting at 2^24, where adding 1 rounds back to 2^24: adds of one at a time
/// stay there; a warp's combined adds (up to 32) keep growing by an order-dependent amount.
pub fn global_expected(t: CounterType, mode: GlobalMode, ops: u64, addresses: u64) -> Expected {
    let per_counter = (ops / addresses) as f64;
    const F32_EXACT: f64 = (1u64 << 24) as f64;
    if t == CounterType::F32 && per_counter > F32_EXACT {
        return match mode {
            GlobalMode::Plain => Expected::Exact(F32_EXACT),
            // The compiler could in principle combine float adds too: allow for it.
            GlobalMode::WarpAggregated | GlobalMode::Compiler => Expected::Between(F32_EXACT, per_counter),
        };
    }
    Expected::Exact(per_counter)
}

/// Checks every counter; the error names the first that is wrong and how many are.
pub fn check_counters(values: impl Iterator<Item = f64>, expected: Expected) -> Result<()> {
    let mut bad = 0usize;
    let mut first = None;
    for (i, x) in values.enumerate() {
        if !expected.admits(x) {
            bad += 1;
            first.get_or_insert((i, x));
        }
    }
    match first {
        None => Ok(()),
        Some((i, x)) => Err(Error::WrongResult(format!(
            "{bad} counters hold wrong values: counter {i} is {x}, expected {expected:?}"
        ))),
    }
}

/// The host's copy of `lab_scramble` in lab.cu: a bijection on [0, 2^bits).
pub fn scramble(k: u32, bits: u32) -> u32 {
    let mask = if bits >= 32 { u32::MAX } else { (1u32 << bits) - 1 };
    let shift1 = (bits / 2).max(1);
    let shift2 = (bits / 3).max(1);
    let mut x = k.wrapping_mul(0x9e37_79b1) & mask;
    x ^= x >> shift1;
    x = x.wrapping_mul(0x85eb_ca6b) & mask;
    x ^= x >> shift2;
    x
}
