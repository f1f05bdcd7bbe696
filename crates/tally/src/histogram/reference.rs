//! The binning rule as a plain sequential loop: slow, obvious, and the yardstick for every
//! fast path. It shares nothing with them but the decision of which rule applies.
//!
//! The weighted and 2-D references state the fixed-point sums the same way: each weight rounded
//! to `round_half_even(w * 2^k)`, summed exactly in i128, converted once.

use super::binning::int_bounds;
use super::hist2d::{Histogram2d, Histogram2dSpec, Outliers2d, Pairs};
use super::weighted::{Accumulation, FixedScale, Weight, WeightedHistogram, Weighting};
use super::{Bins, Histogram, HistogramSpec, Strategy};
use crate::error::Result;
use crate::sample::Sample;

/// Where one sample goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Into this bin.
    Bin(usize),
    /// Below the first edge.
    Below,
    /// At or above the last edge.
    Above,
    /// NaN: in no bin.
    Nan,
}

/// The bin of `x` under `bins`, by the rule that applies to samples of type T.
pub fn place<T: Sample>(bins: &Bins, x: T) -> Place {
    let exact = if T::DTYPE.is_float() { None } else { int_bounds(bins) };
    if let Some(b) = exact {
        let v = x.to_i64().unwrap() as i128;
        return if v < b.lower as i128 {
            Place::Below
        } else if v >= b.upper as i128 {
            Place::Above
        } else {
            Place::Bin(((v - b.lower as i128) * b.bins as i128 / b.range as i128) as usize)
        };
    }
    if x.is_nan() {
        return Place::Nan;
    }
    let v = x.to_f64();
    match bins {
        Bins::Even { bins, lower, upper } => {
            if v < *lower {
                Place::Below
            } else if v >= *upper {
                Place::Above
            } else {
                let q = (((v - lower) * *bins as f64) / (upper - lower)).floor() as usize;
                Place::Bin(q.min(*bins as usize - 1))
            }
        }
        Bins::Edges(e) => {
            if v < e[0] {
                Place::Below
            } else if v >= e[e.len() - 1] {
                Place::Above
            } else {
                // Linear scan on purpose: nothing in common with the binary searches.
                let mut bin = 0;
                while !(e[bin] <= v && v < e[bin + 1]) {
                    bin += 1;
                }
                Place::Bin(bin)
            }
        }
    }
}

/// The histogram of `samples` under `spec`, one [`place`] per sample: what every backend and
/// strategy must reproduce exactly.
pub fn histogram<T: Sample>(samples: &[T], spec: &HistogramSpec) -> Histogram {
    let mut h = Histogram::zeroed(spec, "reference", Strategy::Auto);
    let slots = spec.channels.slots();
    let c = spec.channels.interleave as usize;
    for (i, &x) in samples.iter().enumerate() {
        let slot = slots[i % c];
        if slot < 0 {
            continue;
        }
        let k = slot as usize;
        match place(&spec.bins, x) {
            Place::Bin(b) => h.counts[k][b] += 1,
            Place::Below => h.below[k] += 1,
            Place::Above => h.above[k] += 1,
            Place::Nan => h.nan[k] += 1,
        }
    }
    h
}

/// Exact sums of the fixed-point images of the weights, per key.
struct Sums {
    fixed: Vec<i128>,
    counts: Vec<u64>,
}

impl Sums {
    fn new(keys: usize) -> Sums {
        Sums { fixed: vec![0; keys], counts: vec![0; keys] }
    }
    fn add(&mut self, key: usize, w: f64, scale: &FixedScale) {
        self.fixed[key] += (w * scale.scale()).round_ties_even() as i128;
        self.counts[key] += 1;
    }
    fn value(&self, key: usize, scale: &FixedScale) -> f64 {
        let v = self.fixed[key];
        assert!(v.unsigned_abs() < 1u128 << 62, "a fixed-point sum broke the stated bound");
        scale.to_f64(v as i64)
    }
}

/// The key of sample `i` in the weighted references' layout (per selected channel: the bins,
/// then below, above, NaN), or None for a channel not selected.
pub(crate) fn weighted_key<T: Sample>(spec: &HistogramSpec, slots: &[i32], i: usize, x: T) -> Option<usize> {
    let slot = slots[i % spec.channels.interleave as usize];
    if slot < 0 {
        return None;
    }
    let bins = spec.bins.count();
    let base = slot as usize * (bins + 3);
    Some(match place(&spec.bins, x) {
        Place::Bin(b) => base + b,
        Place::Below => base + bins,
        Place::Above => base + bins + 1,
        Place::Nan => base + bins + 2,
    })
}

fn fixed_weighting(scale: FixedScale) -> Weighting {
    Weighting {
        accumulation: Accumulation::FixedPoint,
        fixed: Some(scale),
        error_bound: Some(scale.conversion_bound()),
        deterministic: true,
        shared_atomics: None,
    }
}

