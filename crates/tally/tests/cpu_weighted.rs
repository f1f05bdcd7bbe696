//! Weighted and 2-D histograms on the CPU backend: fixed-point sums bit for bit against the
//! sequential reference and across runs, within the stated bound of exact rational sums, exact for
//! integer weights; 2-D counts exact against the reference, edges, NaN and one-axis outliers
//! included.

use proptest::prelude::*;
use proptest::test_runner::Config;
use tally::data::splitmix64;
use tally::histogram::{reference, FixedScale};
use tally::{Accumulation, Backend, Bins, Channels, Error, Histogram2dSpec, HistogramSpec, Pairs, WeightedOptions};

fn unit(r: u64) -> f64 {
    (r >> 11) as f64 / (1u64 << 53) as f64
}

/// Samples over [-2, 12) for bins over [0, 10), with NaN, edges and one-ulp neighbours.
fn samples(n: usize, seed: u64) -> Vec<f64> {
    let specials = [0.0, 10.0, f64::NAN, 5.0, 9.999999999999998, -0.0, 1e-300, f64::INFINITY, f64::NEG_INFINITY];
    (0..n)
        .map(|i| {
            let r = splitmix64(seed ^ (i as u64).wrapping_mul(0x9e37));
            if r.is_multiple_of(9) {
                specials[(r >> 20) as usize % specials.len()]
            } else {
                -2.0 + 14.0 * unit(r)
            }
        })
        .collect()
}

/// Weights that are multiples of 2^-20 in [-2^11, 2^11): their sums are exact in i128 units of 2^-20.
fn dyadic_weights(n: usize, seed: u64) -> Vec<f64> {
    (0..n)
        .map(|i| ((splitmix64(seed.wrapping_add(i as u64)) >> 32) as i64 - (1i64 << 31)) as f64 / (1u64 << 20) as f64)
        .collect()
}

fn config() -> Config {
    Config { cases: 48, ..Config::default() }
}

proptest! {
    #![proptest_config(config())]

    /// CPU fixed point: the reference's bits, run after run, whatever the channels.
    #[test]
    fn weighted_cpu_equals_reference_bit_for_bit(n in 0usize..5000, seed in any::<u64>(), interleave in 1u32..4, edges in any::<bool>()) {
        let xs = samples(n, seed);
        let ws: Vec<f32> = dyadic_weights(n, seed).into_iter().map(|w| (w * 1e3) as f32).collect();
        let bins = if edges { Bins::Edges(vec![0.0, 0.5, 2.0, 2.25, 7.0, 10.0]) } else { Bins::even(10, 0.0, 10.0) };
        let spec = HistogramSpec { bins, channels: Channels::all(interleave) };
        let want = reference::histogram_weighted(&xs, &ws, &spec).unwrap();
        let got = Backend::Cpu.histogram_weighted(&xs, &ws, &spec, WeightedOptions::default()).unwrap();
        prop_assert!(got.same_bits(&want), "got {:?}\nwant {:?}", got.sums, want.sums);
        let again = Backend::Cpu.histogram_weighted(&xs, &ws, &spec, WeightedOptions::default()).unwrap();
        prop_assert!(again.same_bits(&got));
        prop_assert!(got.weighting.deterministic);
    }

    /// Within n_bin * 2^-(k+1) (plus the final rounding) of the exact rational sums.
    #[test]
    fn weighted_within_the_stated_bound(n in 1usize..4000, seed in any::<u64>(), shift in 0i32..40) {
        let xs = samples(n, seed);
        // Scale the dyadic weights so that the fixed-point grid is coarser or finer than theirs.
        let ws: Vec<f64> = dyadic_weights(n, seed).into_iter().map(|w| w * 2f64.powi(shift)).collect();
        let spec = HistogramSpec::even(10, 0.0, 10.0);
        let got = Backend::Cpu.histogram_weighted(&xs, &ws, &spec, WeightedOptions::default()).unwrap();
        let scale = got.weighting.fixed.unwrap();
        let mut exact = [0i128; 10];
        let mut count = [0u64; 10];
        for (&x, &w) in xs.iter().zip(&ws) {
            if x.is_nan() || !(0.0..10.0).contains(&x) {
                continue;
            }
            let b = ((x * 10.0) / 10.0).floor() as usize;
            exact[b] += (w * 2f64.powi(20 - shift)) as i128; // exact: w is a multiple of 2^(shift-20)
            count[b] += 1;
        }
        for b in 0..10 {
            let e = exact[b] as f64 * 2f64.powi(shift - 20); // |exact| < 2^53 units: exact in f64
            let bound = scale.bound_for(count[b]) + e.abs() * 2f64.powi(-52);
            prop_assert!((got.sums[0][b] - e).abs() <= bound, "bin {b}: got {} exact {e} bound {bound} (k = {})", got.sums[0][b], scale.log2);
        }
    }
}

