//! The atomics lab: the measurements tally's hierarchy rests on, as a feature anyone can run on
//! their own GPU (`tally lab global|shared|histogram`).
//!
//! * [`cuda::global`]: throughput of `atomicAdd` on global memory against the number of distinct
//!   addresses, per counter type, issued plainly, warp-aggregated by hand, or left to the compiler.
//! * [`cuda::shared`]: cycles per shared-memory atomic against the number of threads that share
//!   a target, for integer, float and compare-and-swap operations.
//! * The histogram lab (tally's strategies over bin counts and skew, CUB beside them) is a
//!   harness of the command-line tool, built on the public histogram API.
//!
//! Every measurement checks the final values its kernel left behind against the exact expected
//! ones; a row whose values are wrong carries an error and no figure. [`cpu::global`] is the CPU
//! backend's version of the global lab: rayon threads hammering `AtomicU32`/`AtomicU64`.

pub mod cpu;
pub mod cuda;

use crate::error::{Error, Result};
use serde::Serialize;
use std::str::FromStr;

/// Something to tell the caller as the lab goes: `(done, total, what is running now)`.
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize, &str);

// ---------------------------------------------------------------------------------------------
// The global lab

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

/// Checks every counter; the message names the first that is wrong and how many are.
pub fn check_counters(values: impl Iterator<Item = f64>, expected: Expected) -> std::result::Result<(), String> {
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
        Some((i, x)) => Err(format!("{bad} counters hold wrong values: counter {i} is {x}, expected {expected:?}")),
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

// ---------------------------------------------------------------------------------------------
// The shared lab

/// The shared-memory operations the lab times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SharedOp {
    /// `atomicAdd` on a u32.
    AddU32,
    /// `atomicMax` on a u32.
    MaxU32,
    /// `atomicAdd` on a u64.
    AddU64,
    /// `atomicAdd(float*)`: whatever the compiler emits for it.
    AddF32,
    /// A hand-written compare-and-swap loop.
    AddF32Cas,
    /// A compare-and-swap loop for an f32 max.
    MaxF32Cas,
    /// Signed max for floats without the sign bit, unsigned min for those with it.
    MaxF32Int,
    /// `atomicAdd(float*)` on a target of +inf, which no finite addend changes.
    AddF32Inf,
}

/// The element type of a shared-lab target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SharedType {
    /// `unsigned int`.
    U32,
    /// `unsigned long long`.
    U64,
    /// `float`.
    F32,
}

impl SharedOp {
    /// Every operation the lab times.
    pub const ALL: [SharedOp; 8] = [
        SharedOp::AddU32,
        SharedOp::MaxU32,
        SharedOp::AddU64,
        SharedOp::AddF32,
        SharedOp::AddF32Cas,
        SharedOp::MaxF32Cas,
        SharedOp::MaxF32Int,
        SharedOp::AddF32Inf,
    ];

