//! What the reduction tests of both backends share: inputs of every type, an independent exact
//! sum (a plain big integer), and the check of every op against the sequential reference.
#![allow(dead_code)] // each test binary uses its own subset

use tally::reduce::reference;
use tally::{Backend, CmpOp, Compare, ReduceElement, ReduceOp, ReduceOptions, Reduction};

/// The sizes every op is checked at.
pub const SIZES: [usize; 7] = [0, 1, 31, 32, 33, 1025, (1 << 20) + 7];

pub use crate::common::Rng;

/// An element from random bits: integers over their whole range, floats of many magnitudes
/// and both signs (finite).
pub trait Gen: ReduceElement {
    fn gen(r: &mut Rng) -> Self;
}
crate::common::gen_truncated!(Gen: u8, i8, u16, i16, u32, i32, u64, i64);
impl Gen for f32 {
    fn gen(r: &mut Rng) -> Self {
        let b = r.next();
        let m = (b & 0xffff) as f32 / 65536.0 + 0.5;
        let e = ((b >> 16) % 40) as i32 - 20;
        let s = if b >> 63 == 1 { -1.0 } else { 1.0 };
        s * m * 2f32.powi(e)
    }
}
impl Gen for f64 {
    fn gen(r: &mut Rng) -> Self {
        let b = r.next();
        let m = (b & 0xffff_ffff) as f64 / 4294967296.0 + 0.5;
        let e = ((b >> 32) % 200) as i32 - 100;
        let s = if b >> 63 == 1 { -1.0 } else { 1.0 };
        s * m * 2f64.powi(e)
    }
}

/// 16-bit floats from random bits: every finite value is as likely as any other (subnormals
/// and -0.0 included); the all-ones exponent (infinities, NaN) is moved one binade down.
macro_rules! gen_half {
    ($($t:ty: $exp:expr),*) => {$(
        impl Gen for $t {
            fn gen(r: &mut Rng) -> Self {
                let bits = r.next() as u16;
                <$t>::from_bits(if bits & $exp == $exp { bits & !(1 << $exp.trailing_zeros()) } else { bits })
            }
        }
    )*};
}
gen_half!(tally::half::f16: 0x7c00u16, tally::half::bf16: 0x7f80u16);

pub fn data<T: Gen>(n: usize, seed: u64) -> Vec<T> {
    crate::common::draw(n, seed, T::gen)
}

/// The exact sum of `xs` rounded to f64, by a route of its own: positive and negative
/// magnitudes as plain big integers in units of 2^-1074, subtracted, then the top 64 bits with
/// a sticky bit converted by the hardware's rounding and scaled by powers of two.
pub fn big_exact_sum(xs: &[f64]) -> f64 {
    let (mut pos_inf, mut neg_inf) = (false, false);
    const W: usize = 2200 / 32 + 4;
    let mut pos = vec![0u64; W];
    let mut neg = vec![0u64; W];
    for &x in xs {
        if x.is_nan() {
            return f64::NAN;
        }
        if x.is_infinite() {
            if x > 0.0 {
                pos_inf = true
            } else {
                neg_inf = true
            }
            continue;
        }
        let bits = x.to_bits();
        let e = ((bits >> 52) & 0x7ff) as usize;
        let m = (bits & ((1 << 52) - 1)) | if e > 0 { 1 << 52 } else { 0 };
        let shift = if e > 0 { e - 1 } else { 0 };
        let acc = if bits >> 63 == 1 { &mut neg } else { &mut pos };
        // Add m << shift, 32 bits per word.
        let mut carry: u64 = 0;
        let (word, bit) = (shift / 32, shift % 32);
        let v = (m as u128) << bit;
        for k in 0..4 {
            let add = ((v >> (32 * k)) as u64) & 0xffff_ffff;
            let s = acc[word + k] + add + carry;
            acc[word + k] = s & 0xffff_ffff;
            carry = s >> 32;
        }
        let mut k = word + 4;
        while carry != 0 {
            let s = acc[k] + carry;
            acc[k] = s & 0xffff_ffff;
            carry = s >> 32;
            k += 1;
        }
    }
    match (pos_inf, neg_inf) {
        (true, true) => return f64::NAN,
        (true, false) => return f64::INFINITY,
        (false, true) => return f64::NEG_INFINITY,
        _ => {}
    }
    let cmp = (0..W).rev().map(|k| pos[k].cmp(&neg[k])).find(|o| o.is_ne());
    let (big, small, sign) = match cmp {
        None => return 0.0,
        Some(std::cmp::Ordering::Greater) => (pos, neg, 1.0),
        _ => (neg, pos, -1.0),
    };
    let mut mag = vec![0u64; W];
    let mut borrow = 0i64;
    for k in 0..W {
        let d = big[k] as i64 - small[k] as i64 - borrow;
        borrow = (d < 0) as i64;
        mag[k] = (d + if d < 0 { 1 << 32 } else { 0 }) as u64;
    }
    let top = (0..W).rev().find(|&k| mag[k] != 0).unwrap();
    let h = top * 32 + 63 - mag[top].leading_zeros() as usize;
    let bit = |i: usize| (mag[i / 32] >> (i % 32)) & 1;
    if h < 64 {
        let v = (mag[0] | mag[1] << 32) as f64; // below 2^53 units: exact; else rounded once
        return sign * v * 2f64.powi(-1074 + 1000) * 2f64.powi(-1000);
    }
    let low = h - 63;
    let mut t: u64 = 0;
    for i in (low..=h).rev() {
        t = (t << 1) | bit(i);
    }
    if (0..low).any(|i| bit(i) == 1) {
        t |= 1;
    }
    // t < 2^64 with the sticky bit at the bottom: the conversion rounds correctly; the scale
    // is a power of two applied in two exact steps (the result is normal here).
    let v = t as f64;
    let scale = low as i32 - 1074;
    sign * v * 2f64.powi(scale / 2) * 2f64.powi(scale - scale / 2)
}

