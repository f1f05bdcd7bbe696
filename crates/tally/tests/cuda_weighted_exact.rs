//! Exact weighted sums on the GPU. Without a GPU each test prints a line and returns; with
//! TALLY_REQUIRE_GPU=1 that is a failure. Accumulators are poisoned before every launch; every
//! sum and count is compared bit for bit with the sequential reference (Shewchuk's sums, not the
//! kernels' digits) and with the CPU backend, on adversarial weights, misaligned inputs, every
//! strategy name, f32 and f64, channels, 2-D, and repeated runs.

use std::sync::Arc;
use tally::device::CudaDevice;
use tally::histogram::reference_exact::histogram_weighted_exact;
use tally::histogram::weighted::Weight;
use tally::histogram::{GeneralInput, GeneralPlan, WeightedHistogram};
use tally::{Backend, Bins, Channels, Error, Histogram2dSpec, HistogramSpec, Pairs, Sample, Strategy, WeightedOptions};

mod common;
mod weighted_exact_common;
use common::gpu;
use weighted_exact_common::{assert_same, cases, random, BINS};

/// `xs[offset..]` and `ws[offset..]` on the device (so misaligned for offsets 1..3), the plan's
/// accumulators poisoned first.
fn exact_on_gpu<T: Sample, W: Weight>(
    dev: &Arc<CudaDevice>,
    xs: &[T],
    ws: &[W],
    offset: usize,
    spec: &HistogramSpec,
    strategy: Strategy,
) -> WeightedHistogram {
    let stream = dev.stream();
    let (bx, bw) = (stream.upload(xs, "x").unwrap(), stream.upload(ws, "w").unwrap());
    let o = offset.min(xs.len());
    let (all_x, all_w) = (bx.view(), bw.view());
    let (vx, vw) = (all_x.slice(o..).unwrap(), all_w.slice(o..).unwrap());
    let input = GeneralInput { x: vx, y: None, interleaved: false, weights: Some(vw) };
    let options = WeightedOptions::exact().with_strategy(strategy);
    let mut plan = GeneralPlan::<T, W>::weighted(dev, &input, spec, options).unwrap();
    assert_eq!(plan.strategy(), Strategy::GlobalAtomic);
    plan.fill_outputs(stream, 0xA5).unwrap();
    plan.launch(stream, &input).unwrap();
    plan.read_weighted(stream, spec).unwrap()
}

fn spec() -> HistogramSpec {
    HistogramSpec::even(BINS as u32, 0.0, BINS as f64)
}

#[test]
fn cuda_exact_adversarial_weights_every_strategy_and_offset() {
    let Some(dev) = gpu() else { return };
    for c in cases() {
        for offset in 0..4 {
            let (xs, ws) = (&c.samples[offset.min(c.samples.len())..], &c.weights[offset.min(c.weights.len())..]);
            let want = histogram_weighted_exact(xs, ws, &spec()).unwrap();
            for s in Strategy::GPU {
                let got = exact_on_gpu(&dev, &c.samples, &c.weights, offset, &spec(), s);
                assert_same(&got, &want, &format!("{} offset {offset} {s}", c.name));
            }
        }
    }
}

#[test]
fn cuda_exact_random_weights_match_the_reference_and_the_cpu() {
    let Some(dev) = gpu() else { return };
    for (k, n) in [0usize, 1, 255, 256, 257, 65_537, (1 << 20) + 7].into_iter().enumerate() {
        let c = random(n + 3, 11 + k as u64, k % 2 == 1);
        for offset in [0, 3] {
            let (xs, ws) = (&c.samples[offset..], &c.weights[offset..]);
            let want = histogram_weighted_exact(xs, ws, &spec()).unwrap();
            let cpu = Backend::Cpu.histogram_weighted(xs, ws, &spec(), WeightedOptions::exact()).unwrap();
            assert_same(&cpu, &want, &format!("CPU n={n}"));
            let first = exact_on_gpu(&dev, &c.samples, &c.weights, offset, &spec(), Strategy::Auto);
            assert_same(&first, &want, &format!("GPU n={n} offset {offset}"));
            let again = exact_on_gpu(&dev, &c.samples, &c.weights, offset, &spec(), Strategy::BlockShared);
            assert!(again.same_bits(&first), "n={n}: a second run differs");
        }
    }
}

#[test]
fn cuda_exact_f32_weights_channels_and_many_bins() {
    let Some(dev) = gpu() else { return };
    let c = random((1 << 18) + 5, 21, true);
    let ws: Vec<f32> = c.weights.iter().map(|&w| (w * 1e-290) as f32).collect();
    let xs: Vec<f32> = c.samples.iter().map(|&x| x as f32).collect();
    for s in [
        spec(),
        spec().with_channels(Channels { interleave: 4, selected: vec![0, 2, 3] }),
        HistogramSpec::even(4099, 0.0, 4.0),
        HistogramSpec::edges(vec![-0.25, 0.0, 1.0, 1.5, 3.75, 4.0]),
    ] {
        let want = histogram_weighted_exact(&xs, &ws, &s).unwrap();
        for offset in [0, 1, 2] {
            let want = if offset == 0 {
                want.clone()
            } else {
                histogram_weighted_exact(&xs[offset..], &ws[offset..], &s).unwrap()
            };
            let got = exact_on_gpu(&dev, &xs, &ws, offset, &s, Strategy::Auto);
            assert_same(&got, &want, &format!("f32 {:?} offset {offset}", s.bins.count()));
        }
    }
}

#[test]
fn cuda_exact_2d_matches_the_cpu() {
    let Some(dev) = gpu() else { return };
    let c = random(100_003, 31, true);
    let ys: Vec<f64> = c.samples.iter().rev().copied().collect();
    let spec2 = Histogram2dSpec { x: Bins::even(3, 0.0, 4.0), y: Bins::Edges(vec![0.0, 0.5, 2.0, 4.0]) };
    let pairs = Pairs::Split(&c.samples, &ys);
    let cpu = Backend::Cpu.histogram_2d_weighted(pairs, &c.weights[..], &spec2, WeightedOptions::exact()).unwrap();
    let gpu = Backend::Cuda(dev.clone())
        .histogram_2d_weighted(Pairs::Split(&c.samples, &ys), &c.weights[..], &spec2, WeightedOptions::exact())
        .unwrap();
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&gpu.sums), bits(&cpu.sums));
    assert_eq!(gpu.outliers, cpu.outliers);
    let (g, c) = (gpu.outlier_sums.unwrap(), cpu.outlier_sums.unwrap());
    assert_eq!(
        bits(&[g.x_below, g.x_above, g.y_below, g.y_above, g.nan]),
        bits(&[c.x_below, c.x_above, c.y_below, c.y_above, c.nan])
    );
}

#[test]
fn cuda_exact_beyond_the_workspace_is_a_clear_error() {
    let Some(dev) = gpu() else { return };
    let xs = [0.5f64; 4];
    let ws = [1.0f64; 4];
    let spec = HistogramSpec::even(1 << 26, 0.0, 1.0);
    match Backend::Cuda(dev).histogram_weighted(&xs[..], &ws[..], &spec, WeightedOptions::exact()) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("workspace limit") && m.contains("bytes a key"), "{m}"),
        other => panic!("expected a clear error, got {other:?}"),
    }
}
