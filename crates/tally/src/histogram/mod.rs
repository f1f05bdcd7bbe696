//! Histograms: even bins or custom edges, one or several interleaved channels, on any backend.
//!
//! The binning rule is defined once, in [`binning`], and every backend and strategy must give
//! the same counts for it bit for bit; [`reference`] is a plain sequential statement of it that
//! the tests hold every fast path against.

pub mod axis;
pub mod binning;
pub mod cpu;
pub mod cuda;
pub mod cuda_general;
pub mod hist2d;
pub mod policy;
pub mod reference;
pub mod strategy;
pub mod weighted;

pub use cuda::HistogramPlan;
pub use cuda_general::{GeneralInput, GeneralPlan, GeneralSpec};
pub use hist2d::{DevicePairs, Histogram2d, Histogram2dSpec, Outliers2d, Pairs, PairsInput};
pub use policy::{SwitchOver, Tuning};
pub use strategy::Strategy;
pub use weighted::{Accumulation, FixedScale, SharedAtomics, Weight, WeightedHistogram, WeightedOptions, Weighting};

use crate::device::{Backend, CudaDevice, DeviceInput, Input};
use crate::error::{Error, Result};
use crate::sample::Sample;
use serde::Serialize;
use std::sync::Arc;

/// How samples map onto bins.
#[derive(Clone, Debug, PartialEq)]
pub enum Bins {
    /// `bins` equal-width bins over `[lower, upper)`.
    Even { bins: u32, lower: f64, upper: f64 },
    /// Bin `i` is `[edges[i], edges[i+1])`; `edges` strictly increasing, at least two.
    Edges(Vec<f64>),
}

impl Bins {
    pub fn even(bins: u32, lower: f64, upper: f64) -> Self {
        Bins::Even { bins, lower, upper }
    }

    pub fn count(&self) -> usize {
        match self {
            Bins::Even { bins, .. } => *bins as usize,
            Bins::Edges(e) => e.len().saturating_sub(1),
        }
    }