#[test]
fn integer_weights_give_exact_sums() {
    let n = 100_000;
    let xs: Vec<i32> = (0..n).map(|i| (splitmix64(i as u64) % 300) as i32 - 20).collect();
    let ws: Vec<f32> = (0..n).map(|i| ((splitmix64(i as u64 ^ 77) % 2001) as i32 - 1000) as f32).collect();
    let spec = HistogramSpec::even(256, 0.0, 256.0);
    for accumulation in [Accumulation::FixedPoint, Accumulation::FloatAtomics] {
        let opts = WeightedOptions { accumulation, ..Default::default() };
        let h = Backend::Cpu.histogram_weighted(&xs, &ws, &spec, opts).unwrap();
        let mut want = vec![0i64; 256];
        let (mut below, mut above) = ((0i64, 0u64), (0i64, 0u64));
        for (&x, &w) in xs.iter().zip(&ws) {
            match x {
                x if x < 0 => below = (below.0 + w as i64, below.1 + 1),
                x if x >= 256 => above = (above.0 + w as i64, above.1 + 1),
                x => want[x as usize] += w as i64,
            }
        }
        let got: Vec<i64> = h.sums[0].iter().map(|&s| s as i64).collect();
        assert_eq!(got, want, "{accumulation:?}");
        assert!(h.sums[0].iter().all(|s| s.fract() == 0.0));
        assert_eq!((h.below[0] as i64, h.below_count[0]), below);
        assert_eq!((h.above[0] as i64, h.above_count[0]), above);
        if accumulation == Accumulation::FixedPoint {
            assert!(h.weighting.fixed.unwrap().log2 >= 0, "integer weights need k >= 0");
        }
    }
}

#[test]
fn bad_weights_are_refused() {
    let spec = HistogramSpec::even(4, 0.0, 4.0);
    let xs = [0.5f32, 1.5, 2.5];
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let e = Backend::Cpu.histogram_weighted(&xs, &[1.0, bad, 2.0], &spec, WeightedOptions::default()).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(ref m) if m.contains("weight 1")), "{e}");
        let e = Backend::Cpu
            .histogram_weighted(&xs, &[1.0, bad, 2.0], &spec, WeightedOptions::float_atomics())
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    }
    let e = Backend::Cpu.histogram_weighted(&xs, &[1.0f64, 2.0], &spec, WeightedOptions::default()).unwrap_err();
    assert!(e.to_string().contains("3 samples but 2 weights"), "{e}");
}

