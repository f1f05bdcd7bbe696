//! The lab on a CUDA device: load the specialisation, size the grid, time with CUDA events, and
//! check every final value before a figure is reported.

use super::{
    check_counters, global_defines, global_expected, shared_defines, shared_expected, CounterType, GlobalConfig,
    GlobalMode, GlobalReport, GlobalRow, Progress, SharedConfig, SharedInput, SharedOp, SharedReport, SharedRow,
    SharedType, SHARED_THREADS,
};
use crate::device::params::KernelParams;
use crate::device::registry::KernelFamily;
use crate::device::{CudaDevice, DevPtr, Kernel, LaunchShape};
use crate::error::{Error, Result};
use cudarc::driver::DeviceRepr;
use std::sync::Arc;

crate::kernel_params! {
    /// What the global lab's kernels read.
    pub(crate) struct LabGlobalParams as "LabGlobalParams" {
        /// Counters of the row's type.
        counters: DevPtr<u8>,
        ops: u32,
        ops_bits: u32,
        address_mask: u32,
    }
}

crate::kernel_params! {
    /// What the shared lab's kernels read; values of the op's type travel as their bits.
    pub(crate) struct LabSharedParams as "LabSharedParams" {
        values: DevPtr<u8>,
        init: u64,
        step: u64,
        first_round: i32,
        threads_per_address: u32,
        rounds: u32,
        pad: u32,
        finals: DevPtr<u8>,
        warp_cycles: DevPtr<u64>,
    }
}

/// `lab.cu`: every counter type with a run-time address count and with each default one as a
/// constant (the compiler's own aggregation), and the shared-memory kernels.
pub(crate) static FAMILY: KernelFamily = KernelFamily {
    name: "lab.cu",
    source: include_str!("../kernels/lab.cu"),
    params: || vec![LabGlobalParams::layout(), LabSharedParams::layout()],
    variants: |_| {
        let mut sets = Vec::new();
        for t in CounterType::ALL {
            for bits in std::iter::once(-1).chain(super::default_address_bits()) {
                sets.push(global_defines(t, bits));
            }
        }
        sets.push(shared_defines());
        sets
    },
};

/// A value type of the shared lab, passed to the kernel as its bits.
trait LabValue: DeviceRepr + Copy + Default {
    fn bits(self) -> u64;
}
impl LabValue for u32 {
    fn bits(self) -> u64 {
        self as u64
    }
}
impl LabValue for u64 {
    fn bits(self) -> u64 {
        self
    }
}
impl LabValue for f32 {
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}

/// Threads per block of the global lab.
const GLOBAL_THREADS: u32 = 256;
/// A run slower than this gets at most three timed repetitions.
const SLOW_MS: f64 = 50.0;

/// The kernel that runs `mode` for counters of type `t`, and the address count it was built for.
fn global_kernel(
    dev: &CudaDevice,
    t: CounterType,
    mode: GlobalMode,
    addresses: u64,
) -> Result<Kernel<LabGlobalParams>> {
    let (bits, name) = match mode {
        GlobalMode::Plain => (-1, "tally_lab_global_plain"),
        GlobalMode::WarpAggregated => (-1, "tally_lab_global_warp_aggregated"),
        GlobalMode::Compiler => (addresses.trailing_zeros() as i32, "tally_lab_global_compiler"),
    };
    dev.kernel(&FAMILY, &global_defines(t, bits), name, 0)
}

/// Median milliseconds of `run` (each run preceded by `reset`, outside the timed region) after
/// one warm-up; runs slower than 50 ms get at most three repetitions.
fn time_runs(
    dev: &CudaDevice,
    reps: usize,
    mut reset: impl FnMut() -> Result<()>,
    mut run: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let timer = dev.stream().timer()?;
    reset()?;
    let first = timer.time_ms(&mut run)?;
    let reps = if first > SLOW_MS { reps.clamp(1, 3) } else { reps.max(1) };
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps {
        reset()?;
        t.push(timer.time_ms(&mut run)?);
    }
    t.sort_by(|a, b| a.total_cmp(b));
    Ok(t[t.len() / 2])
}