    /// The name the CLI and reports use (`add-u32`, ...).
    pub fn name(self) -> &'static str {
        match self {
            SharedOp::AddU32 => "add-u32",
            SharedOp::MaxU32 => "max-u32",
            SharedOp::AddU64 => "add-u64",
            SharedOp::AddF32 => "add-f32",
            SharedOp::AddF32Cas => "add-f32-cas",
            SharedOp::MaxF32Cas => "max-f32-cas",
            SharedOp::MaxF32Int => "max-f32-int",
            SharedOp::AddF32Inf => "add-f32-inf",
        }
    }

    /// A short human description for tables.
    pub fn description(self) -> &'static str {
        match self {
            SharedOp::AddU32 => "u32 atomicAdd",
            SharedOp::MaxU32 => "u32 atomicMax",
            SharedOp::AddU64 => "u64 atomicAdd",
            SharedOp::AddF32 => "f32 atomicAdd (as compiled)",
            SharedOp::AddF32Cas => "f32 add, CAS loop",
            SharedOp::MaxF32Cas => "f32 max, CAS loop",
            SharedOp::MaxF32Int => "f32 max, int max / uint min",
            SharedOp::AddF32Inf => "f32 atomicAdd onto +inf",
        }
    }

    /// The entry point in `lab.cu` that times this operation.
    pub fn kernel(self) -> &'static str {
        match self {
            SharedOp::AddU32 => "tally_lab_shared_add_u32",
            SharedOp::MaxU32 => "tally_lab_shared_max_u32",
            SharedOp::AddU64 => "tally_lab_shared_add_u64",
            SharedOp::AddF32 | SharedOp::AddF32Inf => "tally_lab_shared_add_f32",
            SharedOp::AddF32Cas => "tally_lab_shared_add_f32_cas",
            SharedOp::MaxF32Cas => "tally_lab_shared_max_f32_cas",
            SharedOp::MaxF32Int => "tally_lab_shared_max_f32_int",
        }
    }

    /// The type of the targets and values.
    pub fn value_type(self) -> SharedType {
        match self {
            SharedOp::AddU32 | SharedOp::MaxU32 => SharedType::U32,
            SharedOp::AddU64 => SharedType::U64,
            _ => SharedType::F32,
        }
    }

    /// Whether the operation is a maximum (else a sum).
    pub fn is_max(self) -> bool {
        matches!(self, SharedOp::MaxU32 | SharedOp::MaxF32Cas | SharedOp::MaxF32Int)
    }

    /// The lab's own input for this operation: four values per thread, chosen so that every
    /// final value is exact whatever the order (sums of halves far below 2^24), and for the
    /// maxima rising by `step` each round so that every operation contends (each round's values
    /// beat every earlier round's), crossing from negative to positive floats half-way.
    pub fn lab_input(self, threads_per_address: u32, rounds: u32) -> SharedInput {
        let n = SHARED_THREADS as usize * 4;
        let (values, init, step, first_round): (Vec<f64>, f64, f64, i32) = match self {
            SharedOp::AddU32 => ((0..n).map(|i| (1 + i % 7) as f64).collect(), 0.0, 0.0, 0),
            SharedOp::AddU64 => ((0..n).map(|i| ((1u64 << 32) + 1 + (i % 7) as u64) as f64).collect(), 0.0, 0.0, 0),
            SharedOp::MaxU32 => ((0..n).map(|i| ((i * 37) % 1024) as f64).collect(), 0.0, 1024.0, 0),
            SharedOp::AddF32 | SharedOp::AddF32Cas => {
                ((0..n).map(|i| ((i % 15) as f64 - 7.0) * 0.5).collect(), 0.0, 0.0, 0)
            }
            SharedOp::AddF32Inf => ((0..n).map(|i| ((i % 15) as f64 - 7.0) * 0.5).collect(), f64::INFINITY, 0.0, 0),
            SharedOp::MaxF32Cas | SharedOp::MaxF32Int => (
                (0..n).map(|i| ((i * 37) % 1024) as f64 / 1024.0).collect(),
                f64::NEG_INFINITY,
                1.0,
                -((rounds / 2) as i32),
            ),
        };
        SharedInput { values, init, step, first_round, threads_per_address, rounds }
    }
}

impl FromStr for SharedOp {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        SharedOp::ALL.into_iter().find(|o| o.name() == s).ok_or_else(|| {
            let names: Vec<&str> = SharedOp::ALL.iter().map(|o| o.name()).collect();
            Error::invalid(format!("unknown shared operation '{s}' (expected one of: {})", names.join(", ")))
        })
    }
}

/// Threads per block of the shared lab (and the most that can share one target).
pub const SHARED_THREADS: u32 = 256;

/// One launch of a shared-lab kernel. Values are given as f64 and converted to the operation's
/// type exactly (callers pick representable ones); thread `t` holds `values[4t..4t+4]`, and
/// round `r` of its loop applies `values[4t + r % 4] + (first_round + r) * step`.
#[derive(Clone, Debug)]
pub struct SharedInput {
    /// Four values per thread of the block.
    pub values: Vec<f64>,
    /// Every target's value before the run.
    pub init: f64,
    /// What each round adds to the values (0: the same values every round).
    pub step: f64,
    /// The round number of the first round (negative: values start below zero).
    pub first_round: i32,
    /// Threads that share one target: a power of two from 1 to [`SHARED_THREADS`].
    pub threads_per_address: u32,
    /// A multiple of 4.
    pub rounds: u32,
}

impl SharedInput {
    /// Checks the sharing, the rounds (a multiple of 4, at most 4096) and the value count.
    pub fn validate(&self) -> Result<()> {
        let t = self.threads_per_address;
        if t == 0 || !t.is_power_of_two() || t > SHARED_THREADS {
            return Err(Error::invalid(format!(
                "threads per address must be a power of two from 1 to {SHARED_THREADS}, not {t}"
            )));
        }
        if self.rounds == 0 || !self.rounds.is_multiple_of(4) || self.rounds > 4096 {
            return Err(Error::invalid(format!("rounds must be a multiple of 4 from 4 to 4096, not {}", self.rounds)));
        }
        if self.values.len() != SHARED_THREADS as usize * 4 {
            return Err(Error::invalid(format!("expected {} values (four per thread)", SHARED_THREADS * 4)));
        }
        Ok(())
    }

