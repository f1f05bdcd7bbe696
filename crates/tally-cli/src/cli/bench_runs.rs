//! `tally bench unique`, `tally bench rle` and `tally bench reduce-by-key`: the run primitives on
//! resident data shaped as the CUB peers' (`DeviceSelect::Unique`,
//! `DeviceRunLengthEncode::Encode`, `DeviceReduce::ReduceByKey`): i32 keys in runs of 8 (a new
//! hashed key every 8 elements), f32 values uniform in [-0.5, 0.5); reduce-by-key also sums i32
//! values (the f32 ones times 1000) into i64, by the fast look-back where f32 sums take the
//! fixed one (no CUB peer: CUB's case is f32). Each case is timed (median
//! of CUDA events around the one launch; and the whole call, launch to the number of runs read
//! back, on the host clock), checked against the CPU backend, and set against the
//! device-to-device copy bandwidth measured in the same run.

use super::bench_report::{host_median_ms, median};
use super::bench_scan::{CopySweep, ScanRow, F32_ROUNDOFF};
use anyhow::bail;
use std::sync::Arc;
use std::time::Instant;
use tally::device::{CudaDevice, EventTimer};
use tally::{Backend, DeviceBuffer, ReduceByKeyInto, RunOp, RunsPlan, ScanValue};

/// Arguments of `tally bench unique`, `rle` and `reduce-by-key`: those of `tally bench scan`.
pub type BenchRunsArgs = super::bench_scan::BenchScanArgs;

/// Which primitive a run benchmark times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunsBench {
    /// `tally bench unique`.
    Unique,
    /// `tally bench rle`.
    Encode,
    /// `tally bench reduce-by-key`: f32 sums.
    ReduceByKey,
    /// `tally bench reduce-by-key`: i32 values summed into i64.
    ReduceByKeyInt,
}

/// The integer values of the i32 case: the f32 values times 1000.
fn int_values(values: &[f32]) -> Vec<i32> {
    values.iter().map(|&v| (v * 1000.0) as i32).collect()
}

/// The CPU's result: keys, and lengths or sums as f64 (exact for lengths and f32 sums of runs).
type Output = (Vec<i32>, Vec<f64>);

fn compute(backend: &Backend, what: RunsBench, keys: &[i32], values: &[f32]) -> anyhow::Result<Output> {
    Ok(match what {
        RunsBench::Unique => (backend.unique_vec(keys)?, Vec::new()),
        RunsBench::Encode => {
            let (k, c) = backend.run_length_encode_vec(keys)?;
            (k, c.into_iter().map(|c| c as f64).collect())
        }
        RunsBench::ReduceByKey => {
            let (k, s): (Vec<i32>, Vec<f32>) = backend.reduce_by_key_vec(keys, values, RunOp::Sum)?;
            (k, s.into_iter().map(f64::from).collect())
        }
        RunsBench::ReduceByKeyInt => {
            let (k, s): (Vec<i32>, Vec<i64>) = backend.reduce_by_key_vec(keys, &int_values(values), RunOp::Sum)?;
            (k, s.into_iter().map(|s| s as f64).collect())
        }
    })
}

/// The GPU's median launch time, the whole call's (launch, wait, read the number of runs) on
/// the host clock, and its result.
fn gpu_case(
    dev: &Arc<CudaDevice>,
    what: RunsBench,
    keys: &[i32],
    values: &[f32],
    reps: usize,
) -> anyhow::Result<(f64, f64, u64, Output)> {
    let stream = dev.stream();
    let n = keys.len();
    let kd = stream.upload(keys, "benchmark keys")?;
    let mut out_keys = stream.alloc::<i32>(n, "benchmark run keys")?;
    let timer = stream.timer()?;
    let e2e_reps = reps.max(3);
    let (ms, e2e, runs, values_out) = match what {
        RunsBench::Unique => {
            let mut plan = RunsPlan::<i32>::unique(dev, n)?;
            let ms = timer.median_ms(reps, || plan.launch_unique(stream, &kd.view(), &mut out_keys.view_mut()))?;
            let (e2e, runs) = host_median_ms(e2e_reps, || {
                plan.launch_unique(stream, &kd.view(), &mut out_keys.view_mut())?;
                Ok(plan.read(stream)?)
            })?;
            (ms, e2e, runs, Vec::new())
        }
        RunsBench::Encode => {
            let mut counts = stream.alloc::<u64>(n, "benchmark run lengths")?;
            let mut plan = RunsPlan::<i32>::encode(dev, n)?;
            let ms = timer.median_ms(reps, || {
                plan.launch_encode(stream, &kd.view(), &mut out_keys.view_mut(), &mut counts.view_mut())
            })?;
            let (e2e, runs) = host_median_ms(e2e_reps, || {
                plan.launch_encode(stream, &kd.view(), &mut out_keys.view_mut(), &mut counts.view_mut())?;
                Ok(plan.read(stream)?)
            })?;
            let c = stream.download(&counts.view())?;
            (ms, e2e, runs, c[..runs as usize].iter().map(|&c| c as f64).collect())
        }
        RunsBench::ReduceByKey => reduce_case::<f32, f32>(dev, &timer, &kd, &mut out_keys, values, reps)?,
        RunsBench::ReduceByKeyInt => {
            reduce_case::<i32, i64>(dev, &timer, &kd, &mut out_keys, &int_values(values), reps)?
        }
    };
    let k = stream.download(&out_keys.view())?;
    Ok((ms, e2e, runs, (k[..runs as usize].to_vec(), values_out)))
}