    pub fn validate(&self) -> Result<()> {
        match self {
            Bins::Even { bins, lower, upper } => {
                if *bins == 0 {
                    return Err(Error::invalid("the bin count must be at least 1"));
                }
                if !lower.is_finite() || !upper.is_finite() {
                    return Err(Error::invalid(format!("the range must be finite, got [{lower}, {upper})")));
                }
                if lower >= upper {
                    return Err(Error::invalid(format!("the range needs LO < HI, got [{lower}, {upper})")));
                }
                if !(upper - lower).is_finite() {
                    return Err(Error::invalid(format!("the range [{lower}, {upper}) is wider than an f64 can hold")));
                }
            }
            Bins::Edges(edges) => {
                if edges.len() < 2 {
                    return Err(Error::invalid("custom edges need at least two values"));
                }
                if edges.len() - 1 > u32::MAX as usize / 2 {
                    return Err(Error::invalid("too many edges"));
                }
                for (i, w) in edges.windows(2).enumerate() {
                    if !w[0].is_finite() || !w[1].is_finite() {
                        return Err(Error::invalid(format!("edge {} is not finite", i + 1)));
                    }
                    if w[0] >= w[1] {
                        return Err(Error::invalid(format!(
                            "edges must be strictly increasing: edge {} ({}) >= edge {} ({})",
                            i,
                            w[0],
                            i + 1,
                            w[1]
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Which channels of interleaved samples to count. Sample `i` belongs to channel
/// `i % interleave`; one histogram is kept for each channel in `selected`, in that order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Channels {
    pub interleave: u32,
    pub selected: Vec<u32>,
}

/// The most channels one pass handles (RGBA and friends need 4; 16 leaves room).
pub const MAX_CHANNELS: u32 = 16;

impl Channels {
    pub fn single() -> Self {
        Channels { interleave: 1, selected: vec![0] }
    }

    pub fn all(interleave: u32) -> Self {
        Channels { interleave, selected: (0..interleave).collect() }
    }

    pub fn validate(&self) -> Result<()> {
        if self.interleave == 0 || self.interleave > MAX_CHANNELS {
            return Err(Error::invalid(format!("channel count must be 1..={MAX_CHANNELS}, got {}", self.interleave)));
        }
        if self.selected.is_empty() {
            return Err(Error::invalid("select at least one channel"));
        }
        let mut seen = vec![false; self.interleave as usize];
        for &c in &self.selected {
            if c >= self.interleave {
                return Err(Error::invalid(format!(
                    "channel {c} does not exist in {}-channel samples",
                    self.interleave
                )));
            }
            if std::mem::replace(&mut seen[c as usize], true) {
                return Err(Error::invalid(format!("channel {c} selected twice")));
            }
        }
        Ok(())
    }

    /// For each interleaved channel, its slot among the selected ones (or -1).
    pub(crate) fn slots(&self) -> Vec<i32> {
        let mut slot = vec![-1i32; self.interleave as usize];
        for (k, &c) in self.selected.iter().enumerate() {
            slot[c as usize] = k as i32;
        }
        slot
    }
}

impl Default for Channels {
    fn default() -> Self {
        Channels::single()
    }
}

/// What to count: the bins and the channels.
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramSpec {
    pub bins: Bins,
    pub channels: Channels,
}

impl HistogramSpec {
    pub fn even(bins: u32, lower: f64, upper: f64) -> Self {
        HistogramSpec { bins: Bins::even(bins, lower, upper), channels: Channels::single() }
    }

    pub fn edges(edges: Vec<f64>) -> Self {
        HistogramSpec { bins: Bins::Edges(edges), channels: Channels::single() }
    }

    pub fn with_channels(mut self, channels: Channels) -> Self {
        self.channels = channels;
        self
    }

    pub fn validate(&self) -> Result<()> {
        self.bins.validate()?;
        self.channels.validate()?;
        // Every slot's counters are addressed by one 32-bit index on the device.
        let total = self.bins.count() as u64 * self.channels.selected.len() as u64;
        if total > i32::MAX as u64 {
            return Err(Error::invalid(format!(
                "{} bins x {} channels is more counters than one histogram holds (2^31)",
                self.bins.count(),
                self.channels.selected.len()
            )));
        }
        Ok(())
    }
}

/// The result: per selected channel, the counts and the samples that fell in no bin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Histogram {
    /// `counts[k][b]`: samples of the k-th selected channel in bin `b`.
    pub counts: Vec<Vec<u64>>,
    /// Below the first edge, at or above the last, and NaN, per selected channel.
    pub below: Vec<u64>,
    pub above: Vec<u64>,
    pub nan: Vec<u64>,
    /// The backend that counted ("cpu" or "cuda").
    pub backend: &'static str,
    /// The strategy that ran (what `auto` resolved to).
    pub strategy: Strategy,
}

impl Histogram {
    pub(crate) fn zeroed(spec: &HistogramSpec, backend: &'static str, strategy: Strategy) -> Self {
        let k = spec.channels.selected.len();
        Histogram {
            counts: vec![vec![0; spec.bins.count()]; k],
            below: vec![0; k],
            above: vec![0; k],
            nan: vec![0; k],
            backend,
            strategy,
        }
    }

    /// Total samples seen in the selected channels, binned or not.
    pub fn total(&self) -> u64 {
        let binned: u64 = self.counts.iter().flatten().sum();
        binned + self.below.iter().sum::<u64>() + self.above.iter().sum::<u64>() + self.nan.iter().sum::<u64>()
    }

    /// Same counts, ignoring which backend and strategy produced them.
    pub fn same_counts(&self, other: &Histogram) -> bool {
        self.counts == other.counts && self.below == other.below && self.above == other.above && self.nan == other.nan
    }
}

/// The lower and upper edge of every bin, for printing and plotting.
pub fn bin_edges(bins: &Bins) -> Vec<f64> {
    match bins {
        Bins::Even { bins, lower, upper } => {
            (0..=*bins).map(|i| lower + (upper - lower) * (i as f64) / (*bins as f64)).collect()
        }
        Bins::Edges(e) => e.clone(),
    }
}

impl Backend {
    /// Counts `input` into the bins of `spec`. Host slices are copied to the device for a GPU
    /// backend; device memory (a [`crate::Buffer`], a [`crate::DeviceBuffer`], a cudarc slice)
    /// is read in place.
    pub fn histogram<'a, T: Sample>(
        &self,
        input: impl Into<Input<'a, T>>,
        spec: &HistogramSpec,
        strategy: Strategy,
    ) -> Result<Histogram> {
        spec.validate()?;
        match (self, input.into()) {
            (Backend::Cpu, Input::Host(s)) => cpu::histogram(s, spec),
            (Backend::Cpu, Input::Device(_)) => Err(Error::WrongBackend { buffer: "cuda", backend: "cpu" }),
            (Backend::Cuda(dev), input) => {
                let data = DeviceInput::new(dev.stream(), input, "samples")?;
                let view = data.view();
                HistogramPlan::new(dev, &view, spec, strategy, dev.tuning())?.run(&view)
            }
        }
    }

    /// Sums `weights` (one per sample, f32 or f64, finite) into the bins of `spec`. Fixed point by
    /// default: the same bits on every run, strategy and backend (docs/WEIGHTED.md). Samples and
    /// weights may be on the host or, for the CUDA backend, on the device.
    pub fn histogram_weighted<'a, 'b, T: Sample, W: Weight>(
        &self,
        samples: impl Into<Input<'a, T>>,
        weights: impl Into<Input<'b, W>>,
        spec: &HistogramSpec,
        options: WeightedOptions,
    ) -> Result<WeightedHistogram> {
        spec.validate()?;
        match (self, samples.into(), weights.into()) {
            (Backend::Cpu, Input::Host(s), Input::Host(w)) => {
                weighted::cpu_histogram_weighted(s, w, spec, options.accumulation)
            }
            (Backend::Cpu, _, _) => Err(Error::WrongBackend { buffer: "cuda", backend: "cpu" }),
            (Backend::Cuda(dev), samples, weights) => {
                let stream = dev.stream();
                let xs = DeviceInput::new(stream, samples, "samples")?;
                let ws = DeviceInput::new(stream, weights, "weights")?;
                let input = GeneralInput { x: xs.view(), y: None, interleaved: false, weights: Some(ws.view()) };
                let mut plan = GeneralPlan::<T, W>::weighted(dev, &input, spec, options)?;
                plan.launch(stream, &input)?;
                plan.read_weighted(stream, spec)
            }
        }
    }

    /// Counts (x, y) pairs into a `bins_x x bins_y` matrix (row-major).
    pub fn histogram_2d<'a, T: Sample>(
        &self,
        pairs: impl Into<PairsInput<'a, T>>,
        spec: &Histogram2dSpec,
        strategy: Strategy,
    ) -> Result<Histogram2d> {
        self.histogram_2d_inner::<T, f32>(pairs.into(), None, spec, WeightedOptions::default().with_strategy(strategy))
    }

    /// Sums `weights` (one per pair) into a `bins_x x bins_y` matrix (row-major).
    pub fn histogram_2d_weighted<'a, 'b, T: Sample, W: Weight>(
        &self,
        pairs: impl Into<PairsInput<'a, T>>,
        weights: impl Into<Input<'b, W>>,
        spec: &Histogram2dSpec,
        options: WeightedOptions,
    ) -> Result<Histogram2d> {
        self.histogram_2d_inner(pairs.into(), Some(weights.into()), spec, options)
    }

    fn histogram_2d_inner<T: Sample, W: Weight>(
        &self,
        pairs: PairsInput<'_, T>,
        weights: Option<Input<'_, W>>,
        spec: &Histogram2dSpec,
        options: WeightedOptions,
    ) -> Result<Histogram2d> {
        spec.validate()?;
        pairs.validate()?;
        match (self, pairs) {
            (Backend::Cpu, PairsInput::Host(pairs)) => {
                let w = match weights {
                    None => None,
                    Some(Input::Host(w)) => Some(w),
                    Some(Input::Device(_)) => return Err(Error::WrongBackend { buffer: "cuda", backend: "cpu" }),
                };
                hist2d::cpu_histogram_2d(pairs, w, spec, options.accumulation)
            }
            (Backend::Cpu, PairsInput::Device(_)) => Err(Error::WrongBackend { buffer: "cuda", backend: "cpu" }),
            (Backend::Cuda(dev), pairs) => {
                let stream = dev.stream();
                let (xs, ys, interleaved) = match pairs {
                    PairsInput::Host(Pairs::Split(x, y)) => (
                        DeviceInput::new(stream, Input::Host(x), "x")?,
                        Some(DeviceInput::new(stream, Input::Host(y), "y")?),
                        false,
                    ),
                    PairsInput::Host(Pairs::Interleaved(v)) => {
                        (DeviceInput::new(stream, Input::Host(v), "pairs")?, None, true)
                    }
                    PairsInput::Device(DevicePairs::Split(x, y)) => {
                        (DeviceInput::Borrowed(x), Some(DeviceInput::Borrowed(y)), false)
                    }
                    PairsInput::Device(DevicePairs::Interleaved(v)) => (DeviceInput::Borrowed(v), None, true),
                };
                let ws = weights.map(|w| DeviceInput::new(stream, w, "weights")).transpose()?;
                let input = GeneralInput {
                    x: xs.view(),
                    y: ys.as_ref().map(|y| y.view()),
                    interleaved,
                    weights: ws.as_ref().map(|w| w.view()),
                };
                let mut plan = GeneralPlan::<T, W>::two_d(dev, &input, spec, options)?;
                plan.launch(stream, &input)?;
                plan.read_2d(stream, spec)
            }
        }
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
        let scale = weighted::prepare(input.len(), &dev.stream().download(weights)?, options.accumulation)?;
        let kind = weighted::ValueKind::new(options.accumulation, scale);
        let general = GeneralSpec::OneD(spec.clone());
        GeneralPlan::new(dev, input.len(), &general, true, kind, options.strategy, options.shared_atomics, dev.tuning())
    }

    /// A 2-D histogram of `input`'s pairs, counted (no weights) or weighted.
    pub fn two_d(
        dev: &Arc<CudaDevice>,
        input: &GeneralInput<'_, T, W>,
        spec: &Histogram2dSpec,
        options: WeightedOptions,
    ) -> Result<Self> {
        let kind = match &input.weights {
            // The scale needs the weights' largest magnitude: one read of them back to the host.
            Some(w) => weighted::ValueKind::new(
                options.accumulation,
                weighted::prepare(input.len(), &dev.stream().download(w)?, options.accumulation)?,
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
        )
    }
}