/// One row of the global lab: time `ops` increments over `addresses` counters, then check the
/// counters the last run left.
pub fn global_row(
    dev: &Arc<CudaDevice>,
    t: CounterType,
    mode: GlobalMode,
    ops: u64,
    addresses: u64,
    reps: usize,
) -> Result<GlobalRow> {
    let kernel = global_kernel(dev, t, mode, addresses)?;
    let stream = dev.stream();
    let bytes = addresses as usize * t.size();
    let mut counters = stream.alloc_zeros::<u8>(bytes, "lab counters")?;
    let per_sm = kernel.blocks_per_sm(GLOBAL_THREADS, 0)?;
    let blocks = (dev.info().multiprocessors * per_sm).min(ops.div_ceil(GLOBAL_THREADS as u64) as u32).max(1);
    let params = LabGlobalParams {
        counters: counters.view_mut().ptr_mut(stream.cuda_stream()),
        ops: ops as u32,
        ops_bits: ops.trailing_zeros(),
        address_mask: (addresses - 1) as u32,
    };
    let shape = LaunchShape::new(blocks, GLOBAL_THREADS, 0);
    let ms = time_runs(
        dev,
        reps,
        || stream.memset_zeros(&mut counters.view_mut()),
        || stream.launch(&kernel, shape, &params),
    )?;
    let raw = stream.download(&counters.view())?;
    let expected = global_expected(t, mode, ops, addresses);
    let check = check_counters((0..addresses as usize).map(|i| t.decode(&raw, i)), expected);
    Ok(GlobalRow::new(t, mode, ops, addresses, check.map(|()| ms)))
}

/// Every row of `config`; a row that fails to run carries the error, the others still run.
pub fn global(dev: &Arc<CudaDevice>, config: &GlobalConfig, progress: Progress) -> Result<GlobalReport> {
    config.validate()?;
    let sizes = config.sizes();
    let total = sizes.len() * config.types.len() * config.modes.len();
    let mut rows = Vec::with_capacity(total);
    for &t in &config.types {
        for &mode in &config.modes {
            for &(ops, addresses) in &sizes {
                progress(rows.len(), total, &format!("{} {} {ops} ops over {addresses}", t.name(), mode.name()));
                let row = match global_row(dev, t, mode, ops, addresses, config.reps) {
                    Ok(r) => r,
                    // An error the device can recover from is the row's; anything else ends the lab.
                    Err(e @ Error::Compile { .. }) | Err(e @ Error::OutOfMemory { .. }) => {
                        GlobalRow::new(t, mode, ops, addresses, Err(e))
                    }
                    Err(e) => return Err(e),
                };
                rows.push(row);
            }
        }
    }
    progress(total, total, "done");
    let mut report = GlobalReport {
        lab: "global",
        backend: "cuda",
        device: dev.info().name.clone(),
        config: config.clone(),
        rows,
        notes: vec![format!(
            "{} threads per block, {} blocks at most (the occupancy limit); operation k adds 1 to counter scramble(k) mod addresses, every counter receiving ops/addresses",
            GLOBAL_THREADS,
            dev.info().multiprocessors
        )],
    };
    report.fill_ratios();
    report.note_compiler_aggregation();
    Ok(report)
}

/// What one launch of a shared-lab kernel left: every block's targets and every warp's cycles.
#[derive(Clone, Debug)]
pub struct SharedRun {
    /// `blocks` copies of the targets, block after block, decoded exactly.
    pub finals: Vec<f64>,
    /// Each warp's clock64 cycles around its loop, block after block (8 warps per block).
    pub warp_cycles: Vec<u64>,
    /// Blocks launched: one per multiprocessor.
    pub blocks: u32,
}

fn shared_launch<T: LabValue>(
    dev: &Arc<CudaDevice>,
    kernel: &Kernel<LabSharedParams>,
    blocks: u32,
    values: &[T],
    init: T,
    step: T,
    input: &SharedInput,
) -> Result<(Vec<u8>, Vec<u64>)> {
    let targets = input.targets();
    let size = std::mem::size_of::<T>();
    let stream = dev.stream();
    let cs = stream.cuda_stream();
    let d_values = stream.upload(values, "lab values")?;
    let mut finals = stream.alloc_zeros::<u8>(blocks as usize * targets * size, "lab finals")?;
    let mut cycles = stream.alloc_zeros::<u64>(blocks as usize * (SHARED_THREADS / 32) as usize, "lab cycles")?;
    let params = LabSharedParams {
        values: d_values.view().ptr(cs).cast(),
        init: init.bits(),
        step: step.bits(),
        first_round: input.first_round,
        threads_per_address: input.threads_per_address,
        rounds: input.rounds,
        pad: 0,
        finals: finals.view_mut().ptr_mut(cs),
        warp_cycles: cycles.view_mut().ptr_mut(cs),
    };
    stream.launch(kernel, LaunchShape::new(blocks, SHARED_THREADS, 0), &params)?;
    let raw = stream.download(&finals.view())?;
    let cyc = stream.download(&cycles.view())?;
    Ok((raw, cyc))
}

