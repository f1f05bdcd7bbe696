//! `tally bench scan`: prefix scans on resident data (f32 sums in both look-back modes, i32 into
//! i64 sums, f32 max, sums by i32 key of f32, i32 and f64 values), each timed (median of CUDA events around the one
//! launch), checked against the CPU backend, and set against the device-to-device copy
//! bandwidth measured in the same run (a scan reads and writes once, as a copy does).

use super::bench_report::{
    device_name, gbs, host_median_ms, ok_cell, percent_cell, BenchOutputArgs, BenchReport, BenchRow, Column, Yardstick,
};
use anyhow::bail;
use serde::Serialize;
use std::cell::OnceCell;
use std::sync::Arc;
use tally::device::CudaDevice;
use tally::{Backend, ScanInto, ScanKey, ScanOp, ScanOptions, ScanPlan, ScanValue};

/// Arguments of `tally bench scan` and `tally bench select`.
#[derive(clap::Args, Debug)]
pub struct BenchScanArgs {
    /// Elements per case, as powers of two (default 20,24,28 on a GPU, 22 on the CPU).
    #[arg(long, value_delimiter = ',')]
    pub log2_sizes: Option<Vec<u32>>,
    /// Timed repetitions per case.
    #[arg(long, default_value_t = 20)]
    pub reps: usize,
    /// `bench select`, `bench scan` and `bench reduce-by-key`: run the cases whose name contains
    /// one of these (e.g. `select 50,partition`, `by key`, `i64`); default every case.
    #[arg(long, value_delimiter = ',')]
    pub cases: Option<Vec<String>>,
    #[command(flatten)]
    pub out: BenchOutputArgs,
}

impl BenchScanArgs {
    /// Whether `--cases` chooses the case called `name` (every case without it).
    pub fn chooses(&self, name: &str) -> bool {
        self.cases.as_ref().is_none_or(|names| names.iter().any(|c| name.contains(c.as_str())))
    }
}

/// One row of a sweep set against the copy bandwidth: the scans, select and the run primitives.
#[derive(Serialize, Debug)]
pub struct ScanRow {
    pub case: String,
    pub n: usize,
    /// Elements kept (select) or runs found (the run primitives); none for the scans.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<u64>,
    /// The launch alone, median (CUDA events; the CPU: the whole call).
    pub ms: f64,
    /// The whole library call on the host clock, median: launch, wait and read the count back
    /// (select and the run primitives on a GPU, whose callers need the count).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub e2e_ms: Option<f64>,
    /// Bytes read and written per second, as the peers count them (see each bench).
    pub gbs: f64,
    pub fraction_of_copy_bandwidth: f64,
    /// Equal to the CPU backend's result (see each bench's `agree` or `same`).
    pub verified: bool,
}

impl BenchRow for ScanRow {
    const COLUMNS: &'static [Column] = &[
        Column::left("case", 20),
        Column::right("n", 11),
        Column::right("kept", 11),
        Column::right("ms", 10),
        Column::right("e2e ms", 10),
        Column::right("GB/s", 9),
        Column::right("%copy", 7),
        Column::right("ok", 3),
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.case.clone(),
            self.n.to_string(),
            self.kept.map(|k| k.to_string()).unwrap_or_default(),
            format!("{:.4}", self.ms),
            self.e2e_ms.map(|ms| format!("{ms:.4}")).unwrap_or_default(),
            format!("{:.1}", self.gbs),
            percent_cell(self.fraction_of_copy_bandwidth),
            ok_cell(self.verified),
        ]
    }

    fn verified(&self) -> bool {
        self.verified
    }
}

/// What a sweep set against the copy bandwidth starts from (scans, select, the run primitives):
/// the backend, the sizes checked, the device's name and the copy bandwidth measured now.
pub struct CopySweep {
    pub backend: Backend,
    /// Elements per case, as powers of two.
    pub sizes: Vec<u32>,
    pub device: String,
    pub copy_gbs: f64,
}

impl CopySweep {
    /// Opens `out`'s backend and measures the copy bandwidth; `log2_sizes` or else `defaults`
    /// (on a GPU, on the CPU), each at most `max_log2`; `reps` at least 1.
    pub fn open(
        out: &BenchOutputArgs,
        reps: usize,
        log2_sizes: &Option<Vec<u32>>,
        defaults: (&[u32], &[u32]),
        max_log2: u32,
    ) -> anyhow::Result<CopySweep> {
        if reps == 0 {
            bail!("--reps must be at least 1");
        }
        let backend = out.backend.open()?;
        let gpu = matches!(backend, Backend::Cuda(_));
        let sizes = log2_sizes.clone().unwrap_or_else(|| if gpu { defaults.0 } else { defaults.1 }.to_vec());
        if sizes.is_empty() {
            bail!("--log2-sizes: nothing to run");
        }
        if let Some(&big) = sizes.iter().find(|&&s| s > max_log2) {
            bail!("--log2-sizes: 2^{big} elements is more than this benchmark holds (at most 2^{max_log2})");
        }
        let device = device_name(&backend);
        let copy_gbs = copy_bandwidth(&backend, if gpu { 1 << 30 } else { 1 << 28 }, reps.max(5))?;
        Ok(CopySweep { backend, sizes, device, copy_gbs })
    }

