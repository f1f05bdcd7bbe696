//! The CPU backend: rayon over fixed-size chunks (the same chunks whatever the thread count),
//! each reduced on its own, the chunk results combined in chunk order. Results are therefore
//! the same on every run and machine; exact sums are the same as every other backend's.

use super::element::CountBounds;
use super::exact::ExactSum;
use super::{all_nan_error, empty_error, ReduceElement, ReduceOp, ReduceOptions, Reduction};
use crate::error::Result;
use rayon::prelude::*;

/// Elements per chunk: a fixed split, so that float sums do not depend on the thread count.
pub const CHUNK: usize = 1 << 16;

/// Independent f64 accumulators per chunk (the adds of one lane depend on each other; eight
/// lanes keep the adder busy and let the compiler vectorise).
const LANES: usize = 8;

/// `op` over `xs` on the rayon pool.
pub fn reduce<T: ReduceElement>(xs: &[T], op: ReduceOp, options: ReduceOptions) -> Result<Reduction> {
    let n = xs.len() as u64;
    let mut r = Reduction::new(op, T::TYPE, n, "cpu");
    if op.needs_elements() && xs.is_empty() {
        return Err(empty_error(&op));
    }
    match op {
        ReduceOp::Sum | ReduceOp::Mean => {
            let (value, kept) = sum(xs, options, &mut r);
            r.value = if op == ReduceOp::Mean { value / kept as f64 } else { value };
            if op == ReduceOp::Mean {
                r.exact = None;
            }
        }
        ReduceOp::Count(cmp) => {
            let bounds = CountBounds::new(cmp, T::TYPE);
            let skip = options.skip_nan;
            let (count, nan): (u64, u64) = xs
                .par_chunks(CHUNK)
                .map(|c| {
                    let count = c.iter().filter(|&&x| bounds.passes(x) && !(skip && x.is_nan())).count() as u64;
                    let nan = if skip { c.iter().filter(|x| x.is_nan()).count() as u64 } else { 0 };
                    (count, nan)
                })
                .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
            r.count = Some(count);
            r.value = count as f64;
            r.nan_skipped = nan;
        }
        _ => {
            let e = xs
                .par_chunks(CHUNK)
                .enumerate()
                .map(|(k, c)| Extrema::of(c, (k * CHUNK) as u64, options.skip_nan))
                .collect::<Vec<_>>()
                .into_iter()
                .fold(Extrema::empty(), |a, b| a.merge(b));
            r.nan_skipped = e.nan;
            let float = T::TYPE.is_float();
            let value = |x: T, i: u64| {
                if i == u64::MAX {
                    (f64::NAN, None)
                } else {
                    (x.to_f64(), (!float).then(|| x.to_i128()))
                }
            };
            match op {
                ReduceOp::Min | ReduceOp::MinMax => {
                    (r.value, r.exact) = value(e.min, e.imin);
                    if op == ReduceOp::MinMax {
                        let (v, x) = value(e.max, e.imax);
                        (r.max, r.max_exact) = (Some(v), x);
                    }
                }
                ReduceOp::Max => (r.value, r.exact) = value(e.max, e.imax),
                ReduceOp::ArgMin | ReduceOp::ArgMax => {
                    let (x, i) = if op == ReduceOp::ArgMin { (e.min, e.imin) } else { (e.max, e.imax) };
                    if i == u64::MAX {
                        return Err(all_nan_error(&op));
                    }
                    (r.value, r.exact) = value(x, i);
                    r.index = Some(i);
                }
                _ => unreachable!(),
            }
        }
    }
    Ok(r)
}