#[test]
fn the_scale_keeps_every_sum_below_2_62() {
    // n = 2^20 weights of magnitude below 2^1: k = 62 - 20 - 1.
    assert_eq!(FixedScale::new(1.5, 1 << 20).log2, 41);
    assert_eq!(FixedScale::new(1.0, 1 << 20).log2, 41); // 1.0 < 2^1
    assert_eq!(FixedScale::new(2.0, 1 << 20).log2, 40); // 2.0 < 2^2
    assert_eq!(FixedScale::new(1.0, (1 << 20) + 1).log2, 40);
    assert_eq!(FixedScale::new(0.0, 10).log2, 0);
    assert_eq!(FixedScale::new(1e-320, 1).log2, 1023);
    assert!(FixedScale::new(f64::MAX, u64::MAX).log2 < 0);
    // The worst case: every weight the largest, all in one bin, either sign.
    for (n, w) in [(1usize << 16, 3.75f64), (1000, -1e300), (5, 1.0)] {
        let xs = vec![0.5f64; n];
        let ws = vec![w; n];
        let h = Backend::Cpu
            .histogram_weighted(&xs, &ws, &HistogramSpec::even(1, 0.0, 1.0), WeightedOptions::default())
            .unwrap();
        let want = w * n as f64;
        assert!((h.sums[0][0] - want).abs() <= want.abs() * 1e-15, "{n} x {w}: {}", h.sums[0][0]);
        let mixed: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { w } else { -w }).collect();
        let h = Backend::Cpu
            .histogram_weighted(&xs, &mixed, &HistogramSpec::even(1, 0.0, 1.0), WeightedOptions::default())
            .unwrap();
        assert_eq!(h.sums[0][0], if n % 2 == 0 { 0.0 } else { w });
    }
}

#[test]
fn float_accumulation_is_close_and_says_it_is_not_deterministic() {
    let xs = samples(50_000, 3);
    let ws: Vec<f32> = (0..xs.len()).map(|i| unit(splitmix64(i as u64)) as f32).collect();
    let spec = HistogramSpec::even(10, 0.0, 10.0);
    let fixed = Backend::Cpu.histogram_weighted(&xs, &ws, &spec, WeightedOptions::default()).unwrap();
    let float = Backend::Cpu.histogram_weighted(&xs, &ws, &spec, WeightedOptions::float_atomics()).unwrap();
    assert!(!float.weighting.deterministic && float.weighting.fixed.is_none());
    for (a, b) in fixed.sums[0].iter().zip(&float.sums[0]) {
        assert!((a - b).abs() <= 1e-9 * a.abs().max(1.0), "{a} {b}");
    }
    assert_eq!(
        (fixed.below_count.clone(), fixed.nan_count.clone()),
        (float.below_count.clone(), float.nan_count.clone())
    );
}

// ---- 2-D ----------------------------------------------------------------------------------------

fn pairs(n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    (samples(n, seed), samples(n, seed ^ 0xabcdef))
}

proptest! {
    #![proptest_config(config())]

    /// Counts exact against the reference, split and interleaved alike, edges, NaN and one-axis
    /// outliers included (the samples hit all of them).
    #[test]
    fn counts_2d_equal_the_reference(n in 0usize..4000, seed in any::<u64>(), edges_x in any::<bool>(), edges_y in any::<bool>()) {
        let (x, y) = pairs(n, seed);
        let bx = if edges_x { Bins::Edges(vec![0.0, 1.0, 2.5, 10.0]) } else { Bins::even(7, 0.0, 10.0) };
        let by = if edges_y { Bins::Edges(vec![-1.0, 0.0, 5.0, 9.0, 10.0]) } else { Bins::even(5, 0.0, 10.0) };
        let spec = Histogram2dSpec { x: bx, y: by };
        let want = reference::histogram_2d::<f64, f32>(Pairs::Split(&x, &y), None, &spec).unwrap();
        let got = Backend::Cpu.histogram_2d(Pairs::Split(&x, &y), &spec, tally::Strategy::Auto).unwrap();
        prop_assert!(got.same_bits(&want), "got {:?} want {:?}", got.outliers, want.outliers);
        let inter: Vec<f64> = x.iter().zip(&y).flat_map(|(&a, &b)| [a, b]).collect();
        let got2 = Backend::Cpu.histogram_2d(Pairs::Interleaved(&inter), &spec, tally::Strategy::Auto).unwrap();
        prop_assert!(got2.same_bits(&want));
        prop_assert_eq!(got.counts.iter().sum::<u64>() + got.outliers.nan + got.outliers.x_below + got.outliers.x_above + got.outliers.y_below + got.outliers.y_above, n as u64);
    }

    #[test]
    fn weighted_2d_equals_the_reference(n in 0usize..3000, seed in any::<u64>()) {
        let (x, y) = pairs(n, seed);
        let w: Vec<f64> = dyadic_weights(n, seed);
        let spec = Histogram2dSpec::even(6, (0.0, 10.0), 4, (0.0, 10.0));
        let want = reference::histogram_2d(Pairs::Split(&x, &y), Some(&w), &spec).unwrap();
        let got = Backend::Cpu.histogram_2d_weighted(Pairs::Split(&x, &y), &w, &spec, WeightedOptions::default()).unwrap();
        prop_assert!(got.same_bits(&want));
        prop_assert!(got.counts.is_empty() && got.sums.len() == 24);
    }
}