/// Runs `op` on `input` once, one block per multiprocessor, and returns what it left.
pub fn shared_run(dev: &Arc<CudaDevice>, op: SharedOp, input: &SharedInput) -> Result<SharedRun> {
    input.validate()?;
    let kernel = dev.kernel::<LabSharedParams>(&FAMILY, &shared_defines(), op.kernel(), 0)?;
    let blocks = dev.info().multiprocessors;
    let n = (blocks as usize) * input.targets();
    let (finals, warp_cycles) = match op.value_type() {
        SharedType::U32 => {
            let v: Vec<u32> = input.values.iter().map(|&x| x as u32).collect();
            let (raw, c) = shared_launch(dev, &kernel, blocks, &v, input.init as u32, input.step as u32, input)?;
            ((0..n).map(|i| CounterType::U32.decode(&raw, i)).collect(), c)
        }
        SharedType::U64 => {
            let v: Vec<u64> = input.values.iter().map(|&x| x as u64).collect();
            let (raw, c) = shared_launch(dev, &kernel, blocks, &v, input.init as u64, input.step as u64, input)?;
            ((0..n).map(|i| CounterType::U64.decode(&raw, i)).collect(), c)
        }
        SharedType::F32 => {
            let v: Vec<f32> = input.values.iter().map(|&x| x as f32).collect();
            let (raw, c) = shared_launch(dev, &kernel, blocks, &v, input.init as f32, input.step as f32, input)?;
            ((0..n).map(|i| CounterType::F32.decode(&raw, i)).collect(), c)
        }
    };
    Ok(SharedRun { finals, warp_cycles, blocks })
}

/// Checks every block's targets against [`shared_expected`].
pub fn shared_check(op: SharedOp, input: &SharedInput, run: &SharedRun) -> Result<()> {
    check_finals(&shared_expected(op, input), run)
}

fn check_finals(want: &[f64], run: &SharedRun) -> Result<()> {
    for (i, &got) in run.finals.iter().enumerate() {
        let w = want[i % want.len()];
        if got != w {
            let (block, target) = (i / want.len(), i % want.len());
            return Err(Error::WrongResult(format!("block {block} target {target} holds {got}, expected {w}")));
        }
    }
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// One row: `reps` launches (after a warm-up), every launch's final values checked.
pub fn shared_row(
    dev: &Arc<CudaDevice>,
    op: SharedOp,
    threads_per_address: u32,
    rounds: u32,
    reps: usize,
) -> Result<SharedRow> {
    let input = op.lab_input(threads_per_address, rounds);
    let mut row = SharedRow {
        op,
        description: op.description(),
        threads_per_address,
        targets: SHARED_THREADS / threads_per_address,
        cycles_per_op: None,
        cycles_per_op_max: None,
        verified: false,
        error: None,
    };
    let want = shared_expected(op, &input);
    let mut per_op = Vec::new();
    for rep in 0..=reps.max(1) {
        let run = shared_run(dev, op, &input)?;
        if let Err(e) = check_finals(&want, &run) {
            row.error = Some(e.to_string());
            return Ok(row);
        }
        if rep > 0 {
            per_op.extend(run.warp_cycles.iter().map(|&c| c as f64 / rounds as f64));
        }
    }
    row.verified = true;
    row.cycles_per_op_max = per_op.iter().copied().reduce(f64::max);
    row.cycles_per_op = Some(median(&mut per_op));
    Ok(row)
}

/// The shared lab on `dev`: every (operation, threads per address) of `config`, each row
/// verified against [`shared_expected`], reporting each to `progress`.
pub fn shared(dev: &Arc<CudaDevice>, config: &SharedConfig, progress: Progress) -> Result<SharedReport> {
    let total = config.ops.len() * config.threads_per_address.len();
    let mut rows = Vec::with_capacity(total);
    for &op in &config.ops {
        for &t in &config.threads_per_address {
            progress(rows.len(), total, &format!("{} with {t} threads per address", op.name()));
            rows.push(shared_row(dev, op, t, config.rounds, config.reps)?);
        }
    }
    progress(total, total, "done");
    Ok(SharedReport {
        lab: "shared",
        backend: "cuda",
        device: dev.info().name.clone(),
        blocks: dev.info().multiprocessors,
        block_threads: SHARED_THREADS,
        config: config.clone(),
        rows,
        notes: vec![
            "one block of 256 threads per multiprocessor; threads t*k .. t*k+t-1 share target k; cycles are clock64 around each warp's loop, divided by its rounds".into(),
        ],
    })
}