/// The sum of `xs` (exact where asked or an integer) and the elements summed; fills the
/// reduction's exact and NaN fields.
fn sum<T: ReduceElement>(xs: &[T], options: ReduceOptions, r: &mut Reduction) -> (f64, u64) {
    let n = xs.len() as u64;
    if !T::TYPE.is_float() {
        let s: i128 = xs.par_chunks(CHUNK).map(|c| c.iter().map(|x| x.to_i128()).sum::<i128>()).sum();
        r.exact = Some(s);
        return (s as f64, n);
    }
    let skip = options.skip_nan;
    if options.exact {
        let total = xs
            .par_chunks(CHUNK)
            .map(|c| {
                let mut e = ExactSum::new();
                for &x in c {
                    e.add_f64(x.to_f64());
                }
                e
            })
            .reduce(ExactSum::new, |mut a, b| {
                a.merge(&b);
                a
            });
        let nan = total.nan_count();
        r.exact_sum = true;
        r.nan_skipped = if skip { nan } else { 0 };
        return (total.to_f64_ignoring_nan(skip), n - if skip { nan } else { 0 });
    }
    let partials: Vec<(f64, u64)> = xs
        .par_chunks(CHUNK)
        .map(|c| {
            let mut lanes = [0.0f64; LANES];
            let mut nan = 0u64;
            let mut body = c.chunks_exact(LANES);
            for v in &mut body {
                for (l, &x) in lanes.iter_mut().zip(v) {
                    let x = x.to_f64();
                    if skip {
                        nan += x.is_nan() as u64;
                        *l += if x.is_nan() { 0.0 } else { x };
                    } else {
                        *l += x;
                    }
                }
            }
            for (l, &x) in lanes.iter_mut().zip(body.remainder()) {
                let x = x.to_f64();
                if skip && x.is_nan() {
                    nan += 1;
                } else {
                    *l += x;
                }
            }
            (lanes.iter().sum::<f64>(), nan)
        })
        .collect();
    let (mut total, mut nan) = (0.0f64, 0u64);
    for (s, k) in partials {
        total += s;
        nan += k;
    }
    if skip {
        r.nan_skipped = nan;
    }
    (total, n - nan)
}

/// Min and max of a range with the indices of their first occurrences (`u64::MAX`: none).
#[derive(Clone, Copy)]
struct Extrema<T> {
    min: T,
    max: T,
    imin: u64,
    imax: u64,
    nan: u64,
}

#[inline(always)]
fn before_min<T: ReduceElement>(a: T, b: T) -> bool {
    (a.is_nan() && !b.is_nan()) || a < b
}

#[inline(always)]
fn before_max<T: ReduceElement>(a: T, b: T) -> bool {
    (a.is_nan() && !b.is_nan()) || a > b
}

impl<T: ReduceElement> Extrema<T> {
    fn empty() -> Self {
        Extrema { min: T::default(), max: T::default(), imin: u64::MAX, imax: u64::MAX, nan: 0 }
    }

    fn of(xs: &[T], first: u64, skip_nan: bool) -> Self {
        let mut e = Extrema::empty();
        for (i, &x) in xs.iter().enumerate() {
            if skip_nan && x.is_nan() {
                e.nan += 1;
                continue;
            }
            let i = first + i as u64;
            if e.imin == u64::MAX || before_min(x, e.min) {
                (e.min, e.imin) = (x, i);
            }
            if e.imax == u64::MAX || before_max(x, e.max) {
                (e.max, e.imax) = (x, i);
            }
        }
        e
    }

    /// `self` covers earlier indices than `b`: ties keep `self`'s.
    fn merge(mut self, b: Self) -> Self {
        if b.imin != u64::MAX && (self.imin == u64::MAX || before_min(b.min, self.min)) {
            (self.min, self.imin) = (b.min, b.imin);
        }
        if b.imax != u64::MAX && (self.imax == u64::MAX || before_max(b.max, self.max)) {
            (self.max, self.imax) = (b.max, b.imax);
        }
        self.nan += b.nan;
        self
    }
}

/// A caller's associative, commutative reduction.
pub fn custom<T: ReduceElement, F: Fn(T, T) -> T + Sync>(xs: &[T], identity: T, f: &F) -> T {
    let partials: Vec<T> = xs.par_chunks(CHUNK).map(|c| c.iter().fold(identity, |a, &x| f(a, x))).collect();
    partials.into_iter().fold(identity, f)
}
