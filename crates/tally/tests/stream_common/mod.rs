//! What the streamed primitives are held to, on any backend: the one-shot CPU call over all the
//! elements, for chunkings from one element per chunk to one chunk holding everything.

use tally::{
    Backend, CmpOp, Compare, HistogramSpec, ReduceElement, ReduceOp, ReduceOptions, Reduction, Result, Sample,
};

/// Chunk sizes for an input of `n`: one element, a few, n - 1, n, n + 1 (and a few thousand).
pub fn chunkings(n: usize) -> Vec<usize> {
    let mut c = vec![1, 3, 7, n.saturating_sub(1).max(1), n.max(1), n + 1, 4096];
    c.sort_unstable();
    c.dedup();
    c
}

/// Input sizes: empty, one, small, and enough for many chunks of a few thousand.
pub const SIZES: [usize; 6] = [0, 1, 2, 33, 1000, 20_011];

/// `SIZES`, or under `TALLY_SMALL=1` (compute-sanitizer) those up to 33: one-element chunks are
/// a launch and a copy per element for each of some sixty op and option pairs, and at 1000
/// elements memcheck and racecheck did not get through one test in five minutes; at 33 each of
/// the two or three slots is still reused a dozen times.
pub fn sizes() -> Vec<usize> {
    let small = std::env::var("TALLY_SMALL").as_deref() == Ok("1");
    SIZES.into_iter().filter(|&n| !small || n <= 33).collect()
}

/// Every op with every option that means something for it.
pub fn ops(float: bool) -> Vec<(ReduceOp, ReduceOptions)> {
    let plain = ReduceOptions::default();
    let mut v = vec![
        (ReduceOp::Sum, plain),
        (ReduceOp::Mean, plain),
        (ReduceOp::Min, plain),
        (ReduceOp::Max, plain),
        (ReduceOp::MinMax, plain),
        (ReduceOp::ArgMin, plain),
        (ReduceOp::ArgMax, plain),
        (ReduceOp::Count(Compare::new(CmpOp::Gt, 0.5)), plain),
    ];
    if float {
        let skip = ReduceOptions::skip_nan();
        v.extend([
            (ReduceOp::Sum, ReduceOptions::exact()),
            (ReduceOp::Mean, ReduceOptions::exact()),
            (ReduceOp::Sum, ReduceOptions::exact().with_skip_nan(true)),
            (ReduceOp::Sum, skip),
            (ReduceOp::Min, skip),
            (ReduceOp::MinMax, skip),
            (ReduceOp::ArgMin, skip),
            (ReduceOp::ArgMax, skip),
            (ReduceOp::Count(Compare::new(CmpOp::Ne, 0.25)), skip),
        ]);
    }
    v
}

/// `got` against the CPU's one-shot result `want`: the same result bit for bit, but for plain
/// float sums and means (summed in another order), whose value must agree to rounding of the
/// elements' magnitudes (`magnitude`: the sum of their absolute values).
pub fn assert_same_reduction<T: ReduceElement>(
    got: &Result<Reduction>,
    want: &Result<Reduction>,
    (op, options): (ReduceOp, ReduceOptions),
    magnitude: f64,
    what: &str,
) {
    match (got, want) {
        (Ok(g), Ok(w)) => {
            let reordered = T::TYPE.is_float() && !options.exact && matches!(op, ReduceOp::Sum | ReduceOp::Mean);
            if reordered {
                // Equal values first: an infinite sum minus itself is NaN, not 0.
                let close = g.value == w.value
                    || (g.value - w.value).abs() <= 1e-12 * magnitude.max(1.0)
                    || (g.value.is_nan() && w.value.is_nan());
                assert!(
                    close && g.n == w.n && g.nan_skipped == w.nan_skipped,
                    "{what} {op:?} {options:?}: {g:?} vs {w:?}"
                );
            } else {
                assert!(g.same_result(w), "{what} {op:?} {options:?}:\n got {g:?}\nwant {w:?}");
            }
        }
        (Err(g), Err(w)) => assert_eq!(g.to_string(), w.to_string(), "{what} {op:?}"),
        (g, w) => panic!("{what} {op:?} {options:?}: got {g:?}, want {w:?}"),
    }
}

