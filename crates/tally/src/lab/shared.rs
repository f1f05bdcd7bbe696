//! The shared lab: cycles per shared-memory atomic against the number of threads that share a
//! target, and the exact values its targets must end at.

use crate::error::{Error, Result};
use serde::Serialize;
use std::str::FromStr;

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
