//! Every reduction as a plain sequential loop: slow, obvious, and the yardstick the tests hold
//! the fast paths against. Exact float sums use Shewchuk's algorithm (`math.fsum`'s), which
//! shares nothing with [`super::ExactSum`]; like Python's it is only good while no partial sum
//! overflows (Python raises there).

use super::{empty_error, ReduceElement, ReduceOp, ReduceOptions, Reduction};
use crate::error::Result;

/// `x op value`, compared exactly (integers as integers, floats as f64).
pub fn passes<T: ReduceElement>(x: T, cmp: super::Compare) -> bool {
    use super::CmpOp::*;
    use std::cmp::Ordering;
    let t = cmp.value;
    let ord: Option<Ordering> = if T::TYPE.is_float() {
        x.to_f64().partial_cmp(&t)
    } else if t.is_nan() {
        None
    } else if t.is_infinite() {
        Some(if t > 0.0 { Ordering::Less } else { Ordering::Greater })
    } else {
        // Exact: compare the integer with floor(t), then the fraction.
        let fl = t.floor();
        let xi = x.to_i128();
        if fl >= 1.7e38 {
            Some(Ordering::Less)
        } else if fl <= -1.7e38 {
            Some(Ordering::Greater)
        } else {
            match xi.cmp(&(fl as i128)) {
                Ordering::Equal if t != fl => Some(Ordering::Less),
                o => Some(o),
            }
        }
    };
    match (cmp.op, ord) {
        (Ne, None) => true,
        (_, None) => false,
        (Lt, Some(o)) => o == Ordering::Less,
        (Le, Some(o)) => o != Ordering::Greater,
        (Gt, Some(o)) => o == Ordering::Greater,
        (Ge, Some(o)) => o != Ordering::Less,
        (Eq, Some(o)) => o == Ordering::Equal,
        (Ne, Some(o)) => o != Ordering::Equal,
    }
}

/// Shewchuk's exactly rounded sum (Python's `math.fsum`, half-even correction included).
/// Non-finite inputs follow IEEE; a partial that overflows gives an infinity or NaN.
pub fn fsum(xs: impl IntoIterator<Item = f64>) -> f64 {
    let mut partials: Vec<f64> = Vec::new();
    let mut special = 0.0f64;
    let mut any_special = false;
    for mut x in xs {
        if !x.is_finite() {
            special += x;
            any_special = true;
            continue;
        }
        let mut i = 0;
        for j in 0..partials.len() {
            let mut y = partials[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                partials[i] = lo;
                i += 1;
            }
            x = hi;
        }
        partials.truncate(i);
        partials.push(x);
    }
    if any_special {
        return special;
    }
    let mut n = partials.len();
    let mut hi = 0.0;
    if n > 0 {
        n -= 1;
        hi = partials[n];
        let mut lo = 0.0;
        while n > 0 {
            let x = hi;
            n -= 1;
            let y = partials[n];
            hi = x + y;
            let yr = hi - x;
            lo = y - yr;
            if lo != 0.0 {
                break;
            }
        }
        if n > 0 && ((lo < 0.0 && partials[n - 1] < 0.0) || (lo > 0.0 && partials[n - 1] > 0.0)) {
            let y = lo * 2.0;
            let x = hi + y;
            let yr = x - hi;
            if y == yr {
                hi = x;
            }
        }
    }
    hi
}

/// `a` precedes `b` as a min (NaN first where NaN propagates).
fn before_min<T: ReduceElement>(a: T, b: T) -> bool {
    (a.is_nan() && !b.is_nan()) || a < b
}

/// `a` precedes `b` as a max (NaN first where NaN propagates).
fn before_max<T: ReduceElement>(a: T, b: T) -> bool {
    (a.is_nan() && !b.is_nan()) || a > b
}

