//! Two-dimensional histograms over (x, y) pairs, counted or weighted.
//!
//! Each axis has its own bins (even or custom edges) and its own binning rule, the one of
//! [`super::binning`] for that axis. A pair with NaN in either coordinate is counted as `nan` and
//! not binned; otherwise an x out of its range is counted as `x_below` or `x_above` (whatever y
//! is); otherwise a y out of its range as `y_below` or `y_above`; otherwise it lands in bin
//! `(ix, iy)`, stored row-major at `ix * bins_y + iy`.

use super::binning::BinRule;
use super::weighted::{self, key_2d, Accumulation, KeySpace, ValueKind, Weight, Weighting};
use super::{Bins, HistogramSpec, Strategy};
use crate::device::DeviceView;
use crate::error::{Error, Result};
use crate::sample::Sample;
use serde::Serialize;

/// The bins of each axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram2dSpec {
    /// The bins of x (the rows).
    pub x: Bins,
    /// The bins of y (the columns).
    pub y: Bins,
}

impl Histogram2dSpec {
    /// Even bins on both axes: `bins_x` over `[x.0, x.1)` and `bins_y` over `[y.0, y.1)`.
    ///
    /// ```
    /// use tally::{Backend, Histogram2dSpec, Pairs, Strategy};
    /// let (x, y) = ([0.1f32, 0.6, 0.7, 2.0], [0.1f32, 0.1, 0.9, 0.5]);
    /// let spec = Histogram2dSpec::even(2, (0.0, 1.0), 2, (0.0, 1.0));
    /// let m = Backend::cpu().histogram_2d(Pairs::Split(&x, &y), &spec, Strategy::Auto)?;
    /// assert_eq!((m.count(0, 0), m.count(1, 0), m.count(1, 1)), (1, 1, 1));
    /// assert_eq!(m.outliers.x_above, 1);
    /// # Ok::<(), tally::Error>(())
    /// ```
    pub fn even(bins_x: u32, x: (f64, f64), bins_y: u32, y: (f64, f64)) -> Self {
        Histogram2dSpec { x: Bins::even(bins_x, x.0, x.1), y: Bins::even(bins_y, y.0, y.1) }
    }

    /// Checks each axis's bins and that the matrix fits one device histogram (2^31 - 1 bins).
    pub fn validate(&self) -> Result<()> {
        self.x.validate().map_err(|e| axis_error("x", e))?;
        self.y.validate().map_err(|e| axis_error("y", e))?;
        let total = self.x.count() as u64 * self.y.count() as u64;
        if total > i32::MAX as u64 {
            return Err(Error::invalid(format!(
                "{} x {} bins is more than one histogram holds (2^31)",
                self.x.count(),
                self.y.count()
            )));
        }
        Ok(())
    }

    /// One axis as a 1-D spec (for its binning rule).
    pub(crate) fn axis(&self, y: bool) -> HistogramSpec {
        HistogramSpec { bins: if y { self.y.clone() } else { self.x.clone() }, channels: Default::default() }
    }
}

fn axis_error(axis: &str, e: Error) -> Error {
    match e {
        Error::InvalidArgument(m) => Error::invalid(format!("{axis} axis: {m}")),
        other => other,
    }
}

/// (x, y) pairs: two arrays of equal length, or one array of interleaved x0, y0, x1, y1, ...
#[derive(Clone, Copy, Debug)]
pub enum Pairs<'a, T> {
    /// x and y in two arrays of equal length.
    Split(&'a [T], &'a [T]),
    /// x0, y0, x1, y1, ...
    Interleaved(&'a [T]),
}

impl<T: Copy> Pairs<'_, T> {
    /// Checks that the coordinates pair up (equal lengths, or an even count interleaved).
    pub fn validate(&self) -> Result<()> {
        match self {
            Pairs::Split(x, y) if x.len() != y.len() => Err(Error::invalid(format!(
                "{} x values but {} y values: the coordinates must pair up",
                x.len(),
                y.len()
            ))),
            Pairs::Interleaved(v) if v.len() % 2 != 0 => {
                Err(Error::invalid(format!("{} interleaved values is not a whole number of (x, y) pairs", v.len())))
            }
            _ => Ok(()),
        }
    }

    /// How many pairs.
    pub fn len(&self) -> usize {
        match self {
            Pairs::Split(x, _) => x.len(),
            Pairs::Interleaved(v) => v.len() / 2,
        }
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Pair `i` as (x, y); panics past the end.
    #[inline(always)]
    pub fn get(&self, i: usize) -> (T, T) {
        match self {
            Pairs::Split(x, y) => (x[i], y[i]),
            Pairs::Interleaved(v) => (v[2 * i], v[2 * i + 1]),
        }
    }
}

/// (x, y) pairs on the device: two arrays of equal length, or one of interleaved coordinates.
pub enum DevicePairs<'a, T> {
    /// x and y in two arrays.
    Split(DeviceView<'a, T>, DeviceView<'a, T>),
    /// x0, y0, x1, y1, ...
    Interleaved(DeviceView<'a, T>),
}

