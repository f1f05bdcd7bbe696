//! `tally bench reduce`: every op over sizes and types on resident data, each timed (median of
//! CUDA events around the one launch; end to end on the host clock too), checked against the
//! CPU backend, and set against the read bandwidth measured in the same run.

use super::bench_report::{
    device_and_bandwidth, gbs, host_median_ms, ok_cell, percent_cell, BenchOutputArgs, BenchReport, BenchRow, Column,
    Yardstick,
};
use anyhow::bail;
use serde::Serialize;
use tally::reduce::{CmpOp, Compare, ReduceElement, ReduceOp, ReduceOptions, ReducePlan};
use tally::Backend;

/// Arguments of `tally bench reduce`.
#[derive(clap::Args, Debug)]
pub struct BenchReduceArgs {
    /// Elements per case, as powers of two.
    #[arg(long, default_value = "10,16,20,24,28", value_delimiter = ',')]
    pub log2_sizes: Vec<u32>,
    /// Element types: f32, f64, i32, f16, bf16.
    #[arg(long, default_value = "f32,f64,i32", value_delimiter = ',')]
    pub dtypes: Vec<String>,
    /// Ops: sum, exact-sum, min, max, minmax, argmin, argmax, mean, count.
    #[arg(long, default_value = "sum,exact-sum,min,minmax,argmin,argmax,count", value_delimiter = ',')]
    pub ops: Vec<String>,
    /// Timed repetitions per case.
    #[arg(long, default_value_t = 50)]
    pub reps: usize,
    #[command(flatten)]
    pub out: BenchOutputArgs,
}

/// One row of the sweep.
#[derive(Serialize, Debug)]
pub struct ReduceRow {
    pub dtype: String,
    pub op: String,
    pub n: usize,
    /// The launch alone, median (CUDA events; the CPU: the whole call).
    pub ms: f64,
    /// Launch, wait and read back the result, median on the host clock.
    pub end_to_end_us: f64,
    pub gbs: f64,
    pub fraction_of_read_bandwidth: f64,
    /// Equal to the CPU backend's result (bit for bit; float sums within 1e-6 relative, as the
    /// two combine in different orders).
    pub verified: bool,
}

impl BenchRow for ReduceRow {
    const COLUMNS: &'static [Column] = &[
        Column::left("type", 5),
        Column::left("op", 10),
        Column::right("n", 11),
        Column::right("ms", 10),
        Column::right("e2e us", 11),
        Column::right("GB/s", 9),
        Column::right("%read", 7),
        Column::right("ok", 3),
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.dtype.clone(),
            self.op.clone(),
            self.n.to_string(),
            format!("{:.4}", self.ms),
            format!("{:.1}", self.end_to_end_us),
            format!("{:.1}", self.gbs),
            percent_cell(self.fraction_of_read_bandwidth),
            ok_cell(self.verified),
        ]
    }

    fn verified(&self) -> bool {
        self.verified
    }
}

fn op_of(name: &str) -> anyhow::Result<(ReduceOp, ReduceOptions)> {
    let plain = ReduceOptions::default();
    Ok(match name {
        "sum" => (ReduceOp::Sum, plain),
        "exact-sum" => (ReduceOp::Sum, ReduceOptions::exact()),
        "min" => (ReduceOp::Min, plain),
        "max" => (ReduceOp::Max, plain),
        "minmax" => (ReduceOp::MinMax, plain),
        "argmin" => (ReduceOp::ArgMin, plain),
        "argmax" => (ReduceOp::ArgMax, plain),
        "mean" => (ReduceOp::Mean, plain),
        "count" => (ReduceOp::Count(Compare::new(CmpOp::Gt, 0.5)), plain),
        _ => bail!("unknown op '{name}' (expected sum, exact-sum, min, max, minmax, argmin, argmax, mean or count)"),
    })
}

