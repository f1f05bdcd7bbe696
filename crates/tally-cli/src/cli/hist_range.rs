//! The default range of `hist` and `hist2d` bins: computed from the data's extent (a [`Span`]),
//! which a loaded array gives at once and a streamed file by one pass before the counting.

use anyhow::bail;
use tally::histogram::short;
use tally::{Bins, DType, Sample};

/// The extent of the data that a default range must hold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Span {
    /// No values (or, for floats, none finite).
    Empty,
    /// Integers: the least and the greatest, exactly.
    Ints(i64, i64),
    /// Floats: the least and the greatest finite value.
    Floats(f64, f64),
}

impl Span {
    /// The extent of `v`.
    pub fn of<T: Sample>(v: &[T]) -> Span {
        if T::DTYPE.is_float() {
            let mut it = v.iter().map(|x| x.to_f64()).filter(|x| x.is_finite());
            let Some(first) = it.next() else { return Span::Empty };
            let (lo, hi) = it.fold((first, first), |(lo, hi), x| (lo.min(x), hi.max(x)));
            return Span::Floats(lo, hi);
        }
        let mut it = v.iter().map(|x| x.to_i64().unwrap_or(0));
        let Some(first) = it.next() else { return Span::Empty };
        let (lo, hi) = it.fold((first, first), |(lo, hi), x| (lo.min(x), hi.max(x)));
        Span::Ints(lo, hi)
    }

    /// The extent of two parts together.
    pub fn join(self, other: Span) -> Span {
        match (self, other) {
            (Span::Empty, s) | (s, Span::Empty) => s,
            (Span::Ints(a, b), Span::Ints(c, d)) => Span::Ints(a.min(c), b.max(d)),
            (a, b) => {
                let ((a0, a1), (b0, b1)) = (a.as_f64().unwrap_or_default(), b.as_f64().unwrap_or_default());
                Span::Floats(a0.min(b0), a1.max(b1))
            }
        }
    }

    /// The least and greatest value as f64 (rounded for i64 beyond 2^53).
    fn as_f64(self) -> Option<(f64, f64)> {
        match self {
            Span::Empty => None,
            Span::Ints(lo, hi) => Some((lo as f64, hi as f64)),
            Span::Floats(lo, hi) => Some((lo, hi)),
        }
    }
}

/// Even bins over the default range of `v`, or an error that says the range came from the data.
pub fn default_bins_of<T: Sample>(v: &[T], bins: u32) -> anyhow::Result<Bins> {
    bins_for_span(T::DTYPE, Span::of(v), bins)
}

/// Even bins over the default range of data of `dtype` and extent `span`, or an error that says
/// the range came from the data.
pub fn bins_for_span(dtype: DType, span: Span, bins: u32) -> anyhow::Result<Bins> {
    let (lo, hi) = default_range(dtype, span, bins);
    let b = Bins::even(bins, lo, hi);
    if let Err(e) = b.validate() {
        let (min, max) = span.as_f64().unwrap_or((lo, hi));
        let e = e.to_string();
        let e = e.strip_prefix("invalid argument: ").unwrap_or(&e);
        let e = e.split("; give").next().unwrap_or(e);
        bail!(
            "no default range holds this data (its finite values run from {} to {}): {e}; give --range LO,HI or --edges",
            short(min),
            short(max)
        );
    }
    Ok(b)
}

/// A half-open range that holds every finite sample, computed exactly, with `bins` distinct
/// edges: [0, 256) for 8-bit data; integers: the largest f64 at most the minimum to the smallest
/// f64 above the maximum (both exact integers); floats: [min, next float above max), widened
/// where it is too narrow for distinct bin edges ([v - 0.5, v + 0.5) for constant data, as numpy).
pub fn default_range(dtype: DType, span: Span, bins: u32) -> (f64, f64) {
    if dtype == DType::U8 {
        return (0.0, 256.0);
    }
    let (min, max) = match span {
        Span::Empty => return (0.0, 1.0),
        Span::Ints(min, max) => {
            let mut lo = min as f64;
            if lo as i128 > min as i128 {
                lo = lo.next_down();
            }
            let m = max as f64;
            let mut hi = m + 1.0;
            if hi <= m {
                hi = m.next_up();
            }
            return (lo, hi);
        }
        Span::Floats(min, max) => (min, max),
    };
    let (lo, mut hi) = if min == max { (min - 0.5, max + 0.5) } else { (min, max.next_up()) };
    // Distinct edges: each bin at least 8 ulps of the larger bound wide.
    let bins = bins.max(1) as f64;
    loop {
        let m = lo.abs().max(hi.abs());
        let ulp = m.next_up() - m;
        if !hi.is_finite() || (hi - lo) / bins >= 8.0 * ulp {
            return (lo, hi);
        }
        hi = lo + (hi - lo) * 2.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_parts_span_the_whole() {
        let v = [3.0f64, f64::NAN, -2.5, f64::INFINITY, 7.25, 1.0];
        for cut in 0..=v.len() {
            assert_eq!(Span::of(&v[..cut]).join(Span::of(&v[cut..])), Span::of(&v[..]));
        }
        let w = [5i64, i64::MIN, 9, i64::MAX, 0];
        for cut in 0..=w.len() {
            assert_eq!(Span::of(&w[..cut]).join(Span::of(&w[cut..])), Span::Ints(i64::MIN, i64::MAX));
        }
        assert_eq!(Span::of::<f32>(&[f32::NAN]), Span::Empty);
    }
}