/// `op` over `xs`, one element after the other.
pub fn reduce<T: ReduceElement>(xs: &[T], op: ReduceOp, options: ReduceOptions) -> Result<Reduction> {
    let mut r = Reduction::new(op, T::TYPE, xs.len() as u64, "reference");
    let nan = xs.iter().filter(|x| x.is_nan()).count() as u64;
    let skip = options.skip_nan && nan > 0;
    if options.skip_nan {
        r.nan_skipped = nan;
    }
    let kept: Vec<(usize, T)> = xs.iter().copied().enumerate().filter(|(_, x)| !(skip && x.is_nan())).collect();
    if op.needs_elements() && xs.is_empty() {
        return Err(empty_error(&op));
    }
    let float = T::TYPE.is_float();
    let sum = |r: &mut Reduction| {
        if float {
            if options.exact {
                r.exact_sum = true;
                fsum(kept.iter().map(|(_, x)| x.to_f64()))
            } else {
                kept.iter().map(|(_, x)| x.to_f64()).sum::<f64>()
            }
        } else {
            let s: i128 = kept.iter().map(|(_, x)| x.to_i128()).sum();
            r.exact = Some(s);
            s as f64
        }
    };
    let arg = |better: fn(T, T) -> bool| -> Option<(usize, T)> {
        let mut best: Option<(usize, T)> = None;
        for &(i, x) in &kept {
            if best.is_none_or(|(_, b)| better(x, b)) {
                best = Some((i, x));
            }
        }
        best
    };
    let set = |r: &mut Reduction, x: Option<(usize, T)>, max: bool| {
        let (v, e, i) = match x {
            Some((i, x)) => (x.to_f64(), (!float).then(|| x.to_i128()), Some(i as u64)),
            None => (f64::NAN, None, None),
        };
        if max {
            (r.max, r.max_exact) = (Some(v), e);
        } else {
            (r.value, r.exact, r.index) = (v, e, i);
        }
    };
    match op {
        ReduceOp::Sum => r.value = sum(&mut r),
        ReduceOp::Mean => {
            let s = sum(&mut r);
            r.exact = None;
            r.value = s / kept.len() as f64;
        }
        ReduceOp::Min => set(&mut r, arg(before_min), false),
        ReduceOp::Max => set(&mut r, arg(before_max), false),
        ReduceOp::MinMax => {
            set(&mut r, arg(before_min), false);
            set(&mut r, arg(before_max), true);
        }
        ReduceOp::ArgMin | ReduceOp::ArgMax => {
            let best = arg(if op == ReduceOp::ArgMin { before_min } else { before_max });
            let Some((i, x)) = best else { return Err(super::all_nan_error(&op)) };
            r.index = Some(i as u64);
            r.value = x.to_f64();
            r.exact = (!float).then(|| x.to_i128());
        }
        ReduceOp::Count(cmp) => {
            let c = kept.iter().filter(|(_, x)| passes(*x, cmp)).count() as u64;
            r.count = Some(c);
            r.value = c as f64;
        }
    }
    if matches!(op, ReduceOp::Min | ReduceOp::Max | ReduceOp::MinMax) {
        r.index = None;
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fsum_matches_known_values() {
        assert_eq!(fsum([0.1; 10]), 1.0);
        assert_eq!(fsum([1e100, 1.0, -1e100, 1e-100, 1e50, -1.0, -1e50]), 1e-100);
        assert_eq!(fsum([2f64.powi(53), 1.0]), 2f64.powi(53));
        assert_eq!(fsum([2f64.powi(53), 1.0, 1e-300]), 2f64.powi(53) + 2.0);
    }

    #[test]
    fn integer_comparisons_are_exact() {
        let c = |op, v| super::super::Compare::new(op, v);
        use super::super::CmpOp::*;
        assert!(passes(u64::MAX, c(Gt, 1.8446744073709552e19 - 4096.0)));
        assert!(!passes(u64::MAX, c(Ge, 1.8446744073709552e19)));
        assert!(passes(3i32, c(Lt, 3.5)));
        assert!(!passes(4i32, c(Lt, 3.5)));
        assert!(passes(3i32, c(Ne, 3.5)));
        assert!(!passes(3i32, c(Eq, f64::NAN)));
        assert!(passes(f32::NAN, c(Ne, 1.0)));
    }
}