/// The values a sweep reduces ([`tally::data::bench_values`]: in [0, 1) for floats,
/// [-2^20, 2^20) for integers, so sums neither overflow nor lose the comparison against the
/// CPU to rounding).
trait BenchValue: ReduceElement + tally::data::BenchValue {}
impl<T: ReduceElement + tally::data::BenchValue> BenchValue for T {}

fn agree(a: &tally::reduce::Reduction, b: &tally::reduce::Reduction) -> bool {
    if a.same_result(b) {
        return true;
    }
    // Plain float sums and means combine in different orders on the two backends.
    a.exact.is_none() && !a.exact_sum && (a.value - b.value).abs() <= 1e-6 * b.value.abs().max(1.0)
}

fn sweep<T: BenchValue>(
    backend: &Backend,
    a: &BenchReduceArgs,
    read_gbs: f64,
    rows: &mut Vec<ReduceRow>,
) -> anyhow::Result<()> {
    for &log2 in &a.log2_sizes {
        if log2 > 32 {
            bail!("--log2-sizes: 2^{log2} elements is more than this benchmark holds (at most 2^32)");
        }
        let n = 1usize << log2;
        let host: Vec<T> = tally::data::bench_values(n, tally::data::REDUCE_SEED);
        for name in &a.ops {
            let (op, options) = op_of(name)?;
            if options.exact && !T::TYPE.is_float() {
                continue; // integer sums are always exact
            }
            let reference = Backend::Cpu.reduce(host.as_slice(), op, options)?;
            let (ms, e2e, got) = match backend {
                Backend::Cpu => {
                    let (ms, r) =
                        host_median_ms(a.reps.min(10), || Ok(Backend::Cpu.reduce(host.as_slice(), op, options)?))?;
                    (ms, ms * 1e3, r)
                }
                Backend::Cuda(dev) => {
                    let stream = dev.stream();
                    let buf = stream.upload(&host, "benchmark values")?;
                    let view = buf.view();
                    let mut plan = ReducePlan::<T>::new(dev, op, options, n)?;
                    let ms = stream.timer()?.median_ms(a.reps, || plan.launch(stream, &view))?;
                    let (e2e_ms, r) = host_median_ms(a.reps.max(3), || Ok(plan.run(&view)?))?;
                    (ms, e2e_ms * 1e3, r)
                }
            };
            let gbs = gbs((n * std::mem::size_of::<T>()) as f64, ms);
            rows.push(ReduceRow {
                dtype: T::TYPE.name().into(),
                op: name.clone(),
                n,
                ms,
                end_to_end_us: e2e,
                gbs,
                fraction_of_read_bandwidth: gbs / read_gbs,
                verified: agree(&got, &reference),
            });
        }
    }
    Ok(())
}

/// Runs `tally bench reduce`.
pub fn run(a: BenchReduceArgs) -> anyhow::Result<()> {
    if a.reps == 0 {
        bail!("--reps must be at least 1");
    }
    let backend = a.out.backend.open()?;
    let (device, read_gbs) = device_and_bandwidth(&backend)?;
    let mut rows = Vec::new();
    for d in &a.dtypes {
        match d.as_str() {
            "f32" => sweep::<f32>(&backend, &a, read_gbs, &mut rows)?,
            "f64" => sweep::<f64>(&backend, &a, read_gbs, &mut rows)?,
            "i32" => sweep::<i32>(&backend, &a, read_gbs, &mut rows)?,
            "f16" => sweep::<tally::half::f16>(&backend, &a, read_gbs, &mut rows)?,
            "bf16" => sweep::<tally::half::bf16>(&backend, &a, read_gbs, &mut rows)?,
            _ => bail!("unknown type '{d}' for bench reduce (expected f32, f64, i32, f16 or bf16)"),
        }
    }
    let report = BenchReport {
        name: "reduce",
        backend: backend.name(),
        device: &device,
        samples: None,
        yardstick: Yardstick::Read(read_gbs),
        rows: &rows,
    };
    report.print(a.out.json)
}
