//! The image histogram stated plainly: one pixel after the other, its channels gathered by the
//! layout, its brightness by [`super::Brightness::of`], its bin by the f64 rule. The tests hold
//! every backend to it.

use super::Image;
use crate::histogram::binning::BinRule;
use crate::histogram::{Histogram, HistogramSpec, Strategy};
use crate::sample::Sample;

/// The brightness histogram of `pixels` (laid out as `image` says; checked by the caller).
pub fn image_histogram<T: Sample>(pixels: &[T], image: &Image, spec: &HistogramSpec) -> Histogram {
    let rule = BinRule::new::<f64>(spec);
    let (pixel, plane) = image.strides();
    let mut h = Histogram::zeroed(spec, "reference", Strategy::ThreadPrivate);
    let mut v = vec![0.0; image.channels as usize];
    for i in 0..image.pixels() {
        for (c, value) in v.iter_mut().enumerate() {
            *value = pixels[i * pixel + c * plane].to_f64();
        }
        count(&mut h, rule.bin(image.brightness.of(&v)));
    }
    h
}

/// Adds one brightness's bin (or outlier code) to `h`.
pub(super) fn count(h: &mut Histogram, bin: i32) {
    use crate::histogram::binning::{ABOVE, BELOW};
    match bin {
        BELOW => h.below[0] += 1,
        ABOVE => h.above[0] += 1,
        b if b < 0 => h.nan[0] += 1,
        b => h.counts[0][b as usize] += 1,
    }
}
