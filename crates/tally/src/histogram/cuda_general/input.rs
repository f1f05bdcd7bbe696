//! The inputs of weighted and 2-D plans, and the plans' constructors from histogram options
//! (the fixed-point scale from the weights' largest magnitude, found on the device).

use super::{GeneralPlan, GeneralSpec};
use crate::device::{CudaDevice, DeviceView};
use crate::error::{Error, Result};
use crate::histogram::hist2d::Histogram2dSpec;
use crate::histogram::weighted::{self, Weight, WeightedOptions};
use crate::histogram::HistogramSpec;
use crate::sample::Sample;
use std::sync::Arc;

/// Where the data of a weighted or 2-D histogram are on the device.
pub struct GeneralInput<'a, T, W> {
    /// Samples, or x coordinates.
    pub x: DeviceView<'a, T>,
    /// y coordinates (2-D): a second array, or the odd elements of `x` (interleaved pairs).
    pub y: Option<DeviceView<'a, T>>,
    /// 2-D pairs interleaved in `x`.
    pub interleaved: bool,
    /// One weight per sample, or None for counts.
    pub weights: Option<DeviceView<'a, W>>,
}

impl<T, W> GeneralInput<'_, T, W> {
    /// Samples (pairs).
    pub fn len(&self) -> usize {
        if self.interleaved {
            self.x.len() / 2
        } else {
            self.x.len()
        }
    }

    /// For a 2-D plan: the y coordinates are a second array of x's length, or the pairs are
    /// interleaved (an even count of coordinates).
    pub(crate) fn validate_pairs(&self) -> Result<()> {
        match (&self.y, self.interleaved) {
            (Some(y), false) if y.len() == self.x.len() => Ok(()),
            (Some(y), false) => Err(Error::invalid(format!(
                "{} x values but {} y values: the coordinates must pair up",
                self.x.len(),
                y.len()
            ))),
            (None, true) if self.x.len().is_multiple_of(2) => Ok(()),
            (None, true) => Err(Error::invalid(format!(
                "{} interleaved values is not a whole number of (x, y) pairs",
                self.x.len()
            ))),
            (Some(_), true) => Err(Error::invalid("interleaved pairs come in one array, with no second one for y")),
            (None, false) => Err(Error::invalid("a 2-D histogram needs y coordinates, or interleaved pairs")),
        }
    }

    /// Whether there is nothing to count.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: Sample, W: Weight> GeneralPlan<T, W> {
    /// A weighted 1-D histogram of `input` (samples and weights on the device); the weights'
    /// largest magnitude sets the fixed-point scale.
    pub fn weighted(
        dev: &Arc<CudaDevice>,
        input: &GeneralInput<'_, T, W>,
        spec: &HistogramSpec,
        options: WeightedOptions,
    ) -> Result<Self> {
        let weights = input.weights.as_ref().ok_or_else(|| Error::invalid("a weighted histogram needs weights"))?;
        let scale = weighted::prepare_device(dev, input.len(), weights, options.accumulation)?;
        let kind = weighted::ValueKind::new(options.accumulation, scale);
        let general = GeneralSpec::OneD(spec.clone());
        GeneralPlan::new(
            dev,
            input.len(),
            &general,
            true,
            kind,
            options.strategy,
            options.shared_atomics,
            dev.tuning(),
            Some(input),
        )
    }

    /// A 2-D histogram of `input`'s pairs, counted (no weights) or weighted.
    pub fn two_d(
        dev: &Arc<CudaDevice>,
        input: &GeneralInput<'_, T, W>,
        spec: &Histogram2dSpec,
        options: WeightedOptions,
    ) -> Result<Self> {
        let kind = match &input.weights {
            Some(w) => weighted::ValueKind::new(
                options.accumulation,
                weighted::prepare_device(dev, input.len(), w, options.accumulation)?,
            ),
            None => weighted::ValueKind::Count,
        };
        let general = GeneralSpec::TwoD(spec.clone());
        let weighted = input.weights.is_some();
        GeneralPlan::new(
            dev,
            input.len(),
            &general,
            weighted,
            kind,
            options.strategy,
            options.shared_atomics,
            dev.tuning(),
            Some(input),
        )
    }
}
