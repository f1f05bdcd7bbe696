//! Weighted and 2-D histograms on the GPU. Without a GPU each test prints a line and returns; with
//! TALLY_REQUIRE_GPU=1 that is a failure. Accumulators are poisoned before every launch, and every
//! element is compared: fixed-point sums bit for bit against the sequential reference, across
//! strategies, shared-atomic flavours, repeated runs and the CPU backend; 2-D counts exactly.

use std::sync::Arc;
use tally::data::splitmix64;
use tally::device::CudaDevice;
use tally::histogram::weighted::Weight;
use tally::histogram::{reference, Histogram2d, WeightedHistogram};
use tally::histogram::{GeneralInput, GeneralPlan};
use tally::{
    Accumulation, Backend, Bins, Channels, Histogram2dSpec, HistogramSpec, Pairs, Sample, SharedAtomics, Strategy,
    WeightedOptions,
};

mod common;
use common::gpu;

/// Every strategy name: the general kernel runs three and maps the others onto them.
const STRATEGIES: [Strategy; 10] = Strategy::GPU;
const FLAVOURS: [SharedAtomics; 2] = [SharedAtomics::Halves, SharedAtomics::Native64];
const SIZES: [usize; 7] = [0, 1, 31, 257, 1025, 65_537, (1 << 20) + 7];

fn unit(r: u64) -> f64 {
    (r >> 11) as f64 / (1u64 << 53) as f64
}

/// One weighted 1-D histogram on resident data, accumulators poisoned first.
fn weighted_on_gpu<T: Sample, W: Weight>(
    dev: &Arc<CudaDevice>,
    xs: &[T],
    ws: &[W],
    spec: &HistogramSpec,
    strategy: Strategy,
    accumulation: Accumulation,
    flavour: SharedAtomics,
) -> WeightedHistogram {
    let stream = dev.stream();
    let bx = stream.upload(xs, "x").unwrap();
    let bw = stream.upload(ws, "w").unwrap();
    let input = GeneralInput { x: bx.view(), y: None, interleaved: false, weights: Some(bw.view()) };
    let options = WeightedOptions { strategy, accumulation, shared_atomics: flavour };
    let mut plan = GeneralPlan::<T, W>::weighted(dev, &input, spec, options).unwrap();
    plan.fill_outputs(stream, 0xA5).unwrap();
    plan.launch(stream, &input).unwrap();
    plan.read_weighted(stream, spec).unwrap()
}

fn hist2d_on_gpu<W: Weight>(
    dev: &Arc<CudaDevice>,
    pairs: Pairs<f32>,
    ws: Option<&[W]>,
    spec: &Histogram2dSpec,
    strategy: Strategy,
    flavour: SharedAtomics,
) -> Histogram2d {
    let stream = dev.stream();
    let (bx, by, interleaved) = match pairs {
        Pairs::Split(x, y) => (stream.upload(x, "x").unwrap(), Some(stream.upload(y, "y").unwrap()), false),
        Pairs::Interleaved(v) => (stream.upload(v, "pairs").unwrap(), None, true),
    };
    let bw = ws.map(|w| stream.upload(w, "w").unwrap());
    let input = GeneralInput {
        x: bx.view(),
        y: by.as_ref().map(|b| b.view()),
        interleaved,
        weights: bw.as_ref().map(|b| b.view()),
    };
    let options = WeightedOptions { strategy, accumulation: Accumulation::FixedPoint, shared_atomics: flavour };
    let mut plan = GeneralPlan::<f32, W>::two_d(dev, &input, spec, options).unwrap();
    plan.fill_outputs(stream, 0xA5).unwrap();
    plan.launch(stream, &input).unwrap();
    plan.read_2d(stream, spec).unwrap()
}

fn samples_f32(n: usize, seed: u64) -> Vec<f32> {
    let specials = [0.0f32, 256.0, f32::NAN, -1.0, 255.99998, 128.0];
    (0..n)
        .map(|i| {
            let r = splitmix64(seed ^ (i as u64) << 1);
            if r.is_multiple_of(11) {
                specials[(r >> 20) as usize % specials.len()]
            } else {
                (-10.0 + 280.0 * unit(r)) as f32
            }
        })
        .collect()
}

