//! The exact weighted histogram as a plain sequential loop: each bin's weights collected, then
//! summed with Shewchuk's algorithm (`reduce::reference::fsum`, which shares nothing with the
//! digits of [`crate::reduce::ExactSum`] that the backends use), NaN and infinities as IEEE says.

use super::reference::weighted_key;
use super::weighted::{Accumulation, Weight, WeightedHistogram, Weighting};
use super::HistogramSpec;
use crate::error::Result;
use crate::reduce::reference::fsum;
use crate::sample::Sample;

/// The correctly rounded exact sum of `ws`: NaN for a NaN or for +inf with -inf, an infinity for
/// infinities of one sign, and otherwise the exact sum rounded once (an infinity past the
/// largest f64; an exact zero is +0, as in the reductions' exact sums). fsum's partials would overflow for weights near f64::MAX, so where a weight
/// passes 2^1000 the sum is taken at 2^-64 scale, which is exact while every nonzero weight is at
/// least 2^-900 in magnitude (asserted: the reference refuses what it cannot state exactly).
pub fn exact_sum(ws: &[f64]) -> f64 {
    let (nan, pos, neg) = ws.iter().fold((false, false, false), |(n, p, m), &w| {
        (n || w.is_nan(), p || w == f64::INFINITY, m || w == f64::NEG_INFINITY)
    });
    if nan || (pos && neg) {
        return f64::NAN;
    }
    if pos || neg {
        return if pos { f64::INFINITY } else { f64::NEG_INFINITY };
    }
    if ws.iter().all(|w| w.abs() <= 2f64.powi(1000)) {
        return fsum(ws.iter().copied()) + 0.0;
    }
    assert!(
        ws.iter().all(|&w| w == 0.0 || w.abs() >= 2f64.powi(-900)),
        "the reference cannot sum weights beyond 2^1000 with weights below 2^-900 in one bin"
    );
    let scaled = fsum(ws.iter().map(|&w| w * 2f64.powi(-64)));
    scaled * 2f64.powi(64) + 0.0
}

/// The exact weighted 1-D histogram, sequentially.
pub fn histogram_weighted_exact<T: Sample, W: Weight>(
    samples: &[T],
    weights: &[W],
    spec: &HistogramSpec,
) -> Result<WeightedHistogram> {
    spec.validate()?;
    super::weighted::prepare(samples.len(), weights, Accumulation::Exact)?;
    let slots = spec.channels.slots();
    let nslots = spec.channels.selected.len();
    let bins = spec.bins.count();
    // Per slot: bins, then below, above, NaN.
    let stride = bins + 3;
    let mut keys: Vec<Vec<f64>> = vec![Vec::new(); nslots * stride];
    for (i, (&x, &w)) in samples.iter().zip(weights).enumerate() {
        if let Some(key) = weighted_key(spec, &slots, i, x) {
            keys[key].push(w.to_f64());
        }
    }
    let weighting = Weighting {
        accumulation: Accumulation::Exact,
        fixed: None,
        error_bound: Some(0.0),
        deterministic: true,
        shared_atomics: None,
    };
    Ok(super::reference::keyed_result(nslots, bins, |k| exact_sum(&keys[k]), |k| keys[k].len() as u64, weighting))
}
