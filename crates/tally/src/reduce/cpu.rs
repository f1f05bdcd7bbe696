//! The CPU backend: rayon over fixed-size chunks (the same chunks whatever the thread count),
//! each reduced on its own, the chunk results combined in chunk order. Results are therefore
//! the same on every run and machine; exact sums are the same as every other backend's.

use super::element::CountBounds;
use super::exact::ExactSum;
use super::partial::Partial;
use super::{ReduceElement, ReduceOp, ReduceOptions, Reduction};
use crate::error::Result;
use rayon::prelude::*;

/// Elements per chunk: a fixed split, so that float sums do not depend on the thread count.
pub const CHUNK: usize = 1 << 16;

/// Independent f64 accumulators per chunk (the adds of one lane depend on each other; eight
/// lanes keep the adder busy and let the compiler vectorise).
const LANES: usize = 8;

/// `op` over `xs` on the rayon pool.
pub fn reduce<T: ReduceElement>(xs: &[T], op: ReduceOp, options: ReduceOptions) -> Result<Reduction> {
    partial(xs, op, options, 0).finish(op, options, xs.len() as u64, "cpu")
}

/// The state `op` reaches over `xs`, whose first element has index `first` in the whole input.
pub(crate) fn partial<T: ReduceElement>(xs: &[T], op: ReduceOp, options: ReduceOptions, first: u64) -> Partial<T> {
    match op {
        ReduceOp::Sum | ReduceOp::Mean => sum(xs, options),
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
            Partial::Count { count, nan }
        }
        _ => Partial::Extrema(
            xs.par_chunks(CHUNK)
                .enumerate()
                .map(|(k, c)| Extrema::of(c, first + (k * CHUNK) as u64, options.skip_nan))
                .collect::<Vec<_>>()
                .into_iter()
                .fold(Extrema::empty(), |a, b| a.merge(b)),
        ),
    }
}

/// The sum of `xs`: exact where asked or an integer.
fn sum<T: ReduceElement>(xs: &[T], options: ReduceOptions) -> Partial<T> {
    if !T::TYPE.is_float() {
        return Partial::IntSum(xs.par_chunks(CHUNK).map(|c| c.iter().map(|x| x.to_i128()).sum::<i128>()).sum());
    }
    let skip = options.skip_nan;
    if options.exact {
        return Partial::Exact(Box::new(
            xs.par_chunks(CHUNK)
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
                }),
        ));
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
    Partial::FloatSum { sum: total, nan }
}

/// Min and max of a range with the indices of their first occurrences (`u64::MAX`: none).
#[derive(Clone, Copy)]
pub(crate) struct Extrema<T> {
    pub(crate) min: T,
    pub(crate) max: T,
    pub(crate) imin: u64,
    pub(crate) imax: u64,
    pub(crate) nan: u64,
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
    pub(crate) fn empty() -> Self {
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
    pub(crate) fn merge(mut self, b: Self) -> Self {
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