    /// A row of case `case` over `n` elements that took `ms` to move `bytes`.
    pub fn row(&self, case: String, n: usize, kept: Option<u64>, ms: f64, bytes: f64, verified: bool) -> ScanRow {
        let gbs = gbs(bytes, ms);
        ScanRow { case, n, kept, ms, e2e_ms: None, gbs, fraction_of_copy_bandwidth: gbs / self.copy_gbs, verified }
    }

    /// Prints the rows of `tally bench NAME` as [`BenchReport::print`] does.
    pub fn print(&self, name: &'static str, rows: &[ScanRow], json: bool) -> anyhow::Result<()> {
        let yardstick = Yardstick::Copy(self.copy_gbs);
        let (backend, device) = (self.backend.name(), self.device.as_str());
        BenchReport { name, backend, device, samples: None, yardstick, rows }.print(json)
    }
}

/// The copy bandwidth (read + write bytes per second) of `bytes` bytes: on the GPU a
/// device-to-device copy timed with the stream's events, on the CPU `copy_from_slice`.
pub fn copy_bandwidth(backend: &Backend, bytes: usize, reps: usize) -> anyhow::Result<f64> {
    let ms = match backend {
        Backend::Cuda(dev) => {
            let stream = dev.stream();
            let raw = stream.cuda_stream();
            let src = raw.alloc_zeros::<u8>(bytes)?;
            let mut dst = raw.alloc_zeros::<u8>(bytes)?;
            stream.timer()?.median_ms(reps, || {
                raw.memcpy_dtod(&src, &mut dst)
                    .map_err(|e| tally::Error::Cuda { call: "memcpy_dtod".into(), source: e })
            })?
        }
        Backend::Cpu => {
            let src = vec![1u8; bytes];
            let mut dst = vec![0u8; bytes];
            let copy = || {
                dst.copy_from_slice(&src);
                std::hint::black_box(&mut dst);
                Ok(())
            };
            host_median_ms(reps.min(5), copy)?.0
        }
    };
    Ok(2.0 * bytes as f64 / (ms * 1e6))
}

/// The unit roundoff of f32.
pub const F32_ROUNDOFF: f64 = 1.0 / (1u64 << 24) as f64;

/// Whether `got` matches the CPU's `want`: integers exactly; floats exactly where `tol` is 0,
/// else within what any order of float additions may differ by: element i of each is a sum of
/// at most i + 1 terms, so each lies within i * tol * sum(|x_0..x_i|) of the exact prefix
/// (`tol`: the unit roundoff of the output type), and the two within twice that.
fn agree<T: ScanValue, O: ScanValue>(xs: &[T], got: &[O], want: &[O], tol: f64) -> bool {
    let mut magnitude = 0.0f64;
    got.len() == want.len()
        && got.iter().zip(want).zip(xs).enumerate().all(|(i, ((&g, &w), &x))| {
            magnitude += x.to_f64().abs();
            if !O::TYPE.is_float() {
                g.to_i128() == w.to_i128()
            } else if tol == 0.0 {
                g.to_f64().to_bits() == w.to_f64().to_bits()
            } else {
                let (g, w) = (g.to_f64(), w.to_f64());
                (g - w).abs() <= 2.0 * (i + 1) as f64 * tol * magnitude || (g.is_nan() && w.is_nan())
            }
        })
}

/// One case: values `xs` (and `keys` for a scan by key) into `O`, timed and checked.
#[allow(clippy::too_many_arguments)]
fn case<T: ScanInto<O>, O: ScanValue, K: ScanKey>(
    backend: &Backend,
    name: &str,
    xs: &[T],
    keys: Option<&[K]>,
    op: ScanOp,
    options: ScanOptions,
    tol: f64,
    reps: usize,
) -> anyhow::Result<(String, f64, bool)> {
    let want: Vec<O> = match keys {
        Some(k) => Backend::Cpu.scan_by_key_vec(k, xs, op, options)?,
        None => Backend::Cpu.scan_vec(xs, op, options)?,
    };
    let (ms, got) = match backend {
        Backend::Cpu => host_median_ms(reps.min(10), || {
            Ok(match keys {
                Some(k) => Backend::Cpu.scan_by_key_vec(k, xs, op, options)?,
                None => Backend::Cpu.scan_vec(xs, op, options)?,
            })
        })?,
        Backend::Cuda(dev) => gpu_case::<T, O, K>(dev, xs, keys, op, options, reps)?,
    };
    Ok((name.to_string(), ms, agree(xs, &got, &want, tol)))
}