/// Float sums may differ from the reference's left-to-right f64 sum by rounding only.
fn close(a: f64, b: f64, magnitude: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-12 * magnitude.max(1e-300)
}

/// Every op, with and without skip_nan (and exact for float sums), against the reference.
pub fn check_every_op<T: Gen>(backend: &Backend, xs: &[T], what: &str) {
    let mid = xs.get(xs.len() / 2).map_or(0.0, |x| x.to_f64());
    let ops = [
        ReduceOp::Sum,
        ReduceOp::Mean,
        ReduceOp::Min,
        ReduceOp::Max,
        ReduceOp::MinMax,
        ReduceOp::ArgMin,
        ReduceOp::ArgMax,
        ReduceOp::Count(Compare::new(CmpOp::Lt, mid)),
        ReduceOp::Count(Compare::new(CmpOp::Ge, mid)),
        ReduceOp::Count(Compare::new(CmpOp::Eq, mid)),
        ReduceOp::Count(Compare::new(CmpOp::Ne, 0.5)),
    ];
    let magnitude: f64 = xs.iter().map(|x| x.to_f64().abs()).filter(|x| !x.is_nan()).sum();
    for op in ops {
        for skip_nan in [false, true] {
            for exact in [false, true] {
                if exact && !(T::TYPE.is_float() && matches!(op, ReduceOp::Sum | ReduceOp::Mean)) {
                    continue;
                }
                let options = ReduceOptions { skip_nan, exact };
                let want = reference::reduce(xs, op, options);
                let got = backend.reduce(xs, op, options);
                let ctx = format!("{what}: {} {op:?} {options:?} n={}", T::TYPE, xs.len());
                match (want, got) {
                    (Err(w), Err(g)) => assert_eq!(w.to_string(), g.to_string(), "{ctx}"),
                    (Ok(w), Ok(g)) => compare(&w, &g, exact, magnitude, &ctx),
                    (w, g) => panic!("{ctx}: reference {w:?}, backend {g:?}"),
                }
            }
        }
    }
}

fn compare(w: &Reduction, g: &Reduction, exact: bool, magnitude: f64, ctx: &str) {
    let float_sum = w.dtype.is_float() && matches!(w.op, ReduceOp::Sum | ReduceOp::Mean) && !exact;
    if float_sum {
        let m = if w.op == ReduceOp::Mean { magnitude / w.n.max(1) as f64 } else { magnitude };
        assert!(close(w.value, g.value, m), "{ctx}: reference {} backend {}", w.value, g.value);
        assert_eq!(w.nan_skipped, g.nan_skipped, "{ctx}");
    } else {
        assert!(w.same_result(g), "{ctx}:\nreference {w:?}\nbackend   {g:?}");
    }
}

/// Adversarial inputs for the exact sum.
pub fn adversarial() -> Vec<(&'static str, Vec<f64>)> {
    let mut r = Rng(7);
    let small: Vec<f64> = (0..1000).map(|_| f64::gen(&mut r)).collect();
    let mut huge = vec![1e308, 1e308];
    huge.extend(&small);
    huge.extend([-1e308, -1e308, 1e308]);
    let subnormals: Vec<f64> =
        (0..3000).map(|i| f64::from_bits(1 + (i * 7919) % 100_000) * if i % 3 == 0 { -1.0 } else { 1.0 }).collect();
    let alternating: Vec<f64> = (0..5001).map(|i| if i % 2 == 0 { 1.0 + i as f64 * 1e-10 } else { -1.0 }).collect();
    let mut cancel: Vec<f64> = small.iter().flat_map(|&x| [x, 1e200, -x, -1e200]).collect();
    cancel.reverse();
    let two53 = 2f64.powi(53);
    let halfway = vec![two53, 1.0, 2f64.powi(-60), -2f64.powi(-60)];
    let halfway_up = vec![two53, 3.0];
    let halfway_sticky = vec![two53, 1.0, 5e-324];
    let max = vec![f64::MAX, f64::MAX, -f64::MAX];
    let overflow = vec![f64::MAX, f64::MAX * 2f64.powi(-53)];
    let infs = vec![1.0, f64::INFINITY, 2.0];
    let both_infs = vec![f64::NEG_INFINITY, 1.0, f64::INFINITY];
    vec![
        ("huge and small", huge),
        ("subnormals", subnormals),
        ("alternating signs", alternating),
        ("cancelling to zero", cancel),
        ("halfway to even", halfway),
        ("halfway up", halfway_up),
        ("halfway with a sticky bit", halfway_sticky),
        ("near the top of the range", max),
        ("rounding up to infinity", overflow),
        ("an infinity", infs),
        ("both infinities", both_infs),
    ]
}

