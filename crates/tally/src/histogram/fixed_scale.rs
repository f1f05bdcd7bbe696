//! The fixed-point scale of weighted sums: each weight `w` is counted as the integer
//! `round_half_even(w * 2^k)`, with `k` chosen so that no sum can overflow (docs/WEIGHTED.md).

use super::weighted::Weight;
use crate::error::{Error, Result};
use rayon::prelude::*;
use serde::Serialize;

/// The fixed-point scale 2^k of one histogram, and what it guarantees.
///
/// With `n` weights, `n <= 2^b`, and the largest |weight| `M < 2^e`:
/// `k = min(62 - b - e, 1023)`. Every converted weight is at most `2^(e+k)` in magnitude, so any
/// sum of at most `n` of them is at most `2^(b+e+k) <= 2^62`: no sum overflows an i64. `k >= 0`
/// (integer weights exact) whenever `n * 2^e <= 2^62`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FixedScale {
    /// k: a weight w is counted as round_half_even(w * 2^k).
    pub log2: i32,
    /// The largest |weight|.
    pub max_abs_weight: f64,
    /// Weights the bound was computed for.
    pub samples: u64,
}

/// 2^e as an f64, for any e in [-1074, 1023].
pub(crate) fn pow2(e: i32) -> f64 {
    assert!((-1074..=1023).contains(&e), "2^{e} is not an f64");
    if e >= -1022 {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (e + 1074))
    }
}

/// The smallest e with |m| < 2^e, for finite m != 0.
fn exponent_above(m: f64) -> i32 {
    let m = m.abs();
    let bits = m.to_bits();
    let biased = (bits >> 52) as i32;
    if biased == 0 {
        // Subnormal: m = mantissa * 2^-1074, mantissa < 2^52.
        let mant = bits & ((1u64 << 52) - 1);
        -1074 + (64 - mant.leading_zeros() as i32)
    } else {
        biased - 1023 + 1
    }
}

impl FixedScale {
    /// The scale for `samples` weights whose largest magnitude is `max_abs_weight` (finite).
    pub fn new(max_abs_weight: f64, samples: u64) -> FixedScale {
        let b = if samples <= 1 { 0 } else { 64 - (samples - 1).leading_zeros() as i32 };
        let log2 = if max_abs_weight == 0.0 { 0 } else { (62 - b - exponent_above(max_abs_weight)).min(1023) };
        FixedScale { log2, max_abs_weight: max_abs_weight.abs(), samples }
    }

    /// The largest magnitude of weights whose least is `min` and greatest `max`; None where
    /// either is not finite (a NaN or an infinity among them).
    pub(crate) fn max_abs(min: f64, max: f64) -> Option<f64> {
        (min.is_finite() && max.is_finite()).then(|| min.abs().max(max.abs()))
    }

    /// The scale for `samples` weights from their least and greatest; None where either is not
    /// finite.
    pub fn from_extrema(min: f64, max: f64, samples: u64) -> Option<FixedScale> {
        Self::max_abs(min, max).map(|m| FixedScale::new(m, samples))
    }

    /// The scale for these weights; NaN and infinite weights are refused.
    pub fn of<W: Weight>(weights: &[W]) -> Result<FixedScale> {
        let max = weights
            .par_iter()
            .with_min_len(1 << 16)
            .map(|w| w.to_f64().abs())
            .reduce(|| 0.0, |a, b| if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) });
        if !max.is_finite() {
            let i = weights.iter().position(|w| !w.to_f64().is_finite()).unwrap_or(0);
            return Err(Error::invalid(format!("weight {i} is {:?}; weights must be finite", weights[i])));
        }
        Ok(FixedScale::new(max, weights.len() as u64))
    }

    /// 2^k, the factor a weight is multiplied by before rounding.
    pub fn scale(&self) -> f64 {
        pow2(self.log2)
    }

    /// One weight in fixed point: exact product (a power of two), one rounding, half to even.
    #[inline(always)]
    pub fn to_fixed(&self, w: f64, scale: f64) -> i64 {
        (w * scale).round_ties_even() as i64
    }

    /// A fixed-point sum as f64: one rounding (the i64 to f64 conversion), then an exact power
    /// of two (unless the result is subnormal).
    pub fn to_f64(&self, sum: i64) -> f64 {
        let x = sum as f64;
        let e = -self.log2;
        if (-1022..=1023).contains(&e) {
            x * pow2(e)
        } else {
            let half = e / 2;
            x * pow2(half) * pow2(e - half)
        }
    }

    /// Bound on |result - exact sum| per bin from converting each weight: half a unit of 2^-k
    /// per sample in the bin. This is the bound for a bin holding all `samples`; the final
    /// conversion adds at most 2^-53 relative.
    pub fn conversion_bound(&self) -> f64 {
        self.samples as f64 * 2f64.powi(-(self.log2 + 1))
    }

    /// The bound for a bin holding `count` samples (plus 2^-53 relative).
    pub fn bound_for(&self, count: u64) -> f64 {
        count as f64 * 2f64.powi(-(self.log2 + 1))
    }
}