/// Pairs on the host or on the device: what the 2-D histogram calls take.
pub enum PairsInput<'a, T> {
    /// Host pairs.
    Host(Pairs<'a, T>),
    /// Device pairs (CUDA backend).
    Device(DevicePairs<'a, T>),
}

impl<'a, T> From<Pairs<'a, T>> for PairsInput<'a, T> {
    fn from(p: Pairs<'a, T>) -> Self {
        PairsInput::Host(p)
    }
}

impl<'a, T> From<DevicePairs<'a, T>> for PairsInput<'a, T> {
    fn from(p: DevicePairs<'a, T>) -> Self {
        PairsInput::Device(p)
    }
}

impl<T: Copy> PairsInput<'_, T> {
    /// Pairs.
    pub fn len(&self) -> usize {
        match self {
            PairsInput::Host(p) => p.len(),
            PairsInput::Device(DevicePairs::Split(x, _)) => x.len(),
            PairsInput::Device(DevicePairs::Interleaved(v)) => v.len() / 2,
        }
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The coordinates must pair up.
    pub fn validate(&self) -> Result<()> {
        match self {
            PairsInput::Host(p) => p.validate(),
            PairsInput::Device(DevicePairs::Split(x, y)) if x.len() != y.len() => Err(Error::invalid(format!(
                "{} x values but {} y values: the coordinates must pair up",
                x.len(),
                y.len()
            ))),
            PairsInput::Device(DevicePairs::Interleaved(v)) if v.len() % 2 != 0 => {
                Err(Error::invalid(format!("{} interleaved values is not a whole number of (x, y) pairs", v.len())))
            }
            _ => Ok(()),
        }
    }
}

/// Pairs that fell in no bin (counts, or summed weights).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Outliers2d<V> {
    /// x below its first edge (any y).
    pub x_below: V,
    /// x at or above its last edge (any y).
    pub x_above: V,
    /// x in range, y below its first edge.
    pub y_below: V,
    /// x in range, y at or above its last edge.
    pub y_above: V,
    /// NaN in x or y (or both).
    pub nan: V,
}

/// A 2-D histogram: a row-major `bins_x x bins_y` matrix.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Histogram2d {
    /// Bins of x: the matrix's rows.
    pub bins_x: usize,
    /// Bins of y: the matrix's columns.
    pub bins_y: usize,
    /// Counted: `counts[ix * bins_y + iy]`. Empty when weighted.
    pub counts: Vec<u64>,
    /// Weighted: summed weights, `sums[ix * bins_y + iy]`. Empty when counted.
    pub sums: Vec<f64>,
    /// Pairs in no bin, counted (weighted or not).
    pub outliers: Outliers2d<u64>,
    /// Their summed weights (weighted).
    pub outlier_sums: Option<Outliers2d<f64>>,
    /// How the sums were formed (weighted).
    pub weighting: Option<Weighting>,
    /// The backend that counted ("cpu" or "cuda").
    pub backend: &'static str,
    /// The strategy that ran (what `auto` resolved to).
    pub strategy: Strategy,
}

impl Histogram2d {
    /// The count of bin (ix, iy).
    pub fn count(&self, ix: usize, iy: usize) -> u64 {
        self.counts[ix * self.bins_y + iy]
    }

    /// Same counts, sums (bit for bit) and outliers, backend and strategy aside.
    pub fn same_bits(&self, other: &Histogram2d) -> bool {
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let obits = |o: &Option<Outliers2d<f64>>| o.map(|o| bits(&[o.x_below, o.x_above, o.y_below, o.y_above, o.nan]));
        self.bins_x == other.bins_x
            && self.bins_y == other.bins_y
            && self.counts == other.counts
            && bits(&self.sums) == bits(&other.sums)
            && self.outliers == other.outliers
            && obits(&self.outlier_sums) == obits(&other.outlier_sums)
    }
}

/// The CPU backend's 2-D histogram; `weights` with their accumulation, or counts.
pub fn cpu_histogram_2d<T: Sample, W: Weight>(
    pairs: Pairs<T>,
    weights: Option<&[W]>,
    spec: &Histogram2dSpec,
    accumulation: Accumulation,
) -> Result<Histogram2d> {
    spec.validate()?;
    pairs.validate()?;
    let kind = match weights {
        Some(w) => ValueKind::new(accumulation, weighted::prepare(pairs.len(), w, accumulation)?),
        None => ValueKind::Count,
    };
    let (rx, ry) = (BinRule::new::<T>(&spec.axis(false)), BinRule::new::<T>(&spec.axis(true)));
    let (bx, by) = (spec.x.count(), spec.y.count());
    let keys = KeySpace { width: bx * by, outs: 5 };
    let raw = weighted::cpu_accumulate(
        pairs.len(),
        &keys,
        kind,
        |i| {
            let (x, y) = pairs.get(i);
            key_2d(&rx, &ry, by, keys.width, x, y)
        },
        |i| weights.map_or(1.0, |w| w[i].to_f64()),
    );
    Ok(weighted::hist2d_from_raw(bx, by, &raw, kind, "cpu", Strategy::ThreadPrivate, None))
}
