//! What the 16-bit float tests of both backends share: f16 and bf16 inputs holding every kind
//! of value (NaN, both infinities, -0.0 next to +0.0, subnormals, the largest finite values),
//! and the check of every primitive on them against the sequential references.
#![allow(dead_code)] // each test binary uses its own subset

use crate::reduce_common::{big_exact_sum, check_every_op, Gen};
use tally::half::{bf16, f16};
use tally::{
    Backend, HistogramSpec, ReduceByKeyInto, RunKey, RunOp, Sample, ScanElement, ScanOp, ScanOptions, SelectElement,
};

/// A 16-bit float type with what the checks need of it.
pub trait Half:
    Gen + Sample + SelectElement + RunKey + ScanElement<Wide = f32> + ReduceByKeyInto<f32> + ReduceByKeyInto<u64>
{
    /// The value from its bits.
    fn of_bits(bits: u16) -> Self;
    /// The exact f32 value.
    fn as_f32(self) -> f32;
    /// The largest finite value's bits.
    const MAX_BITS: u16;
    /// The smallest subnormal's bits is 1; the largest subnormal's.
    const MAX_SUBNORMAL_BITS: u16;
    /// +infinity's bits.
    const INF_BITS: u16;
}

macro_rules! half {
    ($($t:ty: $max:expr, $sub:expr, $inf:expr),*) => {$(
        impl Half for $t {
            fn of_bits(bits: u16) -> Self {
                <$t>::from_bits(bits)
            }
            fn as_f32(self) -> f32 {
                self.to_f32()
            }
            const MAX_BITS: u16 = $max;
            const MAX_SUBNORMAL_BITS: u16 = $sub;
            const INF_BITS: u16 = $inf;
        }
    )*};
}
half!(f16: 0x7bff, 0x03ff, 0x7c00, bf16: 0x7f7f, 0x007f, 0x7f80);

/// The special values of `T`: both zeros, both infinities, NaN, the largest finite values, the
/// smallest and largest subnormals of both signs, and one.
pub fn specials<T: Half>() -> Vec<T> {
    let sign = 0x8000u16;
    let bits = [0, sign, T::INF_BITS, T::INF_BITS | sign, T::INF_BITS | 0x41, T::MAX_BITS, T::MAX_BITS | sign, 1];
    let more = [1 | sign, T::MAX_SUBNORMAL_BITS, T::MAX_SUBNORMAL_BITS | sign];
    bits.into_iter().chain(more).map(T::of_bits).chain([T::from_value(1.0, None)]).collect()
}

/// `n` values: every eighth a special value, the rest random finite values of every magnitude.
pub fn every_kind<T: Half>(n: usize, seed: u64) -> Vec<T> {
    let sp = specials::<T>();
    let mut r = crate::common::Rng(seed);
    (0..n).map(|i| if i % 8 == 3 { sp[(r.next() % sp.len() as u64) as usize] } else { T::gen(&mut r) }).collect()
}

/// `n` finite values in (-64, 64) with a few bits of fraction, -0.0 and subnormals among them:
/// sums in f32 stay far from overflow, so that sums in different orders are close.
pub fn moderate<T: Half>(n: usize, seed: u64) -> Vec<T> {
    let mut r = crate::common::Rng(seed);
    (0..n)
        .map(|_| {
            let b = r.next();
            match b % 16 {
                0 => T::of_bits(0x8000),
                1 => T::of_bits(1 + (b >> 8) as u16 % T::MAX_SUBNORMAL_BITS),
                _ => T::from_value(((b >> 8) % 1024) as f64 / 8.0 - 64.0, None),
            }
        })
        .collect()
}

/// Histograms of `xs` on `backend`: the same counts as the reference's, and as the reference's
/// for the same values as f32 (the binning rule of 16-bit floats is that of their f32 value).
pub fn check_histogram<T: Half>(backend: &Backend, xs: &[T], what: &str) {
    let max = T::of_bits(T::MAX_BITS).as_f32() as f64;
    let as_f32: Vec<f32> = xs.iter().map(|x| x.as_f32()).collect();
    let specs = [
        HistogramSpec::even(37, -100.0, 100.0),
        HistogramSpec::even(1000, -max, max),
        HistogramSpec::even(256, -1.0, 1.0),
        // Lower 0 and power-of-two bin widths: the kernels' f32 estimate is the rule itself.
        HistogramSpec::even(4096, 0.0, 4096.0),
        HistogramSpec::even(128, 0.0, 64.0),
        HistogramSpec::edges(vec![-max, -1.0, -0.0, 1e-7, 3.0, max]),
    ];
    for spec in &specs {
        let want = tally::histogram::reference::histogram(xs, spec);
        let want32 = tally::histogram::reference::histogram(&as_f32, spec);
        let label = format!("{what} {} n={} {spec:?}", T::DTYPE, xs.len());
        crate::common::assert_same_counts(&want32, &want, &format!("the f32 rule: {label}"));
        let got = backend.histogram(xs, spec, tally::Strategy::Auto).unwrap();
        crate::common::assert_same_counts(&got, &want, &label);
    }
}