/// The exact sum of every adversarial input, in f64 and (where representable) in f32, against
/// the independent big-integer sum.
pub fn check_adversarial(backend: &Backend) {
    for (what, xs) in adversarial() {
        let want = big_exact_sum(&xs);
        let got = backend.sum_exact(&xs).unwrap();
        assert!(want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()), "{what}: {want:e} vs {got:e}");
        let f: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
        let want32 = big_exact_sum(&f.iter().map(|&x| x as f64).collect::<Vec<_>>());
        let got32 = backend.sum_exact(&f).unwrap();
        assert!(
            want32.to_bits() == got32.to_bits() || (want32.is_nan() && got32.is_nan()),
            "{what} (f32): {want32:e} vs {got32:e}"
        );
    }
}

/// Floats whose exact sum is small and exactly an f64, built so that every element's bits
/// count: pairs `x` and `-(x - r ulp)` (`r < 2^10`, mantissas otherwise random, both signs),
/// each `x` in one of the `width` binades from biased exponent `e0` on (subnormals too where
/// `e0` is 1), a zero where `n` is odd, then shuffled so that pairs straddle vectors and
/// threads. The sum is a multiple of the lowest binade's ulp below 2^(width + 10 + log2 n)
/// of them: exact in an f64, so the rounded result shows an error in any element's split.
pub trait Band: Sized + Copy {
    const MANTISSA_BITS: u32;
    const SIGN: u64;
    const MAX_EXPONENT: u64;
    fn from_raw(bits: u64) -> Self;
    fn as_f64(self) -> f64;
}
impl Band for f32 {
    const MANTISSA_BITS: u32 = 23;
    const SIGN: u64 = 1 << 31;
    const MAX_EXPONENT: u64 = 254;
    fn from_raw(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
    fn as_f64(self) -> f64 {
        self as f64
    }
}
impl Band for f64 {
    const MANTISSA_BITS: u32 = 52;
    const SIGN: u64 = 1 << 63;
    const MAX_EXPONENT: u64 = 2046;
    fn from_raw(bits: u64) -> Self {
        f64::from_bits(bits)
    }
    fn as_f64(self) -> f64 {
        self
    }
}

pub fn exact_band<T: Band>(e0: u64, width: u64, n: usize, seed: u64) -> Vec<T> {
    let mut r = Rng(seed);
    let mbits = T::MANTISSA_BITS;
    let mant_mask = (1u64 << mbits) - 1;
    let sign_bit = T::SIGN;
    let mut xs = Vec::with_capacity(n);
    while xs.len() + 2 <= n {
        let b = r.next();
        let span = width.min(T::MAX_EXPONENT + 1 - e0);
        // Biased exponent e0 - 1 (0: subnormals) only from the lowest band.
        let e = if e0 == 1 && b.is_multiple_of(8) { 0 } else { e0 + (b >> 8) % span };
        let m = r.next() & mant_mask;
        let x = ((b & 1) * sign_bit) | (e << mbits) | m;
        let d = (r.next() % 1024).min(m);
        xs.push(T::from_raw(x));
        xs.push(T::from_raw((x - d) ^ sign_bit));
    }
    while xs.len() < n {
        xs.push(T::from_raw(if xs.len() % 2 == 0 { 0 } else { sign_bit }));
    }
    for i in (1..xs.len()).rev() {
        xs.swap(i, (r.next() % (i as u64 + 1)) as usize);
    }
    xs
}

/// The exact sums of `exact_band`s from every `step`th biased exponent on (bands of four
/// binades; with a step of 3 every binade, and some bands straddle a digit of the kernels) by
/// `sum`, against the independent big-integer sum; `n` elements a band.
pub fn check_exact_bands<T: Band>(n: usize, step: usize, mut sum: impl FnMut(&[T], std::ops::Range<usize>) -> f64) {
    let starts: Vec<u64> = (1..=T::MAX_EXPONENT).step_by(step).collect();
    let all: Vec<T> = starts.iter().flat_map(|&e0| exact_band::<T>(e0, 4, n, e0)).collect();
    for (k, &e0) in starts.iter().enumerate() {
        let band = &all[k * n..(k + 1) * n];
        let want = big_exact_sum(&band.iter().map(|x| x.as_f64()).collect::<Vec<_>>());
        let got = sum(&all, k * n..(k + 1) * n);
        assert_eq!(got.to_bits(), want.to_bits(), "band from biased exponent {e0}: {got:e} vs {want:e}");
    }
}
