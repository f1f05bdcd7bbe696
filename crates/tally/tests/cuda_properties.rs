//! The GPU against the CPU on random problems: 10,000 cases per primitive by default
//! (`TALLY_PROPERTY_CASES`), each drawn from its own seed, which a failure prints so that the
//! case can be run again alone (`TALLY_PROPERTY_SEED`). Without a GPU these tests skip (with
//! TALLY_REQUIRE_GPU=1 that is a failure).

use std::sync::Arc;
use tally::histogram::reference;
use tally::reduce::{CmpOp, Compare, ReduceOp, ReduceOptions};
use tally::{Backend, Bins, Channels, CudaDevice, HistogramPlan, HistogramSpec, Sample, ScanOp, ScanOptions, Strategy};

mod common;
mod properties_common;

use properties_common::{for_each_case, samples, Draw};

fn histogram_case<T: Sample>(dev: &Arc<CudaDevice>, d: &mut Draw, xs: Vec<T>, bins: Bins) -> Result<(), String> {
    const STRATEGIES: [Strategy; 6] = [
        Strategy::Auto,
        Strategy::GlobalAtomic,
        Strategy::BlockShared,
        Strategy::WarpPrivate,
        Strategy::WarpAggregated,
        Strategy::GlobalL2,
    ];
    let interleave = 1 + d.below(3) as u32;
    let selected: Vec<u32> = (0..interleave).filter(|_| d.below(4) > 0).collect();
    let channels = if selected.is_empty() { Channels::all(interleave) } else { Channels { interleave, selected } };
    let spec = HistogramSpec { bins, channels };
    let strategy = STRATEGIES[d.below(STRATEGIES.len() as u64) as usize];
    let offset = (d.below(4) as usize).min(xs.len());
    let stream = dev.stream();
    let buf = stream.upload(&xs, "property samples").map_err(|e| e.to_string())?;
    let view = buf.view();
    let samples = view.slice(offset..).expect("in range");
    let mut plan = HistogramPlan::new(dev, &samples, &spec, strategy, &Default::default())
        .map_err(|e| format!("{spec:?}: {e}"))?;
    plan.fill_outputs(stream, 0xA5).map_err(|e| e.to_string())?;
    plan.launch(stream, &samples).map_err(|e| e.to_string())?;
    let got = plan.read(stream).map_err(|e| e.to_string())?;
    let want = reference::histogram(&xs[offset..], &spec);
    if got.same_counts(&want) {
        Ok(())
    } else {
        Err(format!("{} n={} offset={offset} {spec:?} {strategy} (ran {})", T::DTYPE, xs.len() - offset, got.strategy))
    }
}

#[test]
fn cuda_histograms_equal_the_reference_on_random_problems() {
    let Some(dev) = common::gpu() else { return };
    for_each_case("histogram", 0x4157, |d| {
        let n = d.size(16);
        let bins = match d.below(10) {
            0 => 1 + d.below(70_000) as u32,
            _ => 1 + d.below(5000) as u32,
        };
        // Integral ranges (the exact integer rule), fractional ones (the f64 rule), or edges.
        let lo = d.below(2000) as f64 - 1000.0;
        let width = if d.below(2) == 0 { (1 + d.below(100_000)) as f64 } else { d.unit() * 1e4 + 1e-3 };
        let range = if d.below(2) == 0 { (lo, lo + width) } else { (lo + d.unit(), lo + d.unit() + width) };
        let spec_bins = if d.below(6) == 0 {
            let mut e: Vec<f64> = (0..=bins.min(300)).map(|_| range.0 + d.unit() * width).collect();
            e.sort_by(|a, b| a.total_cmp(b));
            e.dedup();
            if e.len() < 2 {
                e = vec![range.0, range.1];
            }
            Bins::Edges(e)
        } else {
            Bins::even(bins, range.0, range.1)
        };
        match d.below(5) {
            0 => {
                let xs = samples(d, n, 0.0, 256.0, |v| v.clamp(0.0, 255.0) as u8, false);
                histogram_case(&dev, d, xs, spec_bins)
            }
            1 => {
                let xs = samples(d, n, range.0, range.1, |v| v as i32, false);
                histogram_case(&dev, d, xs, spec_bins)
            }
            2 => {
                let xs = samples(d, n, range.0, range.1, |v| v as i64, false);
                histogram_case(&dev, d, xs, spec_bins)
            }
            3 => {
                let xs = samples(d, n, range.0, range.1, |v| v as f32, true);
                histogram_case(&dev, d, xs, spec_bins)
            }
            _ => {
                let xs = samples(d, n, range.0, range.1, |v| v, true);
                histogram_case(&dev, d, xs, spec_bins)
            }
        }
    });
}