/// Weights with every exponent a f32 holds in [2^-20, 2^20), both signs.
fn weights_f32(n: usize, seed: u64) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let r = splitmix64(seed.wrapping_mul(31) ^ i as u64);
            let m = 1.0 + unit(r) as f32;
            let e = ((r >> 3) % 40) as i32 - 20;
            if r & 1 == 0 {
                m * 2f32.powi(e)
            } else {
                -m * 2f32.powi(e)
            }
        })
        .collect()
}

#[test]
fn cuda_weighted_fixed_point_is_bitwise_equal_everywhere() {
    let Some(dev) = gpu() else { return };
    for (k, spec) in [
        HistogramSpec::even(256, 0.0, 256.0),
        HistogramSpec::edges(vec![-5.0, 0.0, 1.0, 100.0, 255.0, 256.0]),
        HistogramSpec::even(4096, 0.0, 256.0),
    ]
    .iter()
    .enumerate()
    {
        for &n in &SIZES {
            let xs = samples_f32(n, 3 + k as u64 + n as u64);
            let ws = weights_f32(n, 7 + n as u64);
            let want = reference::histogram_weighted(&xs, &ws, spec).unwrap();
            let cpu = Backend::Cpu.histogram_weighted(&xs, &ws, spec, WeightedOptions::default()).unwrap();
            assert!(cpu.same_bits(&want), "CPU n={n}");
            for s in STRATEGIES {
                for f in FLAVOURS {
                    let got = weighted_on_gpu(&dev, &xs, &ws, spec, s, Accumulation::FixedPoint, f);
                    assert!(
                        got.same_bits(&want),
                        "n={n} spec={spec:?} {s} ({}) {f:?}: first differences {:?}",
                        got.strategy,
                        got.sums[0]
                            .iter()
                            .zip(&want.sums[0])
                            .enumerate()
                            .filter(|(_, (a, b))| a.to_bits() != b.to_bits())
                            .take(5)
                            .collect::<Vec<_>>()
                    );
                    assert!(got.weighting.deterministic);
                }
            }
            // Repeated runs: the same bits.
            let a =
                weighted_on_gpu(&dev, &xs, &ws, spec, Strategy::Auto, Accumulation::FixedPoint, SharedAtomics::Halves);
            let b =
                weighted_on_gpu(&dev, &xs, &ws, spec, Strategy::Auto, Accumulation::FixedPoint, SharedAtomics::Halves);
            assert!(a.same_bits(&b));
        }
    }
}

#[test]
fn cuda_weighted_f64_weights_integer_samples_and_channels() {
    let Some(dev) = gpu() else { return };
    for interleave in [1u32, 3, 4] {
        let n = (1 << 18) + 5;
        let xs: Vec<u8> = (0..n).map(|i| (splitmix64(i as u64) % 256) as u8).collect();
        let ws: Vec<f64> = (0..n).map(|i| (unit(splitmix64(i as u64 ^ 9)) - 0.3) * 1e6).collect();
        let channels = Channels { interleave, selected: (0..interleave).rev().step_by(1).collect() };
        for spec in [
            HistogramSpec::even(256, 0.0, 256.0),
            HistogramSpec::even(100, 10.0, 200.0),
            HistogramSpec::even(10, 0.5, 100.5),
        ] {
            let spec = spec.with_channels(channels.clone());
            let want = reference::histogram_weighted(&xs, &ws, &spec).unwrap();
            for s in [Strategy::GlobalAtomic, Strategy::BlockShared, Strategy::GlobalL2] {
                for f in FLAVOURS {
                    let got = weighted_on_gpu(&dev, &xs, &ws, &spec, s, Accumulation::FixedPoint, f);
                    assert!(got.same_bits(&want), "{interleave} channels {spec:?} {s} {f:?}");
                }
            }
        }
    }
    // i32 samples, integer weights: exact sums.
    let n = 1 << 20;
    let xs: Vec<i32> = (0..n).map(|i| (splitmix64(i as u64) % 300) as i32 - 20).collect();
    let ws: Vec<f32> = (0..n).map(|i| ((splitmix64(i as u64 ^ 1) % 201) as i32 - 100) as f32).collect();
    let spec = HistogramSpec::even(256, 0.0, 256.0);
    let want = reference::histogram_weighted(&xs, &ws, &spec).unwrap();
    let got = Backend::Cuda(dev.clone()).histogram_weighted(&xs, &ws, &spec, WeightedOptions::default()).unwrap();
    assert!(got.same_bits(&want));
    assert!(got.sums[0].iter().all(|s| s.fract() == 0.0));
}