fn gpu_case<T: ScanInto<O>, O: ScanValue, K: ScanKey>(
    dev: &Arc<CudaDevice>,
    xs: &[T],
    keys: Option<&[K]>,
    op: ScanOp,
    options: ScanOptions,
    reps: usize,
) -> anyhow::Result<(f64, Vec<O>)> {
    let stream = dev.stream();
    let n = xs.len();
    let input = stream.upload(xs, "benchmark values")?;
    let mut out = stream.alloc::<O>(n, "benchmark output")?;
    let ms = match keys {
        Some(k) => {
            let kd = stream.upload(k, "benchmark keys")?;
            let mut plan = ScanPlan::<T, O>::by_key::<K>(dev, op, options, n)?;
            let ms = stream
                .timer()?
                .median_ms(reps, || plan.launch_by_key(stream, &kd.view(), &input.view(), &mut out.view_mut()))?;
            plan.read(stream)?;
            ms
        }
        None => {
            let mut plan = ScanPlan::<T, O>::new(dev, op, options, n)?;
            let ms = stream.timer()?.median_ms(reps, || plan.launch(stream, &input.view(), &mut out.view_mut()))?;
            plan.read(stream)?;
            ms
        }
    };
    Ok((ms, stream.download(&out.view())?))
}

/// Runs `tally bench scan`.
pub fn run(a: BenchScanArgs) -> anyhow::Result<()> {
    let sweep = CopySweep::open(&a.out, a.reps, &a.log2_sizes, (&[20, 24, 28], &[22]), 31)?;
    let backend = &sweep.backend;
    let pick = |name: &'static str| a.chooses(name).then_some(name);
    let mut rows = Vec::new();
    for &log2 in &sweep.sizes {
        let n = 1usize << log2;
        // Made when a chosen case first needs them (2^28 of each takes a while).
        let fs = OnceCell::new();
        let fs = || fs.get_or_init(|| tally::data::bench_values::<f32>(n, tally::data::SCAN_SEED_F32));
        let is = OnceCell::new();
        let is = || is.get_or_init(|| tally::data::bench_values::<i32>(n, tally::data::SCAN_SEED_I32));
        // Keys in runs of 8 (the peers' case: a segment head in every tile), and in runs of
        // 2^20 (most tiles without one: their prefixes come from far back).
        let keys_of = |run: usize| -> Vec<i32> { (0..n).map(|i| (i / run) as i32).collect() };
        let (keys8, keys_long) = (OnceCell::new(), OnceCell::new());
        let keys8 = || Some(keys8.get_or_init(|| keys_of(8)).as_slice());
        let keys_long = || Some(keys_long.get_or_init(|| keys_of(1 << 20)).as_slice());
        let none = None::<&[u32]>;
        let det = ScanOptions::default().with_deterministic(true);
        let fast = ScanOptions::default().with_deterministic(false);
        let plain = ScanOptions::default();
        let mut push = |result: anyhow::Result<(String, f64, bool)>, bytes_per: usize| -> anyhow::Result<()> {
            let (name, ms, verified) = result?;
            rows.push(sweep.row(name, n, None, ms, (n * bytes_per) as f64, verified));
            Ok(())
        };
        let (sum, max, tol, reps) = (ScanOp::Sum, ScanOp::Max, F32_ROUNDOFF, a.reps);
        // Bytes per element as the peers count them: the input read, the output written (and
        // the key read).
        if let Some(name) = pick("f32 sum det") {
            push(case::<f32, f32, u32>(backend, name, fs(), none, sum, det, tol, reps), 8)?;
        }
        if let Some(name) = pick("f32 sum fast") {
            push(case::<f32, f32, u32>(backend, name, fs(), none, sum, fast, tol, reps), 8)?;
        }
        if let Some(name) = pick("i32->i64 sum") {
            push(case::<i32, i64, u32>(backend, name, is(), none, sum, plain, 0.0, reps), 12)?;
        }
        if let Some(name) = pick("f32 max") {
            push(case::<f32, f32, u32>(backend, name, fs(), none, max, plain, 0.0, reps), 8)?;
        }
        if let Some(name) = pick("f32 by key/8") {
            push(case::<f32, f32, i32>(backend, name, fs(), keys8(), sum, plain, tol, reps), 12)?;
        }
        if let Some(name) = pick("f32 by key/8 fast") {
            push(case::<f32, f32, i32>(backend, name, fs(), keys8(), sum, fast, tol, reps), 12)?;
        }
        if let Some(name) = pick("i32->i64 by key/8") {
            push(case::<i32, i64, i32>(backend, name, is(), keys8(), sum, plain, 0.0, reps), 16)?;
        }
        if let Some(name) = pick("f64 by key/8") {
            let ds: Vec<f64> = fs().iter().map(|&x| x as f64).collect();
            let tol64 = f64::EPSILON / 2.0;
            push(case::<f64, f64, i32>(backend, name, &ds, keys8(), sum, plain, tol64, reps), 20)?;
        }
        if let Some(name) = pick("f32 by key/2^20") {
            push(case::<f32, f32, i32>(backend, name, fs(), keys_long(), sum, plain, tol, reps), 12)?;
        }
    }
    if rows.is_empty() {
        bail!("--cases: no scan case matches");
    }
    sweep.print("scan", &rows, a.out.json)
}
