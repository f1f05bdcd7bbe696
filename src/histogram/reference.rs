//! The binning rule as a plain sequential loop: slow, obvious, and the yardstick for every
//! fast path. It shares nothing with them but the decision of which rule applies.

use super::binning::int_bounds;
use super::{Bins, Histogram, HistogramSpec, Strategy};
use crate::sample::Sample;

pub fn histogram<T: Sample>(samples: &[T], spec: &HistogramSpec) -> Histogram {
    let mut h = Histogram::zeroed(spec, "reference", Strategy::Auto);
    let slots = spec.channels.slots();
    let c = spec.channels.interleave as usize;
    let exact = if T::DTYPE.is_float() { None } else { int_bounds(&spec.bins) };
    for (i, &x) in samples.iter().enumerate() {
        let slot = slots[i % c];
        if slot < 0 {
            continue;
        }
        let k = slot as usize;
        let bin: Option<usize> = if let Some(b) = exact {
            let v = x.to_i64().unwrap() as i128;
            if v < b.lower as i128 {
                h.below[k] += 1;
                None
            } else if v >= b.upper as i128 {
                h.above[k] += 1;
                None
            } else {
                Some(((v - b.lower as i128) * b.bins as i128 / b.range as i128) as usize)
            }
        } else if x.is_nan() {
            h.nan[k] += 1;
            None
        } else {
            let v = x.to_f64();
            match &spec.bins {
                Bins::Even { bins, lower, upper } => {
                    if v < *lower {
                        h.below[k] += 1;
                        None
                    } else if v >= *upper {
                        h.above[k] += 1;
                        None
                    } else {
                        let q = (((v - lower) * *bins as f64) / (upper - lower)).floor() as usize;
                        Some(q.min(*bins as usize - 1))
                    }
                }
                Bins::Edges(e) => {
                    if v < e[0] {
                        h.below[k] += 1;
                        None
                    } else if v >= e[e.len() - 1] {
                        h.above[k] += 1;
                        None
                    } else {
                        // Linear scan on purpose: nothing in common with the binary searches.
                        let mut bin = 0;
                        while !(e[bin] <= v && v < e[bin + 1]) {
                            bin += 1;
                        }
                        Some(bin)
                    }
                }
            }
        };
        if let Some(b) = bin {
            h.counts[k][b] += 1;
        }
    }
    h
}