    /// Targets per block: [`SHARED_THREADS`] / `threads_per_address`.
    pub fn targets(&self) -> usize {
        (SHARED_THREADS / self.threads_per_address) as usize
    }

    /// The value thread `t` applies in round `r`, computed as the kernel computes it.
    pub fn value(&self, ty: SharedType, t: usize, r: u32) -> f64 {
        let v = self.values[4 * t + (r % 4) as usize];
        if self.step == 0.0 {
            return v; // as the kernel: no arithmetic, so -0.0 stays -0.0
        }
        let round = self.first_round.wrapping_add(r as i32);
        match ty {
            SharedType::U32 => (v as u32).wrapping_add((round as u32).wrapping_mul(self.step as u32)) as f64,
            SharedType::U64 => (v as u64).wrapping_add((round as i64 as u64).wrapping_mul(self.step as u64)) as f64,
            SharedType::F32 => (v as f32 + round as f32 * self.step as f32) as f64,
        }
    }
}

/// The final value of every target after one block runs `input` with `op`: sums are exact for
/// the lab's inputs; maxima are taken under the order -0 < +0 (which `==` cannot tell apart).
pub fn shared_expected(op: SharedOp, input: &SharedInput) -> Vec<f64> {
    let ty = op.value_type();
    let t = input.threads_per_address as usize;
    (0..input.targets())
        .map(|target| {
            let mut acc = input.init;
            for thread in target * t..(target + 1) * t {
                for r in 0..input.rounds {
                    let v = input.value(ty, thread, r);
                    acc = if op.is_max() {
                        if v > acc || (v == 0.0 && acc == 0.0 && acc.is_sign_negative()) {
                            v
                        } else {
                            acc
                        }
                    } else {
                        acc + v
                    };
                }
            }
            match ty {
                SharedType::F32 => acc as f32 as f64,
                // u32 sums wrap as the hardware's do (exact in f64 below 2^53).
                SharedType::U32 => acc.rem_euclid(4_294_967_296.0),
                SharedType::U64 => acc,
            }
        })
        .collect()
}

/// What the shared lab runs: every (operation, threads per address) combination.
#[derive(Clone, Debug, Serialize)]
pub struct SharedConfig {
    /// Operations to time.
    pub ops: Vec<SharedOp>,
    /// Threads of a 256-thread block that share one target: powers of two, 1 to 256.
    pub threads_per_address: Vec<u32>,
    /// Atomics per thread per run: a multiple of 4, at most 4096.
    pub rounds: u32,
    /// Timed runs per row, after one warm-up.
    pub reps: usize,
}

impl Default for SharedConfig {
    fn default() -> Self {
        SharedConfig {
            ops: SharedOp::ALL.to_vec(),
            threads_per_address: (0..=8).map(|e| 1 << e).collect(),
            rounds: 1024,
            reps: 5,
        }
    }
}

/// One measured row of the shared lab; `error` is set, and the figures are not, when the final
/// values were wrong or the run failed.
#[derive(Clone, Debug, Serialize)]
pub struct SharedRow {
    /// The operation.
    pub op: SharedOp,
    /// Its description.
    pub description: &'static str,
    /// Threads of the block that share one target.
    pub threads_per_address: u32,
    /// Targets per block (256 / threads_per_address).
    pub targets: u32,
    /// Median over warps and runs of a warp's clock64 cycles in the loop over its rounds: the
    /// cost of one warp-wide atomic (every lane applying one value).
    pub cycles_per_op: Option<f64>,
    /// The same, slowest warp.
    pub cycles_per_op_max: Option<f64>,
    /// Whether every block's targets held their expected final values.
    pub verified: bool,
    /// What went wrong, where something did.
    pub error: Option<String>,
}

