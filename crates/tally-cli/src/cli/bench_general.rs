//! `tally bench weighted` and `tally bench hist2d`: weighted and 2-D histograms on resident data,
//! timed, checked against the CPU backend (fixed point bit for bit), against the read bandwidth.

use super::bench::{device_and_bandwidth, parse_strategy};
use super::BackendArg;
use anyhow::bail;
use serde::Serialize;
use std::sync::Arc;
use tally::data::{self, Distribution};
use tally::device::CudaDevice;
use tally::histogram::{GeneralInput, GeneralPlan};
use tally::{Accumulation, Backend, Histogram2dSpec, HistogramSpec, Pairs, SharedAtomics, Strategy, WeightedOptions};

#[derive(clap::Args, Debug)]
pub struct BenchWeightedArgs {
    /// Samples per case (default 2^28 on a GPU, 2^22 on the CPU).
    #[arg(long)]
    pub size: Option<usize>,
    /// Bin counts.
    #[arg(long, default_value = "256", value_delimiter = ',')]
    pub bins: Vec<u32>,
    /// Distributions of the samples: uniform, hot90, hot100, zipf.
    #[arg(long, default_value = "uniform,hot90", value_delimiter = ',')]
    pub distributions: Vec<Distribution>,
    /// Strategies (GPU only).
    #[arg(long, default_value = "auto,global-atomic", value_delimiter = ',', value_parser = parse_strategy)]
    pub strategies: Vec<Strategy>,
    /// Accumulations: halves and native64 (fixed point, the shared atomics of the block
    /// strategy), float (float atomics).
    #[arg(long, default_value = "halves,native64,float", value_delimiter = ',')]
    pub accumulations: Vec<String>,
    #[arg(long, default_value_t = 20)]
    pub reps: usize,
    #[command(flatten)]
    pub backend: BackendArg,
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct BenchHist2dArgs {
    /// Pairs per case (default 2^28 on a GPU, 2^22 on the CPU).
    #[arg(long)]
    pub size: Option<usize>,
    /// Bins per axis.
    #[arg(long, default_value_t = 1024)]
    pub bins: u32,
    /// Distributions: uniform, blob (Gaussian, sigma 0.05 of the range).
    #[arg(long, default_value = "uniform,blob", value_delimiter = ',')]
    pub distributions: Vec<String>,
    /// Strategies (GPU only).
    #[arg(long, default_value = "auto,global-atomic,global-l2", value_delimiter = ',', value_parser = parse_strategy)]
    pub strategies: Vec<Strategy>,
    /// Also time f32-weighted 2-D histograms (fixed point).
    #[arg(long)]
    pub weighted: bool,
    #[arg(long, default_value_t = 20)]
    pub reps: usize,
    #[command(flatten)]
    pub backend: BackendArg,
    #[arg(long)]
    pub json: bool,
}

/// One row of `bench weighted` or `bench hist2d`.
#[derive(Serialize, Debug, Clone)]
pub struct GeneralRow {
    pub case: &'static str,
    pub distribution: String,
    pub bins: String,
    pub strategy: Strategy,
    pub ran: Strategy,
    /// fixed-halves, fixed-native64, float or count.
    pub accumulation: String,
    pub ms: f64,
    /// Over every byte read: samples + weights, or the pairs (+ weights).
    pub gbs: f64,
    pub fraction_of_read_bandwidth: f64,
    /// Fixed point and counts: bit for bit equal to the CPU backend; float: within 1e-4 relative.
    pub verified: bool,
    pub passes: usize,
}

#[derive(Serialize)]
struct GeneralReport<'a> {
    backend: &'static str,
    device: String,
    samples: usize,
    read_bandwidth_gbs: f64,
    rows: &'a [GeneralRow],
}

fn accumulation_of(name: &str) -> anyhow::Result<(Accumulation, SharedAtomics)> {
    Ok(match name {
        "halves" => (Accumulation::FixedPoint, SharedAtomics::Halves),
        "native64" => (Accumulation::FixedPoint, SharedAtomics::Native64),
        "float" => (Accumulation::FloatAtomics, SharedAtomics::Halves),
        _ => bail!("unknown accumulation '{name}' (expected halves, native64 or float)"),
    })
}

fn accumulation_name(a: Accumulation, s: SharedAtomics, ran: Strategy) -> String {
    match a {
        Accumulation::FloatAtomics => "float".into(),
        // Only the block strategy has shared-memory bins; elsewhere the flavours are one kernel.
        Accumulation::FixedPoint if ran == Strategy::BlockShared => format!("fixed-{}", s.name()),
        Accumulation::FixedPoint => "fixed".into(),
    }
}

/// Median milliseconds of a plan's launch (zeroing included), CUDA events.
fn time_general(
    dev: &Arc<CudaDevice>,
    plan: &mut GeneralPlan<f32, f32>,
    input: &GeneralInput<'_, f32, f32>,
    reps: usize,
) -> anyhow::Result<f64> {
    let stream = dev.stream();
    let timer = stream.timer()?;
    let once = timer.time_ms(|| plan.launch(stream, input))?;
    let reps = if once > 20.0 { reps.min(5) } else { reps };
    Ok(timer.median_ms(reps, || plan.launch(stream, input))?)
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-4 * y.abs().max(1.0))
}