/// Every op streamed by `stream(xs, chunk, op, options)` against the one-shot CPU call.
pub fn check_reductions<T: ReduceElement>(
    xs: &[T],
    what: &str,
    mut stream: impl FnMut(&[T], usize, ReduceOp, ReduceOptions) -> Result<Reduction>,
) {
    let magnitude: f64 = xs.iter().map(|x| x.to_f64().abs()).filter(|x| x.is_finite()).sum();
    for (op, options) in ops(T::TYPE.is_float()) {
        let want = Backend::cpu().reduce(xs, op, options);
        for chunk in chunkings(xs.len()) {
            let got = stream(xs, chunk, op, options);
            assert_same_reduction::<T>(
                &got,
                &want,
                (op, options),
                magnitude,
                &format!("{what} n={} chunk={chunk}", xs.len()),
            );
        }
    }
}

/// Histograms of `xs` streamed by `stream(xs, chunk, spec)` against the one-shot CPU call, for
/// plain and interleaved (3-channel) samples; chunks of whole interleaved samples.
pub fn check_histograms<T: Sample>(
    xs: &[T],
    what: &str,
    mut stream: impl FnMut(&[T], usize, &HistogramSpec) -> Result<tally::Histogram>,
) {
    let specs = [
        HistogramSpec::even(256, 0.0, 256.0),
        HistogramSpec::even(7, 10.0, 200.0),
        HistogramSpec::edges(vec![0.0, 1.0, 50.0, 51.0, 255.0]),
        HistogramSpec::even(16, 0.0, 256.0).with_channels(tally::Channels { interleave: 3, selected: vec![2, 0] }),
    ];
    for spec in &specs {
        let k = spec.channels.interleave as usize;
        let xs = &xs[..xs.len() / k * k];
        let want = Backend::cpu().histogram(xs, spec, tally::Strategy::Auto).unwrap();
        for chunk in chunkings(xs.len()) {
            let chunk = chunk.next_multiple_of(k);
            let got = stream(xs, chunk, spec).unwrap();
            assert!(
                got.same_counts(&want),
                "{what} n={} chunk={chunk} {spec:?}:\n got {got:?}\nwant {want:?}",
                xs.len()
            );
        }
    }
}

/// Samples 0..=255 as `T`, skewed (a third of them 7), with NaNs where `T` has them.
pub fn samples<T: Sample + From<u8>>(n: usize, seed: u64) -> Vec<T> {
    let mut s = seed;
    (0..n)
        .map(|i| {
            s = tally::data::splitmix64(s);
            if i % 3 == 0 {
                T::from(7u8)
            } else {
                T::from((s >> 56) as u8)
            }
        })
        .collect()
}

/// Weights for `n` samples: both signs, magnitudes from 2^-20 to 2^20, some zero.
#[allow(dead_code)]
pub fn weights(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|i| {
            s = tally::data::splitmix64(s);
            let m = ((s >> 11) as f64 / (1u64 << 53) as f64) * 2f64.powi((s % 41) as i32 - 20);
            if i % 5 == 0 {
                0.0
            } else if s & 1 == 1 {
                -m
            } else {
                m
            }
        })
        .collect()
}

/// Weighted histograms of `xs` and `ws` streamed by `stream(xs, ws, chunk, spec, scale)`, the
/// scale from a streamed pass, against the one-shot CPU call: the same bits, for plain and
/// interleaved samples.
#[allow(dead_code)]
pub fn check_weighted_histograms<T: Sample, W: tally::histogram::Weight + tally::device::PlainData>(
    xs: &[T],
    ws: &[W],
    what: &str,
    mut stream: impl FnMut(&[T], &[W], usize, &HistogramSpec) -> Result<tally::WeightedHistogram>,
) {
    let specs = [
        HistogramSpec::even(256, 0.0, 256.0),
        HistogramSpec::even(7, 10.0, 200.0),
        HistogramSpec::even(16, 0.0, 256.0).with_channels(tally::Channels { interleave: 3, selected: vec![2, 0] }),
    ];
    for spec in &specs {
        let k = spec.channels.interleave as usize;
        let n = xs.len() / k * k;
        let (xs, ws) = (&xs[..n], &ws[..n]);
        let want = Backend::cpu().histogram_weighted(xs, ws, spec, tally::WeightedOptions::default()).unwrap();
        for chunk in chunkings(n) {
            let chunk = chunk.next_multiple_of(k);
            let got = stream(xs, ws, chunk, spec).unwrap();
            assert!(got.same_bits(&want), "{what} n={n} chunk={chunk} {spec:?}:\n got {got:?}\nwant {want:?}");
        }
    }
}
