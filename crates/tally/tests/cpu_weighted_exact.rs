//! Exact weighted sums on the CPU backend, bit for bit against the sequential reference (a
//! different algorithm: Shewchuk's sums), on adversarial weights, random ones, f32 weights,
//! interleaved channels, 2-D histograms, and against fixed point where that is exact.

mod weighted_exact_common;
use tally::histogram::reference_exact::{exact_sum, histogram_weighted_exact};
use tally::histogram::weighted::cpu_histogram_weighted;
use tally::histogram::{reference, Accumulation};
use tally::{Backend, Bins, Channels, Histogram2dSpec, HistogramSpec, Pairs, WeightedOptions};
use weighted_exact_common::{assert_same, cases, random, BINS};

fn spec() -> HistogramSpec {
    HistogramSpec::even(BINS as u32, 0.0, BINS as f64)
}

#[test]
fn adversarial_weights_give_the_correctly_rounded_sums() {
    for c in cases() {
        let want = histogram_weighted_exact(&c.samples, &c.weights, &spec()).unwrap();
        let got = Backend::Cpu.histogram_weighted(&c.samples, &c.weights, &spec(), WeightedOptions::exact()).unwrap();
        assert_same(&got, &want, c.name);
        // Reversed, and repeated 1000 times: the same bits (the sums scale where exact).
        let (xs, ws): (Vec<f64>, Vec<f64>) = c.samples.iter().zip(&c.weights).rev().map(|(&x, &w)| (x, w)).unzip();
        let got = Backend::Cpu.histogram_weighted(&xs, &ws, &spec(), WeightedOptions::exact()).unwrap();
        assert_same(&got, &want, c.name);
        let xs: Vec<f64> = c.samples.iter().copied().cycle().take(1000 * c.samples.len()).collect();
        let ws: Vec<f64> = c.weights.iter().copied().cycle().take(1000 * c.weights.len()).collect();
        let want = histogram_weighted_exact(&xs, &ws, &spec()).unwrap();
        let got = Backend::Cpu.histogram_weighted(&xs, &ws, &spec(), WeightedOptions::exact()).unwrap();
        assert_same(&got, &want, c.name);
    }
}

#[test]
fn the_named_answers() {
    // Independent of both implementations: values a person can check.
    let h =
        |xs: &[f64], ws: &[f64]| Backend::Cpu.histogram_weighted(xs, ws, &spec(), WeightedOptions::exact()).unwrap();
    let r = h(&[0.5, 0.5, 0.5], &[1e308, 1.0, -1e308]);
    assert_eq!(r.sums[0][0], 1.0);
    let r = h(&[0.5, 0.5, 1.5, 1.5], &[f64::MAX, f64::MAX, f64::INFINITY, f64::NEG_INFINITY]);
    assert_eq!(r.sums[0][0], f64::INFINITY);
    assert!(r.sums[0][1].is_nan());
    let r = h(&[0.5, 0.5, 0.5], &[0.1, 0.2, -0.3]);
    // 0.1 + 0.2 - 0.3 in exact arithmetic of the three doubles: 2^-56 - ... not zero.
    assert_eq!(r.sums[0][0], exact_sum(&[0.1, 0.2, -0.3]));
    assert_ne!(r.sums[0][0], 0.0);
    assert_eq!(r.sums[0][2], 0.0);
    assert_eq!(r.sums[0][2].to_bits(), 0, "an empty bin is +0");
}

#[test]
fn random_weights_of_every_magnitude() {
    for (n, seed) in [(0, 1), (1, 2), (1000, 3), (100_003, 4)] {
        for specials in [false, true] {
            let c = random(n, seed, specials);
            let want = histogram_weighted_exact(&c.samples, &c.weights, &spec()).unwrap();
            let got = cpu_histogram_weighted(&c.samples, &c.weights, &spec(), Accumulation::Exact).unwrap();
            assert_same(&got, &want, &format!("n={n} seed={seed} specials={specials}"));
        }
    }
}

#[test]
fn f32_weights_and_channels() {
    let c = random(50_000, 7, true);
    let ws: Vec<f32> = c.weights.iter().map(|&w| (w * 1e-290) as f32).collect();
    let xs: Vec<f32> = c.samples.iter().map(|&x| x as f32).collect();
    let s = spec();
    let want = histogram_weighted_exact(&xs, &ws, &s).unwrap();
    let got = Backend::Cpu.histogram_weighted(&xs, &ws, &s, WeightedOptions::exact()).unwrap();
    assert_same(&got, &want, "f32");
    let s = s.with_channels(Channels { interleave: 4, selected: vec![0, 2, 3] });
    let want = histogram_weighted_exact(&xs, &ws, &s).unwrap();
    let got = Backend::Cpu.histogram_weighted(&xs, &ws, &s, WeightedOptions::exact()).unwrap();
    assert_same(&got, &want, "f32, channels 0, 2, 3 of 4");
}

#[test]
fn exact_agrees_with_fixed_point_where_fixed_point_is_exact() {
    // Integer weights below 2^20: fixed point is exact too.
    let c = random(20_000, 9, false);
    let ws: Vec<f64> = c.weights.iter().map(|w| (w.abs() % 1e6).floor()).collect();
    let exact = Backend::Cpu.histogram_weighted(&c.samples, &ws, &spec(), WeightedOptions::exact()).unwrap();
    let fixed = Backend::Cpu.histogram_weighted(&c.samples, &ws, &spec(), WeightedOptions::default()).unwrap();
    assert!(exact.same_bits(&fixed));
    // 2-D: the exact sums of each cell, against the 1-D reference of the cell's weights.
    let (xs, ys) = (c.samples.clone(), c.samples.iter().rev().copied().collect::<Vec<_>>());
    let spec2 = Histogram2dSpec { x: Bins::even(2, 0.0, 4.0), y: Bins::even(2, 0.0, 4.0) };
    let got = Backend::Cpu
        .histogram_2d_weighted(Pairs::Split(&xs, &ys), &c.weights[..], &spec2, WeightedOptions::exact())
        .unwrap();
    let counted = reference::histogram_2d::<f64, f64>(Pairs::Split(&xs, &ys), None, &spec2).unwrap();
    for ix in 0..2 {
        for iy in 0..2 {
            let cell = |v: f64| (0.0..4.0).contains(&v).then(|| (v / 2.0) as usize);
            let ws: Vec<f64> = (0..xs.len())
                .filter(|&i| cell(xs[i]) == Some(ix) && cell(ys[i]) == Some(iy))
                .map(|i| c.weights[i])
                .collect();
            assert_eq!(ws.len() as u64, counted.counts[ix * 2 + iy]);
            assert_eq!(got.sums[ix * 2 + iy].to_bits(), exact_sum(&ws).to_bits(), "cell {ix},{iy}");
        }
    }
}