fn print_general(
    title: &str,
    device: &str,
    n: usize,
    read_gbs: f64,
    rows: &[GeneralRow],
    json: bool,
    backend: &Backend,
) -> anyhow::Result<()> {
    if json {
        let r = GeneralReport {
            backend: backend.name(),
            device: device.to_string(),
            samples: n,
            read_bandwidth_gbs: read_gbs,
            rows,
        };
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!("# tally bench {title}: {device}, {n} samples per case, read bandwidth {read_gbs:.1} GB/s (same run)");
        println!(
            "{:<9} {:<8} {:>10} {:<17} {:<17} {:<15} {:>10} {:>9} {:>7} {:>3}",
            "case", "dist", "bins", "strategy", "ran", "accumulation", "ms", "GB/s", "%read", "ok"
        );
        for r in rows {
            println!(
                "{:<9} {:<8} {:>10} {:<17} {:<17} {:<15} {:>10.4} {:>9.1} {:>6.1}% {:>3}",
                r.case,
                r.distribution,
                r.bins,
                r.strategy.name(),
                r.ran.name(),
                r.accumulation,
                r.ms,
                r.gbs,
                100.0 * r.fraction_of_read_bandwidth,
                if r.verified { "yes" } else { "NO" }
            );
        }
    }
    if rows.iter().any(|r| !r.verified) {
        bail!("some cases disagreed with the CPU backend (rows marked NO)");
    }
    Ok(())
}

pub(crate) fn weighted(a: BenchWeightedArgs) -> anyhow::Result<()> {
    let backend = a.backend.open()?;
    let gpu = matches!(backend, Backend::Cuda(_));
    let n = a.size.unwrap_or(if gpu { 1 << 28 } else { 1 << 22 });
    let (device, read_gbs) = device_and_bandwidth(&backend)?;
    let accs: Vec<(Accumulation, SharedAtomics)> =
        a.accumulations.iter().map(|s| accumulation_of(s)).collect::<anyhow::Result<_>>()?;
    let bytes = (n * 8) as f64;
    let mut rows = Vec::new();
    for &bins in &a.bins {
        if bins == 0 {
            bail!("invalid argument: the bin count must be at least 1");
        }
        for &dist in &a.distributions {
            let xs: Vec<f32> = data::samples(dist, bins, n, 0x7a11 ^ bins as u64);
            let ws: Vec<f32> = data::unit_weights(n, 0x3e1 ^ bins as u64);
            let spec = HistogramSpec::even(bins, 0.0, bins as f64);
            let reference =
                tally::histogram::weighted::cpu_histogram_weighted(&xs, &ws, &spec, Accumulation::FixedPoint)?;
            let mut push = |strategy, ran, acc: String, ms: f64, verified, passes| {
                let gbs = bytes / (ms * 1e6);
                rows.push(GeneralRow {
                    case: "weighted",
                    distribution: dist.name().into(),
                    bins: bins.to_string(),
                    strategy,
                    ran,
                    accumulation: acc,
                    ms,
                    gbs,
                    fraction_of_read_bandwidth: gbs / read_gbs,
                    verified,
                    passes,
                });
            };
            match &backend {
                Backend::Cpu => {
                    // The CPU has one fixed-point flavour.
                    let mut cpu_accs: Vec<Accumulation> = accs.iter().map(|a| a.0).collect();
                    cpu_accs.dedup();
                    for acc in cpu_accs {
                        let opts = WeightedOptions { accumulation: acc, ..Default::default() };
                        let mut times = Vec::new();
                        let mut last = None;
                        for _ in 0..a.reps.clamp(1, 5) {
                            let t = std::time::Instant::now();
                            last = Some(Backend::Cpu.histogram_weighted(&xs, &ws, &spec, opts)?);
                            times.push(t.elapsed().as_secs_f64() * 1e3);
                        }
                        times.sort_by(|a, b| a.total_cmp(b));
                        let h = last.expect("at least one run");
                        let ok = if acc == Accumulation::FixedPoint {
                            h.same_bits(&reference)
                        } else {
                            close(&h.sums[0], &reference.sums[0])
                        };
                        push(
                            Strategy::ThreadPrivate,
                            Strategy::ThreadPrivate,
                            accumulation_name(acc, SharedAtomics::Halves, Strategy::ThreadPrivate),
                            times[times.len() / 2],
                            ok,
                            1,
                        );
                    }
                }
                Backend::Cuda(dev) => {
                    let bx = dev.stream().upload(&xs, "benchmark samples")?;
                    let bw = dev.stream().upload(&ws, "benchmark weights")?;
                    let input = GeneralInput { x: bx.view(), y: None, interleaved: false, weights: Some(bw.view()) };
                    for &s in &a.strategies {
                        for &(acc, flavour) in &accs {
                            let options = WeightedOptions { strategy: s, accumulation: acc, shared_atomics: flavour };
                            let mut plan = GeneralPlan::weighted(dev, &input, &spec, options)?;
                            if acc == Accumulation::FixedPoint
                                && flavour == SharedAtomics::Native64
                                && plan.strategy() != Strategy::BlockShared
                            {
                                continue; // the same kernel as halves there
                            }
                            let ms = time_general(dev, &mut plan, &input, a.reps)?;
                            let h = plan.read_weighted(dev.stream(), &spec)?;
                            let ok = if acc == Accumulation::FixedPoint {
                                h.same_bits(&reference)
                            } else {
                                close(&h.sums[0], &reference.sums[0])
                            };
                            push(
                                s,
                                plan.strategy(),
                                accumulation_name(acc, flavour, plan.strategy()),
                                ms,
                                ok,
                                plan.passes(),
                            );
                        }
                    }
                }
            }
        }
    }
    print_general("weighted", &device, n, read_gbs, &rows, a.json, &backend)
}

