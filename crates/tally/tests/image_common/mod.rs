//! What the image histogram tests share: channel types with values that land on bin edges,
//! NaN and infinities, the images and brightness rules under test, and the bins for each type.
#![allow(dead_code)] // each test binary uses its own subset

use tally::data::splitmix64;
use tally::{Bins, Brightness, HistogramSpec, Image, ImageLayout, Sample};

/// The channel types of image histograms.
pub trait ImageSample: Sample {
    /// `as` conversion (saturating for integers).
    fn from_f64(v: f64) -> Self;
    /// The largest value the bins of `specs` should cover.
    const TOP: f64;
}

impl ImageSample for u8 {
    fn from_f64(v: f64) -> Self {
        v as u8
    }
    const TOP: f64 = 256.0;
}
impl ImageSample for u16 {
    fn from_f64(v: f64) -> Self {
        v as u16
    }
    const TOP: f64 = 65536.0;
}
impl ImageSample for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    const TOP: f64 = 1.0;
}
impl ImageSample for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
    const TOP: f64 = 1.0;
}

/// `len` channel values over a little more than `[0, T::TOP)`; one in thirteen a special: 0, the
/// top, a value just below it, and for floats NaN, the infinities and -0.0.
pub fn pixels<T: ImageSample>(len: usize, seed: u64) -> Vec<T> {
    let top = T::TOP;
    let specials = [0.0, top, top - top * 1e-6, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, top / 3.0];
    (0..len)
        .map(|i| {
            let r = splitmix64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            if r.is_multiple_of(13) {
                T::from_f64(specials[(r >> 8) as usize % specials.len()])
            } else {
                let u = (r >> 11) as f64 / (1u64 << 53) as f64;
                T::from_f64(-0.05 * top + 1.1 * top * u)
            }
        })
        .collect()
}

/// Bins for channel values of `T`: even over `[0, top)` (for integers, one per value where there
/// are 256), a narrower even range, uneven custom edges.
pub fn specs<T: ImageSample>() -> Vec<HistogramSpec> {
    let top = T::TOP;
    let even = if top == 256.0 { 256 } else { 100 };
    vec![
        HistogramSpec::even(even, 0.0, top),
        HistogramSpec::even(7, 0.1 * top, 0.9 * top),
        HistogramSpec {
            bins: Bins::Edges((0..=20).map(|i| top * (i as f64 / 20.0).powi(3)).collect()),
            channels: Default::default(),
        },
    ]
}

/// Every brightness rule for `channels`: the mean, and weights (Rec. 709 where it applies, and
/// uneven ones with a negative weight).
pub fn brightness_rules(channels: u32) -> Vec<Brightness> {
    let mut out = vec![Brightness::Mean];
    match channels {
        3 => out.push(Brightness::rec709()),
        4 => out.push(Brightness::rec709_alpha()),
        _ => {}
    }
    out.push(Brightness::Weighted((0..channels).map(|c| [0.3, -0.1, 0.55, 0.25][c as usize]).collect()));
    out
}

/// Images of every channel count and layout, at sizes that are no multiple of anything.
pub fn images(sizes: &[(usize, usize)]) -> Vec<Image> {
    let mut out = Vec::new();
    for &(h, w) in sizes {
        for channels in 1..=4 {
            for layout in [ImageLayout::Hwc, ImageLayout::Chw] {
                for b in brightness_rules(channels) {
                    out.push(Image { height: h, width: w, channels, layout, brightness: b });
                }
            }
        }
    }
    out
}