#[test]
fn cuda_reductions_equal_the_cpu_on_random_problems() {
    let Some(dev) = common::gpu() else { return };
    let gpu = Backend::Cuda(dev);
    for_each_case("reduce", 0x2ed, |d| {
        let n = d.size(18);
        let ops = [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max, ReduceOp::MinMax, ReduceOp::ArgMin, ReduceOp::ArgMax];
        let mut op = ops[d.below(ops.len() as u64) as usize];
        if d.below(7) == 0 {
            op = ReduceOp::Count(Compare::new(CmpOp::Gt, d.unit() * 100.0 - 50.0));
        }
        let options = ReduceOptions { skip_nan: d.below(2) == 0, exact: op == ReduceOp::Sum && d.below(2) == 0 };
        let check = |got: tally::Result<tally::reduce::Reduction>, want: tally::Result<tally::reduce::Reduction>| {
            match (got, want) {
                (Ok(g), Ok(w)) if g.same_result(&w) => Ok(()),
                // Plain float sums combine in different orders on the two backends.
                (Ok(g), Ok(w)) if !w.exact_sum && w.exact.is_none() && op == ReduceOp::Sum => {
                    if (g.value - w.value).abs() <= 1e-9 * w.value.abs().max(1.0)
                        || (g.value.is_nan() && w.value.is_nan())
                    {
                        Ok(())
                    } else {
                        Err(format!("n={n} {op:?} {options:?}: {} against {}", g.value, w.value))
                    }
                }
                (Err(g), Err(w)) if g.to_string() == w.to_string() => Ok(()),
                (g, w) => Err(format!("n={n} {op:?} {options:?}: gpu {g:?} cpu {w:?}")),
            }
        };
        let (lo, hi) = (-50.0, 50.0);
        match d.below(4) {
            0 => {
                let xs = samples(d, n, lo, hi, |v| v as f32, true);
                check(gpu.reduce(&xs, op, options), Backend::Cpu.reduce(&xs, op, options))
            }
            1 => {
                let xs = samples(d, n, lo, hi, |v| v, true);
                check(gpu.reduce(&xs, op, options), Backend::Cpu.reduce(&xs, op, options))
            }
            2 => {
                let xs = samples(d, n, -1e9, 1e9, |v| v as i32, false);
                check(
                    gpu.reduce(&xs, op, options.with_exact(false)),
                    Backend::Cpu.reduce(&xs, op, options.with_exact(false)),
                )
            }
            _ => {
                let xs = samples(d, n, 0.0, 256.0, |v| v.clamp(0.0, 255.0) as u8, false);
                check(
                    gpu.reduce(&xs, op, options.with_exact(false)),
                    Backend::Cpu.reduce(&xs, op, options.with_exact(false)),
                )
            }
        }
    });
}

#[test]
fn cuda_scans_equal_the_cpu_on_random_problems() {
    let Some(dev) = common::gpu() else { return };
    let gpu = Backend::Cuda(dev);
    for_each_case("scan", 0x5ca, |d| {
        let n = d.size(18);
        let op = [ScanOp::Sum, ScanOp::Min, ScanOp::Max][d.below(3) as usize];
        let options = ScanOptions { exclusive: d.below(2) == 0, ..Default::default() };
        if d.below(2) == 0 {
            let xs = samples(d, n, -1e6, 1e6, |v| v as i32, false);
            let g: Vec<i64> = gpu.scan_vec(&xs, op, options).map_err(|e| e.to_string())?;
            let w: Vec<i64> = Backend::Cpu.scan_vec(&xs, op, options).map_err(|e| e.to_string())?;
            if g == w {
                Ok(())
            } else {
                Err(format!("i32 n={n} {op:?} {options:?}"))
            }
        } else {
            let xs = samples(d, n, -1.0, 1.0, |v| v as f32, false);
            let g: Vec<f32> = gpu.scan_vec(&xs, op, options).map_err(|e| e.to_string())?;
            let w: Vec<f32> = Backend::Cpu.scan_vec(&xs, op, options).map_err(|e| e.to_string())?;
            // Min and max are exact. Sums combine in different orders: element i of each is a
            // sum of at most i + 1 terms, within i * u * sum(|x_0..x_i|) of the exact prefix
            // (u = 2^-24), so the two lie within twice that of each other.
            let mut magnitude = 0.0f64;
            let ok = g.len() == w.len()
                && g.iter().zip(&w).zip(&xs).enumerate().all(|(i, ((a, b), x))| {
                    magnitude += x.abs() as f64;
                    match op {
                        ScanOp::Sum => {
                            ((*a as f64) - (*b as f64)).abs() <= 2.0 * (i + 1) as f64 * magnitude / (1u64 << 24) as f64
                        }
                        _ => a.to_bits() == b.to_bits(),
                    }
                });
            if ok {
                Ok(())
            } else {
                Err(format!("f32 n={n} {op:?} {options:?}"))
            }
        }
    });
}
