//! Brightness histograms of images: each pixel's brightness, computed from its channels by one
//! stated rule, binned in the same pass, on every backend with the same bins.
//!
//! An image is `height x width` pixels of 1 to 4 channels (u8, u16, f32 or f64), interleaved
//! per pixel (HWC: r, g, b, r, g, b, ...) or one plane per channel (CHW: every r, then every g,
//! then every b). The rule, [`Brightness::of`], works in f64:
//! - [`Brightness::Mean`] (the default): the mean of the colour channels, alpha left out (gray:
//!   the one channel; gray and alpha: the first; RGB: all three; RGBA: the first three): their
//!   values summed left to right, then divided by their number, each operation rounded to f64;
//! - [`Brightness::Weighted`]: `w[0] * v[0] + w[1] * v[1] + ...` over every channel (alpha
//!   included: give it weight 0; 0 times a NaN or infinite alpha is still NaN), each product
//!   rounded to f64 and the products summed left to right, never fused into a multiply-add.
//!   [`Brightness::rec709`] gives Rec. 709 luma.
//!
//! The brightness is then binned as an f64 sample is ([`super::binning`]): NaN (a NaN channel, or
//! inf - inf) counts as `nan`, values out of range as `below` or `above`. Every backend computes
//! the same f64 operations in the same order, so the counts are the same bit for bit.

pub mod cpu;
pub mod cuda;
pub mod reference;

pub use cuda::ImagePlan;

use super::{Histogram, HistogramSpec, Strategy};
use crate::device::{Backend, DeviceInput, Input};
use crate::error::{Error, Result};
use crate::sample::{DType, Sample};

/// The most channels of a pixel.
pub const MAX_IMAGE_CHANNELS: u32 = 4;

/// The channel types of image histograms.
pub const IMAGE_DTYPES: [DType; 4] = [DType::U8, DType::U16, DType::F32, DType::F64];

/// How an image's channels lie in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageLayout {
    /// Interleaved per pixel, row-major: pixel `i`'s channel `c` at `i * channels + c`.
    Hwc,
    /// One plane per channel: pixel `i`'s channel `c` at `c * height * width + i`.
    Chw,
}

/// What a pixel's brightness is (see the module's rule).
#[derive(Clone, Debug, PartialEq)]
pub enum Brightness {
    /// The mean of the colour channels (alpha, the second of two or the fourth of four, left out).
    Mean,
    /// The weighted sum of every channel, one finite weight per channel.
    Weighted(Vec<f64>),
}

impl Brightness {
    /// Rec. 709 luma of RGB: `0.2126 r + 0.7152 g + 0.0722 b`.
    pub fn rec709() -> Brightness {
        Brightness::Weighted(vec![0.2126, 0.7152, 0.0722])
    }

    /// Rec. 709 luma of RGBA, alpha weighted 0.
    pub fn rec709_alpha() -> Brightness {
        Brightness::Weighted(vec![0.2126, 0.7152, 0.0722, 0.0])
    }

    /// How many of `channels` the mean averages: all but alpha (the second of two, the fourth
    /// of four).
    pub fn mean_of(channels: u32) -> u32 {
        match channels {
            2 | 4 => channels - 1,
            c => c,
        }
    }

    /// The brightness of one pixel whose channel values are `v`, by the module's rule (`v` holds
    /// every channel of the pixel; weights, where given, are one per channel).
    #[inline(always)]
    pub fn of(&self, v: &[f64]) -> f64 {
        match self {
            Brightness::Mean => {
                let m = Self::mean_of(v.len() as u32) as usize;
                let mut s = v[0];
                for &x in &v[1..m] {
                    s += x;
                }
                s / m as f64
            }
            Brightness::Weighted(w) => {
                let mut s = w[0] * v[0];
                for c in 1..v.len() {
                    s += w[c] * v[c];
                }
                s
            }
        }
    }
}

