//! The CPU backend's image histogram: rayon workers over runs of rows, each with a private
//! histogram, merged at the end. The brightness and the bin are the reference's operations.

use super::reference::count;
use super::Image;
use crate::histogram::binning::BinRule;
use crate::histogram::{Histogram, HistogramSpec, Strategy};
use crate::sample::Sample;
use rayon::prelude::*;

/// Pixels a worker counts at a time.
const PIXELS_PER_TASK: usize = 1 << 16;

/// The brightness histogram of `pixels` (laid out as `image` says; checked by the caller).
pub fn image_histogram<T: Sample>(pixels: &[T], image: &Image, spec: &HistogramSpec) -> Histogram {
    let rule = BinRule::new::<f64>(spec);
    let (pixel, plane) = image.strides();
    let channels = image.channels as usize;
    let n = image.pixels();
    let tasks = n.div_ceil(PIXELS_PER_TASK);
    let empty = || Histogram::zeroed(spec, "cpu", Strategy::ThreadPrivate);
    (0..tasks)
        .into_par_iter()
        .fold(empty, |mut h, t| {
            let mut v = [0.0f64; super::MAX_IMAGE_CHANNELS as usize];
            for i in t * PIXELS_PER_TASK..((t + 1) * PIXELS_PER_TASK).min(n) {
                for (c, value) in v[..channels].iter_mut().enumerate() {
                    *value = pixels[i * pixel + c * plane].to_f64();
                }
                count(&mut h, rule.bin(image.brightness.of(&v[..channels])));
            }
            h
        })
        .reduce(empty, |mut a, b| {
            for (x, y) in a.counts[0].iter_mut().zip(&b.counts[0]) {
                *x += y;
            }
            a.below[0] += b.below[0];
            a.above[0] += b.above[0];
            a.nan[0] += b.nan[0];
            a
        })
}

/// Every pixel's brightness by the rule (`pixels` laid out as `image` says, `image` checked by
/// the caller), in pixel order: what a caller that needs the values themselves (weighted counts,
/// several devices) bins as f64 samples, with the same bins as the image histogram.
pub fn brightness_values<T: Sample>(pixels: &[T], image: &Image) -> Vec<f64> {
    let (pixel, plane) = image.strides();
    let channels = image.channels as usize;
    (0..image.pixels())
        .into_par_iter()
        .with_min_len(PIXELS_PER_TASK)
        .map(|i| {
            let mut v = [0.0f64; super::MAX_IMAGE_CHANNELS as usize];
            for (c, value) in v[..channels].iter_mut().enumerate() {
                *value = pixels[i * pixel + c * plane].to_f64();
            }
            image.brightness.of(&v[..channels])
        })
        .collect()
}
