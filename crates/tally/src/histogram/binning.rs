//! The binning rule, stated once.
//!
//! Even bins, integer samples, integral bounds with `(upper - lower) * bins < 2^63`: the exact
//! rational rule `bin = floor((x - lower) * bins / (upper - lower))` for `lower <= x < upper`.
//! Every other even-bin case converts the sample to f64 and computes
//! `floor(((x - lower) * bins) / (upper - lower))` with IEEE round-to-nearest in exactly that
//! order (subtract, multiply, divide; no fused multiply-add), clamped to the last bin; NaN is
//! counted as NaN, `x < lower` as below and `x >= upper` as above.
//! Custom edges: bin `i` holds `edges[i] <= x < edges[i+1]`, compared in f64.
//!
//! The CUDA kernels implement the same rule (`src/kernels/histogram.cu`); the fast integer path
//! there and here estimates the quotient in floating point and then corrects it with exact
//! integer products, so it never differs from the rational rule.

use super::{Bins, HistogramSpec};
use crate::sample::Sample;

/// The code of a sample below the first edge (bins are 0 and up).
pub const BELOW: i32 = -1;
/// The code of a sample at or above the last edge.
pub const ABOVE: i32 = -2;
/// The code of a NaN sample.
pub const NAN: i32 = -3;

/// Integer bounds for the exact rule, when it applies to these bins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntBounds {
    /// The range's lower bound, an integer.
    pub lower: i64,
    /// The range's upper bound (exclusive), an integer.
    pub upper: i64,
    /// `upper - lower`, with `range * bins < 2^63`.
    pub range: u64,
    /// How many bins.
    pub bins: u32,
}

/// Whether integer samples are binned by the exact rational rule under `bins`.
pub fn int_bounds(bins: &Bins) -> Option<IntBounds> {
    let Bins::Even { bins, lower, upper } = *bins else { return None };
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    let integral = |v: f64| v.fract() == 0.0 && (-TWO63..TWO63).contains(&v);
    if !integral(lower) || !integral(upper) {
        return None;
    }
    let (lo, hi) = (lower as i64, upper as i64);
    let range = (hi as i128 - lo as i128) as u128;
    if range == 0 || range * bins as u128 >= 1u128 << 63 {
        return None;
    }
    Some(IntBounds { lower: lo, upper: hi, range: range as u64, bins })
}

/// The binning rule prepared for the fast paths.
#[derive(Clone, Debug)]
pub enum BinRule {
    /// Exact integer arithmetic (integer samples, integral bounds).
    Int {
        /// The bounds.
        b: IntBounds,
        /// `bins / range`, the f64 estimate of the quotient that exact products then correct.
        scale: f64,
    },
    /// The f64 rule.
    Float {
        /// The range's lower bound.
        lower: f64,
        /// The range's upper bound (exclusive).
        upper: f64,
        /// `upper - lower`.
        range: f64,
        /// How many bins, as an f64.
        bins: f64,
        /// The last bin's index: where a quotient rounded up past the range is clamped to.
        last: u32,
    },
    /// Binary search over edges.
    Edges(Vec<f64>),
}

impl BinRule {
    /// The rule that bins samples of type `T` under `spec`: the exact integer rule for integer
    /// samples where [`int_bounds`] allows it, else the f64 rule or the edges.
    pub fn new<T: Sample>(spec: &HistogramSpec) -> BinRule {
        if T::DTYPE.is_float() {
            return Self::for_float(&spec.bins);
        }
        match int_bounds(&spec.bins) {
            Some(b) => BinRule::Int { b, scale: b.bins as f64 / b.range as f64 },
            None => Self::for_float(&spec.bins),
        }
    }

    fn for_float(bins: &Bins) -> BinRule {
        match bins {
            Bins::Even { bins, lower, upper } => BinRule::Float {
                lower: *lower,
                upper: *upper,
                range: upper - lower,
                bins: *bins as f64,
                last: bins - 1,
            },
            Bins::Edges(e) => BinRule::Edges(e.clone()),
        }
    }

    /// The bin of one sample, or BELOW / ABOVE / NAN.
    #[inline(always)]
    pub fn bin<T: Sample>(&self, x: T) -> i32 {
        match self {
            BinRule::Int { b, scale } => {
                // Integer samples only: to_i64 is Some.
                let v = x.to_i64().unwrap_or(0);
                if v < b.lower {
                    return BELOW;
                }
                if v >= b.upper {
                    return ABOVE;
                }
                int_quotient(v.wrapping_sub(b.lower) as u64, b.bins, b.range, *scale) as i32
            }
            BinRule::Float { lower, upper, range, bins, last } => {
                if x.is_nan() {
                    return NAN;
                }
                let v = x.to_f64();
                if v < *lower {
                    return BELOW;
                }
                if v >= *upper {
                    return ABOVE;
                }
                let q = (((v - lower) * bins) / range).floor();
                (q as u32).min(*last) as i32
            }
            BinRule::Edges(e) => {
                if x.is_nan() {
                    return NAN;
                }
                let v = x.to_f64();
                if v < e[0] {
                    return BELOW;
                }
                if v >= e[e.len() - 1] {
                    return ABOVE;
                }
                // Number of edges <= v, minus one, is the bin.
                (e.partition_point(|&edge| edge <= v) - 1) as i32
            }
        }
    }

    /// For 8-bit samples: the whole rule as a 256-entry table, so that binning is one lookup.
    pub fn lut8(&self) -> Vec<i32> {
        (0u32..256).map(|v| self.bin(v as u8)).collect()
    }
}

/// `floor(d * bins / range)` for `d < range`, exactly: a floating-point estimate corrected by
/// exact integer products (`d * bins < 2^63` by `int_bounds`).
#[inline(always)]
fn int_quotient(d: u64, bins: u32, range: u64, scale: f64) -> u64 {
    if range == bins as u64 {
        return d;
    }
    let target = d * bins as u64;
    let mut q = ((d as f64) * scale) as u64;
    if q >= bins as u64 {
        q = bins as u64 - 1;
    }
    while q > 0 && q * range > target {
        q -= 1;
    }
    while (q + 1) * range <= target {
        q += 1;
    }
    q
}
