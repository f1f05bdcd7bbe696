//! A reduction's state before its result: what a range of elements reduces to, combinable with
//! the state of the range after it. The CPU backend reduces through it, the CUDA plan decodes
//! its result words into it, and streamed reductions combine one per chunk; the integer sums,
//! exact sums, counts and extrema combine exactly, so a streamed result is the one-shot one.

use super::cpu::Extrema;
use super::exact::ExactSum;
use super::{all_nan_error, empty_error, ReduceElement, ReduceOp, ReduceOptions, Reduction};
use crate::error::{Error, Result};

/// What a range of elements reduces to.
#[derive(Clone)]
pub(crate) enum Partial<T> {
    /// An integer sum (or mean), exact.
    IntSum(i128),
    /// A float sum (or mean) accumulated in f64, and the NaNs skipped.
    FloatSum { sum: f64, nan: u64 },
    /// The exact float sum (or mean).
    Exact(Box<ExactSum>),
    /// Elements passing a comparison, and the NaNs skipped.
    Count { count: u64, nan: u64 },
    /// Min and max with the indices of their first occurrences.
    Extrema(Extrema<T>),
}

impl<T: ReduceElement> Partial<T> {
    /// The state of no elements for `op`.
    pub(crate) fn empty(op: ReduceOp, options: ReduceOptions) -> Self {
        match op {
            ReduceOp::Sum | ReduceOp::Mean if !T::TYPE.is_float() => Partial::IntSum(0),
            ReduceOp::Sum | ReduceOp::Mean if options.exact => Partial::Exact(Box::default()),
            ReduceOp::Sum | ReduceOp::Mean => Partial::FloatSum { sum: 0.0, nan: 0 },
            ReduceOp::Count(_) => Partial::Count { count: 0, nan: 0 },
            _ => Partial::Extrema(Extrema::empty()),
        }
    }

    /// Combines `self` with the state of the elements that follow it (ties of the extrema keep
    /// the earlier index).
    pub(crate) fn then(self, later: Partial<T>) -> Result<Self> {
        Ok(match (self, later) {
            (Partial::IntSum(a), Partial::IntSum(b)) => Partial::IntSum(
                a.checked_add(b).ok_or_else(|| Error::Overflow("an integer sum passed the range of i128".into()))?,
            ),
            (Partial::FloatSum { sum: a, nan: m }, Partial::FloatSum { sum: b, nan: n }) => {
                Partial::FloatSum { sum: a + b, nan: m + n }
            }
            (Partial::Exact(mut a), Partial::Exact(b)) => {
                a.merge(&b);
                Partial::Exact(a)
            }
            (Partial::Count { count: a, nan: m }, Partial::Count { count: b, nan: n }) => {
                Partial::Count { count: a + b, nan: m + n }
            }
            (Partial::Extrema(a), Partial::Extrema(b)) => Partial::Extrema(a.merge(b)),
            _ => return Err(Error::invalid("partial reductions of different kinds do not combine")),
        })
    }

    /// `self.then(later)` in place: a running total absorbs the next chunk's state.
    pub(crate) fn absorb(&mut self, later: Partial<T>) -> Result<()> {
        // A placeholder of no cost stands in while `then` consumes the state.
        *self = std::mem::replace(self, Partial::IntSum(0)).then(later)?;
        Ok(())
    }

    /// The result of `op` over the `n` elements this state covers.
    pub(crate) fn finish(
        self,
        op: ReduceOp,
        options: ReduceOptions,
        n: u64,
        backend: &'static str,
    ) -> Result<Reduction> {
        if op.needs_elements() && n == 0 {
            return Err(empty_error(&op));
        }
        let mut r = Reduction::new(op, T::TYPE, n, backend);
        let skipped = |nan: u64| if options.skip_nan { nan } else { 0 };
        let sum = |r: &mut Reduction, value: f64, kept: u64| {
            r.value = if op == ReduceOp::Mean { value / kept as f64 } else { value };
            if op == ReduceOp::Mean {
                r.exact = None;
            }
        };
        match self {
            Partial::IntSum(s) => {
                r.exact = Some(s);
                sum(&mut r, s as f64, n);
            }
            Partial::FloatSum { sum: s, nan } => {
                r.nan_skipped = skipped(nan);
                let kept = n - r.nan_skipped;
                sum(&mut r, s, kept);
            }
            Partial::Exact(e) => {
                r.exact_sum = true;
                r.nan_skipped = skipped(e.nan_count());
                let kept = n - r.nan_skipped;
                sum(&mut r, e.to_f64_ignoring_nan(options.skip_nan), kept);
            }
            Partial::Count { count, nan } => {
                r.count = Some(count);
                r.value = count as f64;
                r.nan_skipped = skipped(nan);
            }
            Partial::Extrema(e) => {
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
                    _ => return Err(Error::invalid(format!("{} is not an extremum", op.name()))),
                }
            }
        }
        Ok(r)
    }
}