pub(crate) fn hist2d(a: BenchHist2dArgs) -> anyhow::Result<()> {
    let backend = a.backend.open()?;
    let gpu = matches!(backend, Backend::Cuda(_));
    let n = a.size.unwrap_or(if gpu { 1 << 28 } else { 1 << 22 });
    let (device, read_gbs) = device_and_bandwidth(&backend)?;
    let spec = Histogram2dSpec::even(a.bins, (0.0, 1.0), a.bins, (0.0, 1.0));
    let label = format!("{}x{}", a.bins, a.bins);
    let mut rows = Vec::new();
    for dist in &a.distributions {
        let xy = match dist.as_str() {
            "uniform" => data::uniform_pairs(n, 0x2d),
            "blob" => data::gaussian_pairs(n, 0.5, 0.05, 0x2d),
            d => bail!("unknown distribution '{d}' (expected uniform or blob)"),
        };
        let ws = if a.weighted { Some(data::unit_weights(n, 0x77)) } else { None };
        let pairs = Pairs::Interleaved(&xy);
        let reference = match &ws {
            Some(w) => {
                tally::histogram::hist2d::cpu_histogram_2d(pairs, Some(w.as_slice()), &spec, Accumulation::FixedPoint)?
            }
            None => {
                tally::histogram::hist2d::cpu_histogram_2d::<f32, f32>(pairs, None, &spec, Accumulation::FixedPoint)?
            }
        };
        for weighted in [false, true].into_iter().filter(|&w| !w || a.weighted) {
            let bytes = (n * if weighted { 12 } else { 8 }) as f64;
            let acc = if weighted { "fixed" } else { "count" };
            let reference = if weighted {
                reference.clone()
            } else {
                tally::histogram::hist2d::cpu_histogram_2d::<f32, f32>(pairs, None, &spec, Accumulation::FixedPoint)?
            };
            let w = if weighted { ws.as_deref() } else { None };
            let mut push = |strategy, ran, ms: f64, verified, passes| {
                let gbs = bytes / (ms * 1e6);
                rows.push(GeneralRow {
                    case: "hist2d",
                    distribution: dist.clone(),
                    bins: label.clone(),
                    strategy,
                    ran,
                    accumulation: acc.into(),
                    ms,
                    gbs,
                    fraction_of_read_bandwidth: gbs / read_gbs,
                    verified,
                    passes,
                });
            };
            match &backend {
                Backend::Cpu => {
                    let mut times = Vec::new();
                    let mut last = None;
                    for _ in 0..a.reps.clamp(1, 5) {
                        let t = std::time::Instant::now();
                        last = Some(tally::histogram::hist2d::cpu_histogram_2d(
                            pairs,
                            w,
                            &spec,
                            Accumulation::FixedPoint,
                        )?);
                        times.push(t.elapsed().as_secs_f64() * 1e3);
                    }
                    times.sort_by(|a, b| a.total_cmp(b));
                    push(
                        Strategy::ThreadPrivate,
                        Strategy::ThreadPrivate,
                        times[times.len() / 2],
                        last.expect("one run").same_bits(&reference),
                        1,
                    );
                }
                Backend::Cuda(dev) => {
                    let coords = dev.stream().upload(&xy, "benchmark pairs")?;
                    let bw = w.map(|w| dev.stream().upload(w, "benchmark weights")).transpose()?;
                    let input = GeneralInput {
                        x: coords.view(),
                        y: None,
                        interleaved: true,
                        weights: bw.as_ref().map(|b| b.view()),
                    };
                    for &s in &a.strategies {
                        let mut plan =
                            GeneralPlan::two_d(dev, &input, &spec, WeightedOptions::default().with_strategy(s))?;
                        let ms = time_general(dev, &mut plan, &input, a.reps)?;
                        let h = plan.read_2d(dev.stream(), &spec)?;
                        push(s, plan.strategy(), ms, h.same_bits(&reference), plan.passes());
                    }
                }
            }
        }
    }
    print_general("hist2d", &device, n, read_gbs, &rows, a.json, &backend)
}