/// Every reduction (with and without skip_nan, exact sums) against the reference, and the
/// exact sum against an independent big-integer sum of the same values.
pub fn check_reductions<T: Half>(backend: &Backend, xs: &[T], what: &str) {
    check_every_op(backend, xs, what);
    let values: Vec<f64> = xs.iter().map(|x| x.as_f32() as f64).collect();
    let want = big_exact_sum(&values);
    let got = backend.sum_exact(xs).unwrap();
    assert!(
        want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()),
        "{what}: exact sum {want:e} vs {got:e}"
    );
}

/// Scans into f32 (the accumulator type) against the reference: min and max exactly, sums
/// within rounding of their order.
pub fn check_scans<T: Half>(backend: &Backend, xs: &[T], what: &str) {
    let none = None::<&[u32]>;
    for exclusive in [false, true] {
        let options = ScanOptions { exclusive, ..ScanOptions::default() };
        for op in [ScanOp::Sum, ScanOp::Min, ScanOp::Max] {
            let got: Vec<f32> = backend.scan_vec(xs, op, options).unwrap();
            let want: Vec<f32> = tally::scan::reference::scan(xs, none, op, &options).unwrap();
            let label = format!("{what} {} {op:?} exclusive={exclusive} n={}", T::DTYPE, xs.len());
            crate::scan_common::compare(xs, &got, &want, op, &label);
        }
        let got: Vec<f32> = backend.cumsum_vec(xs).unwrap();
        let want: Vec<f32> = tally::scan::reference::scan(xs, none, ScanOp::Sum, &ScanOptions::default()).unwrap();
        crate::scan_common::compare(xs, &got, &want, ScanOp::Sum, &format!("{what} cumsum n={}", xs.len()));
    }
}

/// Every select entry point for every predicate of the select tests.
pub fn check_select<T: Half>(backend: &Backend, xs: &[T], what: &str) {
    for p in crate::select_common::PREDICATES {
        crate::select_common::check_all(backend, xs, p, what);
    }
    // Constants rounded to the type: 0.1 is not an f16 or a bf16.
    crate::select_common::check_all(backend, xs, "x == 0.1 || x == -0.0 || x > 65504", what);
}

/// Unique and run-length encoding of 16-bit keys (NaNs each a run, -0.0 == +0.0), and
/// reduce-by-key of 16-bit values into f32, against the reference.
pub fn check_runs<T: Half>(backend: &Backend, keys: &[T], values: &[T], what: &str) {
    crate::runs_common::check_runs(backend, keys, what);
    let (want_keys, lengths) = tally::runs::reference::run_length_encode(keys);
    for op in [RunOp::Sum, RunOp::Min, RunOp::Max] {
        let label = format!("{what} {} of {} n={}", op.name(), T::DTYPE, keys.len());
        let (k, got): (Vec<T>, Vec<f32>) = backend.reduce_by_key_vec(keys, values, op).unwrap();
        let (_, want) = tally::runs::reference::reduce_by_key::<T, T, f32>(keys, values, op).unwrap();
        assert!(crate::runs_common::same(&k, &want_keys), "{label}: keys");
        if op == RunOp::Sum {
            crate::runs_common::close_sums(values, &lengths, &got, &want, &label);
        } else {
            assert!(crate::runs_common::same(&got, &want), "{label}: values");
        }
    }
    let (_, counts): (Vec<T>, Vec<u64>) = backend.reduce_by_key_vec(keys, values, RunOp::Count).unwrap();
    assert_eq!(counts, lengths, "{what}: counts");
}

/// Keys in runs: values of `T` from run numbers, with NaN, -0.0 and +0.0 runs among them.
pub fn run_keys<T: Half>(n: usize, seed: u64) -> Vec<T> {
    let ids = crate::scan_common::runs(n, 9, seed);
    ids.into_iter()
        .map(|id| match id % 11 {
            0 => T::of_bits(T::INF_BITS | 1),
            1 => T::of_bits(0x8000),
            2 => T::of_bits(0),
            _ => T::from_value((id % 200) as f64 - 100.0, None),
        })
        .collect()
}

/// Every primitive on the sizes and inputs of the 16-bit tests.
pub fn check_every_primitive<T: Half>(backend: &Backend, sizes: &[usize]) {
    for (k, &n) in sizes.iter().enumerate() {
        let seed = 100 + k as u64;
        let wild: Vec<T> = every_kind(n, seed);
        check_histogram(backend, &wild, "every kind");
        check_reductions(backend, &wild, "every kind");
        check_select(backend, &wild, "every kind");
        let tame: Vec<T> = moderate(n, seed);
        check_scans(backend, &tame, "moderate");
        check_runs(backend, &run_keys::<T>(n, seed), &tame, "run keys");
        check_runs(backend, &wild, &tame, "every kind as keys");
    }
    let sp = specials::<T>();
    check_histogram(backend, &sp, "specials");
    check_reductions(backend, &sp, "specials");
    check_select(backend, &sp, "specials");
}