/// Reduce-by-key sums of `values` (`V` into `O`) by the resident `keys`, the runs' keys into
/// `out_keys`: the median launch, the whole call, the number of runs, the sums as f64.
fn reduce_case<V: ReduceByKeyInto<O>, O: ScanValue>(
    dev: &Arc<CudaDevice>,
    timer: &EventTimer,
    keys: &DeviceBuffer<i32>,
    out_keys: &mut DeviceBuffer<i32>,
    values: &[V],
    reps: usize,
) -> anyhow::Result<(f64, f64, u64, Vec<f64>)> {
    let stream = dev.stream();
    let n = values.len();
    let vd = stream.upload(values, "benchmark values")?;
    let mut sums = stream.alloc::<O>(n, "benchmark run sums")?;
    let mut plan = RunsPlan::<i32, V, O>::reduce_by_key(dev, RunOp::Sum, n)?;
    let mut launch = |plan: &mut RunsPlan<i32, V, O>| {
        plan.launch_reduce(stream, &keys.view(), &vd.view(), &mut out_keys.view_mut(), &mut sums.view_mut())
    };
    let ms = timer.median_ms(reps, || launch(&mut plan))?;
    let (e2e, runs) = host_median_ms(reps.max(3), || {
        launch(&mut plan)?;
        Ok(plan.read(stream)?)
    })?;
    let s = stream.download(&sums.view())?;
    Ok((ms, e2e, runs, s[..runs as usize].iter().map(|&s| s.to_f64()).collect()))
}

/// Whether `got` matches the CPU's `want`: keys and lengths exactly, sums of a run of length l
/// within 2 (l - 1) u sum(|x|), the bound any two orders of f32 additions satisfy (u = 0:
/// exactly, for integer sums).
fn agree(got: &Output, want: &Output, lengths: &[u64], values: &[f32], u: f64) -> bool {
    if got.0 != want.0 || got.1.len() != want.1.len() {
        return false;
    }
    let mut start = 0usize;
    got.1.iter().zip(&want.1).enumerate().all(|(r, (&g, &w))| {
        let len = lengths.get(r).map_or(1, |&l| l as usize);
        let mag: f64 = values.get(start..start + len).map_or(0.0, |v| v.iter().map(|x| x.abs() as f64).sum());
        start += len;
        (g - w).abs() <= 2.0 * len.saturating_sub(1) as f64 * u * mag
    })
}

/// Runs `tally bench unique`, `rle` or `reduce-by-key`.
pub fn run(what: RunsBench, a: BenchRunsArgs) -> anyhow::Result<()> {
    let sweep = CopySweep::open(&a.out, a.reps, &a.log2_sizes, (&[28], &[24]), 31)?;
    let (cases, title): (&[(RunsBench, &str)], _) = match what {
        RunsBench::Unique => (&[(RunsBench::Unique, "unique i32/8")], "unique"),
        RunsBench::Encode => (&[(RunsBench::Encode, "rle i32/8")], "rle"),
        RunsBench::ReduceByKey | RunsBench::ReduceByKeyInt => (
            &[(RunsBench::ReduceByKey, "rbk i32/8 f32"), (RunsBench::ReduceByKeyInt, "rbk i32/8 i32>i64")],
            "reduce-by-key",
        ),
    };
    let mut rows = Vec::new();
    for &(what, name) in cases.iter().filter(|(_, name)| a.chooses(name)) {
        rows.extend(sizes(&sweep, what, name, &a)?);
    }
    sweep.print(title, &rows, a.out.json)
}

/// The rows of one case over the sweep's sizes.
fn sizes(sweep: &CopySweep, what: RunsBench, name: &str, a: &BenchRunsArgs) -> anyhow::Result<Vec<ScanRow>> {
    let mut rows = Vec::new();
    for &log2 in &sweep.sizes {
        let n = 1usize << log2;
        let keys = tally::data::peer_keys(n, 8);
        let reduce = matches!(what, RunsBench::ReduceByKey | RunsBench::ReduceByKeyInt);
        let values = if reduce { tally::data::peer_values(n, 1) } else { Vec::new() };
        let want = compute(&Backend::Cpu, what, &keys, &values)?;
        let lengths = Backend::Cpu.run_length_encode_vec(&keys)?.1;
        let runs = lengths.len() as u64;
        let (ms, e2e, got) = match &sweep.backend {
            Backend::Cpu => {
                let mut t = Vec::new();
                for _ in 0..a.reps.clamp(1, 10) {
                    let s = Instant::now();
                    std::hint::black_box(compute(&Backend::Cpu, what, &keys, &values)?);
                    t.push(s.elapsed().as_secs_f64() * 1e3);
                }
                (median(t), None, want.clone())
            }
            Backend::Cuda(dev) => {
                let (ms, e2e, gpu_runs, got) = gpu_case(dev, what, &keys, &values, a.reps)?;
                if gpu_runs != runs {
                    bail!("the GPU found {gpu_runs} runs, the CPU {runs}");
                }
                (ms, Some(e2e), got)
            }
        };
        // Bytes read (keys, values) and written (a key and a u64 length or a sum per run).
        let bytes = match what {
            RunsBench::Unique => 4 * n as u64 + 4 * runs,
            RunsBench::Encode => 4 * n as u64 + 12 * runs,
            RunsBench::ReduceByKey => 8 * n as u64 + 8 * runs,
            RunsBench::ReduceByKeyInt => 8 * n as u64 + 12 * runs,
        };
        let u = if what == RunsBench::ReduceByKey { F32_ROUNDOFF } else { 0.0 };
        let verified = agree(&got, &want, &lengths, &values, u);
        rows.push(ScanRow { e2e_ms: e2e, ..sweep.row(name.to_string(), n, Some(runs), ms, bytes as f64, verified) });
    }
    Ok(rows)
}