/// The shared lab's result: its configuration, a row per measurement, and notes on the method.
#[derive(Clone, Debug, Serialize)]
pub struct SharedReport {
    /// "shared".
    pub lab: &'static str,
    /// "cuda".
    pub backend: &'static str,
    /// The device's name.
    pub device: String,
    /// Blocks per run: one per multiprocessor.
    pub blocks: u32,
    /// Threads per block ([`SHARED_THREADS`]).
    pub block_threads: u32,
    /// What was run.
    pub config: SharedConfig,
    /// One row per (operation, threads per address).
    pub rows: Vec<SharedRow>,
    /// How the runs were made.
    pub notes: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// Compile check

/// log2 of the default address counts: the compiler-mode specialisations `tally lab global`
/// asks for unless told otherwise.
pub fn default_address_bits() -> Vec<i32> {
    DEFAULT_ADDRESSES.iter().map(|a| a.trailing_zeros() as i32).collect()
}

pub(crate) fn global_defines(t: CounterType, address_bits: i32) -> Vec<(&'static str, String)> {
    vec![
        ("LAB_PART", "0".to_string()),
        ("LAB_TYPE", t.cuda_type().to_string()),
        ("LAB_ADDRESS_BITS", address_bits.to_string()),
    ]
}

pub(crate) fn shared_defines() -> Vec<(&'static str, String)> {
    vec![("LAB_PART", "1".to_string())]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scramble_is_a_bijection_so_every_counter_gets_the_same_count() {
        for bits in 0..=16u32 {
            let n = 1usize << bits;
            let mut seen = vec![false; n];
            for k in 0..n as u32 {
                let x = scramble(k, bits) as usize;
                assert!(x < n && !seen[x], "bits {bits}: {k} -> {x} repeats");
                seen[x] = true;
            }
        }
        // And it spreads a warp: 32 consecutive operations over 32 counters are not 32 distinct ones.
        let distinct: std::collections::HashSet<u32> = (0..32).map(|k| scramble(k, 20) & 31).collect();
        assert!(distinct.len() < 32 && distinct.len() > 8, "{}", distinct.len());
    }

    #[test]
    fn f32_saturates_at_2_pow_24() {
        let e = global_expected(CounterType::F32, GlobalMode::Plain, 1 << 28, 1);
        assert_eq!(e, Expected::Exact(16777216.0));
        let mut x = 16777216f32;
        x += 1.0;
        assert_eq!(x, 16777216.0);
        assert_eq!(
            global_expected(CounterType::F32, GlobalMode::Plain, 1 << 28, 32),
            Expected::Exact((1 << 23) as f64)
        );
        assert!(matches!(
            global_expected(CounterType::F32, GlobalMode::WarpAggregated, 1 << 28, 1),
            Expected::Between(..)
        ));
        assert_eq!(
            global_expected(CounterType::U32, GlobalMode::Plain, 1 << 28, 1),
            Expected::Exact((1u64 << 28) as f64)
        );
    }

    #[test]
    fn shared_expectations() {
        // Sums: every thread of a target adds its four values rounds/4 times.
        let input = SharedOp::AddU32.lab_input(4, 8);
        let e = shared_expected(SharedOp::AddU32, &input);
        assert_eq!(e.len(), 64);
        let want: f64 = (0..16).map(|i| (1 + i % 7) as f64).sum::<f64>() * 2.0;
        assert_eq!(e[0], want);
        // +inf absorbs every finite addend.
        let e = shared_expected(SharedOp::AddF32Inf, &SharedOp::AddF32Inf.lab_input(256, 8));
        assert_eq!(e, vec![f64::INFINITY]);
        // Rising maxima: the last round wins; the float ones cross zero half-way.
        let input = SharedOp::MaxF32Int.lab_input(256, 1024);
        let e = shared_expected(SharedOp::MaxF32Int, &input);
        let last: f64 = (0..256).map(|t| input.value(SharedType::F32, t, 1023)).fold(f64::MIN, f64::max);
        assert_eq!(e, vec![last]);
        assert!(input.value(SharedType::F32, 0, 0) < 0.0 && last > 0.0);
        // -0 beats every negative number and loses to +0.
        let mut input = SharedInput {
            values: vec![-1.0; 1024],
            init: f64::NEG_INFINITY,
            step: 0.0,
            first_round: 0,
            threads_per_address: 256,
            rounds: 4,
        };
        input.values[5] = -0.0;
        let e = shared_expected(SharedOp::MaxF32Int, &input);
        assert!(e[0] == 0.0 && e[0].is_sign_negative());
        input.values[9] = 0.0;
        let e = shared_expected(SharedOp::MaxF32Int, &input);
        assert!(e[0] == 0.0 && e[0].is_sign_positive());
    }
}