#[test]
fn cuda_weighted_float_atomics_are_close() {
    let Some(dev) = gpu() else { return };
    let n = 1 << 20;
    let xs = samples_f32(n, 1);
    let ws: Vec<f32> = (0..n).map(|i| unit(splitmix64(i as u64)) as f32).collect();
    let spec = HistogramSpec::even(256, 0.0, 256.0);
    let want = reference::histogram_weighted(&xs, &ws, &spec).unwrap();
    for s in [Strategy::GlobalAtomic, Strategy::BlockShared, Strategy::GlobalL2] {
        let got = weighted_on_gpu(&dev, &xs, &ws, &spec, s, Accumulation::FloatAtomics, SharedAtomics::Halves);
        assert!(!got.weighting.deterministic);
        for (b, (g, w)) in got.sums[0].iter().zip(&want.sums[0]).enumerate() {
            // f32 partial sums of about 4,000 weights per bin per block: a loose relative bound.
            assert!((g - w).abs() <= 1e-4 * w.abs().max(1.0), "{s} bin {b}: {g} vs {w}");
        }
        assert_eq!(
            (&got.below_count, &got.above_count, &got.nan_count),
            (&want.below_count, &want.above_count, &want.nan_count)
        );
    }
}

#[test]
fn cuda_2d_counts_exact_with_edges_nan_and_one_axis_outliers() {
    let Some(dev) = gpu() else { return };
    let nan = f32::NAN;
    let x = [0.0f32, 1.0, 2.0, -0.5, nan, 0.5, 1.999, 0.0, 5.0, 1.5, nan];
    let y = [0.0f32, 2.999, 0.0, 1.0, 1.0, nan, 3.0, -1.0, nan, 1.0, nan];
    let spec = Histogram2dSpec::even(2, (0.0, 2.0), 3, (0.0, 3.0));
    let want = reference::histogram_2d::<f32, f32>(Pairs::Split(&x, &y), None, &spec).unwrap();
    for s in STRATEGIES {
        let got = hist2d_on_gpu::<f32>(&dev, Pairs::Split(&x, &y), None, &spec, s, SharedAtomics::Halves);
        assert!(got.same_bits(&want), "{s}: {:?} vs {:?}", got.outliers, want.outliers);
    }
    for &n in &SIZES {
        let xs = samples_f32(2 * n, n as u64);
        let (x, y): (Vec<f32>, Vec<f32>) = xs.chunks_exact(2).map(|p| (p[0], p[1])).unzip();
        for spec in [
            Histogram2dSpec::even(16, (0.0, 256.0), 9, (-5.0, 250.0)),
            Histogram2dSpec { x: Bins::Edges(vec![0.0, 1.0, 100.0, 256.0]), y: Bins::even(300, 0.0, 256.0) },
            Histogram2dSpec { x: Bins::even(33, 0.0, 256.0), y: Bins::Edges(vec![-1.0, 0.0, 128.0, 255.99998]) },
        ] {
            let want = reference::histogram_2d::<f32, f32>(Pairs::Split(&x, &y), None, &spec).unwrap();
            for s in STRATEGIES {
                let got = hist2d_on_gpu::<f32>(&dev, Pairs::Split(&x, &y), None, &spec, s, SharedAtomics::Halves);
                assert!(got.same_bits(&want), "n={n} {spec:?} {s} ({})", got.strategy);
                let got = hist2d_on_gpu::<f32>(&dev, Pairs::Interleaved(&xs), None, &spec, s, SharedAtomics::Halves);
                assert!(got.same_bits(&want), "interleaved n={n} {spec:?} {s}");
            }
        }
    }
}