#[test]
fn edges_nan_and_one_axis_outliers_2d() {
    let nan = f32::NAN;
    // x bins [0, 2) in 2; y bins [0, 3) in 3.
    let x = [0.0f32, 1.0, 2.0, -0.5, nan, 0.5, 1.999, 0.0, 5.0, 1.5, nan];
    let y = [0.0f32, 2.999, 0.0, 1.0, 1.0, nan, 3.0, -1.0, nan, 1.0, nan];
    let spec = Histogram2dSpec::even(2, (0.0, 2.0), 3, (0.0, 3.0));
    let h = Backend::Cpu.histogram_2d(Pairs::Split(&x, &y), &spec, tally::Strategy::Auto).unwrap();
    assert_eq!(h.outliers.nan, 4, "NaN in x, in y, in both: counted as NaN, whatever the other coordinate");
    assert_eq!(h.outliers.x_above, 1, "x = 2.0 is the upper edge: above, y in range");
    assert_eq!(h.outliers.x_below, 1);
    assert_eq!(h.outliers.y_above, 1, "y = 3.0 is the upper edge");
    assert_eq!(h.outliers.y_below, 1);
    assert_eq!(h.count(0, 0), 1);
    assert_eq!(h.count(1, 2), 1);
    assert_eq!(h.count(1, 1), 1);
    assert_eq!(h.counts.iter().sum::<u64>(), 3);
    let want = reference::histogram_2d::<f32, f32>(Pairs::Split(&x, &y), None, &spec).unwrap();
    assert!(h.same_bits(&want));
}

#[test]
fn bad_pairs_are_refused() {
    let spec = Histogram2dSpec::even(2, (0.0, 1.0), 2, (0.0, 1.0));
    let e = Backend::Cpu.histogram_2d(Pairs::Split(&[1.0f32, 2.0], &[1.0]), &spec, tally::Strategy::Auto).unwrap_err();
    assert!(e.to_string().contains("2 x values but 1 y values"), "{e}");
    let e =
        Backend::Cpu.histogram_2d(Pairs::Interleaved(&[1.0f32, 2.0, 3.0]), &spec, tally::Strategy::Auto).unwrap_err();
    assert!(e.to_string().contains("pairs"), "{e}");
    let bad = Histogram2dSpec { x: Bins::even(0, 0.0, 1.0), y: Bins::even(2, 0.0, 1.0) };
    let e = Backend::Cpu.histogram_2d(Pairs::Split(&[1.0f32], &[1.0]), &bad, tally::Strategy::Auto).unwrap_err();
    assert!(e.to_string().contains("x axis"), "{e}");
}

#[test]
fn large_2d_counts_on_the_cpu() {
    let n = 1 << 18;
    let x: Vec<f32> = (0..n).map(|i| unit(splitmix64(i as u64)) as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| unit(splitmix64(i as u64 ^ 5)) as f32).collect();
    let spec = Histogram2dSpec::even(1024, (0.0, 1.0), 1024, (0.0, 1.0));
    let got = Backend::Cpu.histogram_2d(Pairs::Split(&x, &y), &spec, tally::Strategy::Auto).unwrap();
    let want = reference::histogram_2d::<f32, f32>(Pairs::Split(&x, &y), None, &spec).unwrap();
    assert!(got.same_bits(&want));
    assert_eq!(got.counts.len(), 1 << 20);
}