/// An image's shape and how its brightness is computed.
#[derive(Clone, Debug, PartialEq)]
pub struct Image {
    /// Rows.
    pub height: usize,
    /// Columns.
    pub width: usize,
    /// Channels of a pixel, 1 to 4.
    pub channels: u32,
    /// How the channels lie in memory.
    pub layout: ImageLayout,
    /// What a pixel's brightness is.
    pub brightness: Brightness,
}

impl Image {
    /// An image of `channels` interleaved per pixel (HWC), its brightness the mean of the
    /// colour channels.
    ///
    /// ```
    /// use tally::{Backend, HistogramSpec, Image, Strategy};
    /// // Two RGB pixels: a dark one (brightness 10) and a bright one (brightness 250).
    /// let pixels = [0u8, 10, 20, 240, 250, 255];
    /// let h = Backend::cpu().image_histogram(&pixels, &Image::hwc(1, 2, 3), &HistogramSpec::even(2, 0.0, 256.0), Strategy::Auto)?;
    /// assert_eq!(h.counts[0], vec![1, 1]);
    /// # Ok::<(), tally::Error>(())
    /// ```
    pub fn hwc(height: usize, width: usize, channels: u32) -> Image {
        Image { height, width, channels, layout: ImageLayout::Hwc, brightness: Brightness::Mean }
    }

    /// An image of one plane per channel (CHW), its brightness the mean of the colour channels.
    pub fn chw(height: usize, width: usize, channels: u32) -> Image {
        Image { height, width, channels, layout: ImageLayout::Chw, brightness: Brightness::Mean }
    }

    /// The same image with another brightness.
    pub fn with_brightness(self, brightness: Brightness) -> Image {
        Image { brightness, ..self }
    }

    /// Pixels: height times width.
    pub fn pixels(&self) -> usize {
        self.height.saturating_mul(self.width)
    }

    /// Where pixel `i`'s channel `c` is: `(pixel stride, plane stride)` in elements, so that it
    /// is at `i * pixel + c * plane`.
    pub fn strides(&self) -> (usize, usize) {
        match self.layout {
            ImageLayout::Hwc => (self.channels as usize, 1),
            ImageLayout::Chw => (1, self.pixels()),
        }
    }

    /// Checks the image against `len` elements of `dtype` and a histogram spec: 1 to 4 channels,
    /// exactly `height * width * channels` elements, one finite weight per channel, one channel
    /// to count (the brightness).
    pub fn validate(&self, len: usize, dtype: DType, spec: &HistogramSpec) -> Result<()> {
        if !IMAGE_DTYPES.contains(&dtype) {
            return Err(Error::invalid(format!("image histograms take u8, u16, f32 or f64 pixels, not {dtype}")));
        }
        if !(1..=MAX_IMAGE_CHANNELS).contains(&self.channels) {
            return Err(Error::invalid(format!("an image has 1 to 4 channels, not {}", self.channels)));
        }
        let want = self.height.checked_mul(self.width).and_then(|p| p.checked_mul(self.channels as usize));
        if want != Some(len) {
            return Err(Error::invalid(format!(
                "a {} x {} image of {} channels needs {} values, but {len} were given",
                self.height,
                self.width,
                self.channels,
                want.map_or_else(|| "more than 2^64".to_string(), |w| w.to_string())
            )));
        }
        if let Brightness::Weighted(w) = &self.brightness {
            if w.len() != self.channels as usize {
                return Err(Error::invalid(format!(
                    "{} brightness weights for {} channels: give one per channel (0 for alpha)",
                    w.len(),
                    self.channels
                )));
            }
            if let Some(i) = w.iter().position(|x| !x.is_finite()) {
                return Err(Error::invalid(format!("brightness weight {i} ({}) is not finite", w[i])));
            }
        }
        if spec.channels != Default::default() {
            return Err(Error::invalid(
                "an image histogram counts one channel, the brightness: leave the spec's channels at their default",
            ));
        }
        spec.validate()
    }
}