#[test]
fn cuda_2d_1024x1024_uniform_and_blob() {
    let Some(dev) = gpu() else { return };
    let n = (1 << 22) + 3;
    let spec = Histogram2dSpec::even(1024, (0.0, 1.0), 1024, (0.0, 1.0));
    let uniform: Vec<f32> = (0..2 * n).map(|i| unit(splitmix64(i as u64)) as f32).collect();
    let blob: Vec<f32> = tally::data::gaussian_pairs(n, 0.5, 0.05, 11);
    for (name, xy) in [("uniform", &uniform), ("blob", &blob)] {
        let want = reference::histogram_2d::<f32, f32>(Pairs::Interleaved(xy), None, &spec).unwrap();
        for s in [Strategy::Auto, Strategy::GlobalAtomic, Strategy::GlobalL2, Strategy::ClusterShared16] {
            let got = hist2d_on_gpu::<f32>(&dev, Pairs::Interleaved(xy), None, &spec, s, SharedAtomics::Halves);
            assert!(got.same_bits(&want), "{name} {s} ({})", got.strategy);
        }
        // Weighted, 1M bins: bitwise equal to the reference and the CPU backend.
        let ws: Vec<f32> = weights_f32(n, 5);
        let want = reference::histogram_2d(Pairs::Interleaved(xy), Some(&ws), &spec).unwrap();
        let cpu =
            Backend::Cpu.histogram_2d_weighted(Pairs::Interleaved(xy), &ws, &spec, WeightedOptions::default()).unwrap();
        assert!(cpu.same_bits(&want));
        for s in [Strategy::Auto, Strategy::GlobalAtomic] {
            let got = hist2d_on_gpu(&dev, Pairs::Interleaved(xy), Some(&ws), &spec, s, SharedAtomics::Halves);
            assert!(got.same_bits(&want), "weighted {name} {s}");
        }
    }
}

#[test]
fn cuda_2d_weighted_small_bins_all_strategies() {
    let Some(dev) = gpu() else { return };
    let n = (1 << 19) + 11;
    let xs = samples_f32(2 * n, 99);
    let ws: Vec<f64> = (0..n).map(|i| ((splitmix64(i as u64) % 1000) as f64 - 400.0) * 0.125).collect();
    let spec = Histogram2dSpec::even(64, (0.0, 256.0), 48, (0.0, 256.0));
    let want = reference::histogram_2d(Pairs::Interleaved(&xs), Some(&ws), &spec).unwrap();
    for s in STRATEGIES {
        for f in FLAVOURS {
            let got = hist2d_on_gpu(&dev, Pairs::Interleaved(&xs), Some(&ws), &spec, s, f);
            assert!(got.same_bits(&want), "{s} {f:?}");
        }
    }
}

#[test]
fn cuda_backend_api_matches_cpu() {
    let Some(dev) = gpu() else { return };
    let gpu = Backend::Cuda(dev);
    let n = 100_003;
    let xs = samples_f32(n, 4);
    let ws = weights_f32(n, 4);
    let spec = HistogramSpec::even(256, 0.0, 256.0);
    let a = gpu.histogram_weighted(&xs, &ws, &spec, WeightedOptions::default()).unwrap();
    let b = Backend::Cpu.histogram_weighted(&xs, &ws, &spec, WeightedOptions::default()).unwrap();
    assert!(a.same_bits(&b));
    assert_eq!(a.backend, "cuda");
    let e = gpu.histogram_weighted(&xs, &ws[1..], &spec, WeightedOptions::default()).unwrap_err();
    assert!(e.to_string().contains("weights"), "{e}");
    let (x, y): (Vec<f32>, Vec<f32>) = xs.chunks_exact(2).map(|p| (p[0], p[1])).unzip();
    let spec2 = Histogram2dSpec::even(100, (0.0, 256.0), 50, (0.0, 256.0));
    let a = gpu.histogram_2d(Pairs::Split(&x, &y), &spec2, Strategy::Auto).unwrap();
    let b = Backend::Cpu.histogram_2d(Pairs::Split(&x, &y), &spec2, Strategy::Auto).unwrap();
    assert!(a.same_bits(&b));
    let e = gpu.histogram_2d(Pairs::Split(&[1i32], &[2i32]), &spec2, Strategy::Auto).unwrap_err();
    assert!(e.to_string().contains("f32 or f64"), "{e}");
}