/// The fixed-point weighted histogram, sequentially.
pub fn histogram_weighted<T: Sample, W: Weight>(
    samples: &[T],
    weights: &[W],
    spec: &HistogramSpec,
) -> Result<WeightedHistogram> {
    spec.validate()?;
    let scale = super::weighted::prepare(samples.len(), weights, Accumulation::FixedPoint)?.expect("fixed point");
    let slots = spec.channels.slots();
    let nslots = spec.channels.selected.len();
    let bins = spec.bins.count();
    // Per slot: bins, then below, above, NaN.
    let stride = bins + 3;
    let mut s = Sums::new(nslots * stride);
    for (i, (&x, &w)) in samples.iter().zip(weights).enumerate() {
        if let Some(key) = weighted_key(spec, &slots, i, x) {
            s.add(key, w.to_f64(), &scale);
        }
    }
    Ok(keyed_result(nslots, bins, |k| s.value(k, &scale), |k| s.counts[k], fixed_weighting(scale)))
}

/// A weighted histogram from per-key sums and counts, keys laid out per slot as `bins` bins,
/// then below, above and NaN (the references' layout).
pub(crate) fn keyed_result(
    nslots: usize,
    bins: usize,
    sum: impl Fn(usize) -> f64,
    count: impl Fn(usize) -> u64,
    weighting: Weighting,
) -> WeightedHistogram {
    let stride = bins + 3;
    let per = |off: usize| (0..nslots).map(|k| sum(k * stride + bins + off)).collect::<Vec<_>>();
    let per_count = |off: usize| (0..nslots).map(|k| count(k * stride + bins + off)).collect::<Vec<_>>();
    WeightedHistogram {
        sums: (0..nslots).map(|k| (0..bins).map(|b| sum(k * stride + b)).collect()).collect(),
        below: per(0),
        above: per(1),
        nan: per(2),
        below_count: per_count(0),
        above_count: per_count(1),
        nan_count: per_count(2),
        weighting,
        backend: "reference",
        strategy: Strategy::Auto,
    }
}

/// The 2-D histogram, sequentially: counts, or fixed-point sums of `weights`.
pub fn histogram_2d<T: Sample, W: Weight>(
    pairs: Pairs<T>,
    weights: Option<&[W]>,
    spec: &Histogram2dSpec,
) -> Result<Histogram2d> {
    spec.validate()?;
    pairs.validate()?;
    let scale = match weights {
        Some(w) => super::weighted::prepare(pairs.len(), w, Accumulation::FixedPoint)?,
        None => None,
    };
    let (bx, by) = (spec.x.count(), spec.y.count());
    // Bins, then x below, x above, y below, y above, NaN.
    let mut s = Sums::new(bx * by + 5);
    let unit = FixedScale::new(1.0, 1);
    for i in 0..pairs.len() {
        let (x, y) = pairs.get(i);
        let key = if x.is_nan() || y.is_nan() {
            bx * by + 4
        } else {
            match (place(&spec.x, x), place(&spec.y, y)) {
                (Place::Below, _) => bx * by,
                (Place::Above, _) => bx * by + 1,
                (Place::Bin(_), Place::Below) => bx * by + 2,
                (Place::Bin(_), Place::Above) => bx * by + 3,
                (Place::Bin(ix), Place::Bin(iy)) => ix * by + iy,
                (Place::Nan, _) | (_, Place::Nan) => unreachable!("NaN was taken first"),
            }
        };
        match (&scale, weights) {
            (Some(sc), Some(w)) => s.add(key, w[i].to_f64(), sc),
            _ => s.add(key, 0.0, &unit),
        }
    }
    let w = bx * by;
    let o = |v: &dyn Fn(usize) -> u64| Outliers2d {
        x_below: v(w),
        x_above: v(w + 1),
        y_below: v(w + 2),
        y_above: v(w + 3),
        nan: v(w + 4),
    };
    Ok(match scale {
        None => Histogram2d {
            bins_x: bx,
            bins_y: by,
            counts: s.counts[..w].to_vec(),
            sums: Vec::new(),
            outliers: o(&|k| s.counts[k]),
            outlier_sums: None,
            weighting: None,
            backend: "reference",
            strategy: Strategy::Auto,
        },
        Some(sc) => {
            let v = |k: usize| s.value(k, &sc);
            Histogram2d {
                bins_x: bx,
                bins_y: by,
                counts: Vec::new(),
                sums: (0..w).map(v).collect(),
                outliers: o(&|k| s.counts[k]),
                outlier_sums: Some(Outliers2d {
                    x_below: v(w),
                    x_above: v(w + 1),
                    y_below: v(w + 2),
                    y_above: v(w + 3),
                    nan: v(w + 4),
                }),
                weighting: Some(fixed_weighting(sc)),
                backend: "reference",
                strategy: Strategy::Auto,
            }
        }
    })
}