impl Backend {
    /// Counts the brightness of every pixel of `image` (its values in `pixels`, laid out as the
    /// image says) into the bins of `spec`. Host slices are copied to the device for a GPU
    /// backend; device memory is read in place.
    pub fn image_histogram<'a, T: Sample>(
        &self,
        pixels: impl Into<Input<'a, T>>,
        image: &Image,
        spec: &HistogramSpec,
        strategy: Strategy,
    ) -> Result<Histogram> {
        let pixels = pixels.into();
        image.validate(pixels.len(), T::DTYPE, spec)?;
        match (self, pixels) {
            (Backend::Cpu, Input::Host(s)) => Ok(cpu::image_histogram(s, image, spec)),
            (Backend::Cpu, Input::Device(_)) => Err(Error::WrongBackend { buffer: "cuda", backend: "cpu" }),
            (Backend::Cuda(dev), input) => {
                let data = DeviceInput::new(dev.stream(), input, "pixels")?;
                let view = data.view();
                let mut plan = ImagePlan::<T>::new(dev, image, spec, strategy)?;
                plan.launch(dev.stream(), &view)?;
                plan.read(dev.stream())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_is_stated_operations() {
        // The mean leaves alpha out and divides once.
        assert_eq!(Brightness::Mean.of(&[7.0]), 7.0);
        assert_eq!(Brightness::Mean.of(&[7.0, 255.0]), 7.0);
        assert_eq!(Brightness::Mean.of(&[1.0, 2.0, 4.0]), 7.0 / 3.0);
        assert_eq!(Brightness::Mean.of(&[1.0, 2.0, 4.0, 0.0]), 7.0 / 3.0);
        // Weighted: products rounded, then summed left to right (here, not what a fused
        // multiply-add would give).
        let (a, b) = (0.1f64, 3.0f64);
        let w = Brightness::Weighted(vec![a, 1.0]);
        assert_eq!(w.of(&[b, -0.3]), a * b + -0.3);
        assert_ne!(a * b + -0.3, a.mul_add(b, -0.3));
        // NaN and inf - inf are NaN.
        assert!(Brightness::Mean.of(&[f64::NAN, 1.0, 1.0]).is_nan());
        assert!(Brightness::Mean.of(&[f64::INFINITY, f64::NEG_INFINITY, 1.0]).is_nan());
    }

    #[test]
    fn images_are_checked() {
        let spec = HistogramSpec::even(4, 0.0, 256.0);
        let ok = Image::hwc(2, 3, 3);
        assert!(ok.validate(18, DType::U8, &spec).is_ok());
        let e = |img: &Image, len: usize, d: DType, s: &HistogramSpec| img.validate(len, d, s).unwrap_err().to_string();
        assert!(e(&ok, 17, DType::U8, &spec).contains("needs 18 values, but 17"));
        assert!(e(&Image::hwc(1, 1, 5), 5, DType::U8, &spec).contains("1 to 4 channels"));
        assert!(e(&Image::hwc(1, 1, 0), 0, DType::U8, &spec).contains("1 to 4 channels"));
        assert!(e(&ok, 18, DType::I32, &spec).contains("not i32"));
        assert!(e(&ok.clone().with_brightness(Brightness::rec709_alpha()), 18, DType::U8, &spec)
            .contains("4 brightness weights"));
        let nan = ok.clone().with_brightness(Brightness::Weighted(vec![1.0, f64::NAN, 0.0]));
        assert!(e(&nan, 18, DType::U8, &spec).contains("not finite"));
        let two =
            HistogramSpec::even(4, 0.0, 256.0).with_channels(crate::Channels { interleave: 3, selected: vec![0] });
        assert!(e(&ok, 18, DType::U8, &two).contains("one channel"));
        assert!(e(&Image::hwc(usize::MAX, 2, 1), 0, DType::U8, &spec).contains("more than 2^64"));
        assert_eq!(Image::chw(2, 3, 3).strides(), (1, 6));
        assert_eq!(ok.strides(), (3, 1));
    }
}