/// f32 values at and a few ulps around every edge of `bins` even bins over [lower, upper), all
/// in range, then in-range random ones, shuffled: what the kernels' f32 estimate must bin as
/// the rule does.
fn edge_samples(bins: usize, lower: f64, upper: f64, seed: u64) -> Vec<f32> {
    let in_range = |x: f32| (x as f64) >= lower && (x as f64) < upper;
    let mut xs = Vec::new();
    for e in 0..=bins {
        let mut v = (lower + (upper - lower) * e as f64 / bins as f64) as f32;
        if in_range(v) {
            xs.push(v); // the edge itself (stepping over zero passes -0.0, not 0.0)
        }
        for _ in 0..3 {
            v = v.next_down();
        }
        for _ in 0..7 {
            if in_range(v) {
                xs.push(v);
            }
            v = v.next_up();
        }
    }
    let edges = xs.len();
    for i in 0..edges.max(1 << 15) {
        let x = (lower + (upper - lower) * unit(splitmix64(seed ^ i as u64))) as f32;
        if in_range(x) {
            xs.push(x);
        }
    }
    for i in (1..xs.len()).rev() {
        xs.swap(i, (splitmix64(seed.wrapping_add(i as u64)) % (i as u64 + 1)) as usize);
    }
    xs
}

/// Weighted and 2-D histograms of f32 samples at every bin edge (the general kernel bins them
/// by the f32 estimate where it decides, and by the rule elsewhere): bit for bit the reference.
#[test]
fn cuda_weighted_and_2d_f32_at_every_edge() {
    let Some(dev) = gpu() else { return };
    for (k, &(bins, lower, upper)) in [(256, 0.0, 256.0), (77, 0.1, 0.7), (1000, -3.25, 7.5)].iter().enumerate() {
        let xs = edge_samples(bins, lower, upper, k as u64);
        let ws = weights_f32(xs.len(), 5 + k as u64);
        let spec = HistogramSpec::even(bins as u32, lower, upper);
        let want = reference::histogram_weighted(&xs, &ws, &spec).unwrap();
        for s in [Strategy::BlockShared, Strategy::GlobalAtomic, Strategy::Auto] {
            let got = weighted_on_gpu(&dev, &xs, &ws, &spec, s, Accumulation::FixedPoint, SharedAtomics::Halves);
            assert!(got.same_bits(&want), "weighted {spec:?} {s} ({})", got.strategy);
        }
    }
    let x = edge_samples(64, -1.0, 1.0, 11);
    // y from 0 over power-of-two bin widths: the exact estimate.
    let y = edge_samples(64, 0.0, 1.0, 12);
    let n = x.len().min(y.len());
    let spec = Histogram2dSpec::even(64, (-1.0, 1.0), 64, (0.0, 1.0));
    let want = reference::histogram_2d::<f32, f32>(Pairs::Split(&x[..n], &y[..n]), None, &spec).unwrap();
    for s in [Strategy::Auto, Strategy::GlobalAtomic, Strategy::GlobalL2, Strategy::BlockShared] {
        let got = hist2d_on_gpu::<f32>(&dev, Pairs::Split(&x[..n], &y[..n]), None, &spec, s, SharedAtomics::Halves);
        assert!(got.same_bits(&want), "2-D {s} ({})", got.strategy);
    }
}
