//! Histograms: even bins or custom edges, one or several interleaved channels, on any backend.
//!
//! The binning rule is defined once, in [`binning`], and every backend and strategy must give
//! the same counts for it bit for bit; [`reference`](mod@reference) is a plain sequential statement of it that
//! the tests hold every fast path against.

pub mod axis;
pub mod binning;
pub mod cpu;
pub mod cuda;
pub mod cuda_general;
pub mod fixed_scale;
pub mod hist2d;
pub mod image;
pub mod partition;
pub mod policy;
pub mod reference;
pub mod reference_exact;
pub mod strategy;
pub mod stream;
pub mod stream_weighted;
pub mod weighted;
pub mod weighted_exact;

pub use cuda::HistogramPlan;
pub use cuda_general::{GeneralInput, GeneralPlan, GeneralSpec};
pub use hist2d::{DevicePairs, Histogram2d, Histogram2dSpec, Outliers2d, Pairs, PairsInput};
pub use image::{Brightness, Image, ImageLayout, ImagePlan};
pub use policy::{SwitchOver, Tuning};
pub use strategy::Strategy;
pub use weighted::{Accumulation, FixedScale, SharedAtomics, Weight, WeightedHistogram, WeightedOptions, Weighting};

use crate::device::staging::{streams_host_input, SliceSource};
use crate::device::{Backend, DeviceInput, Input};
use crate::error::{Error, Result};
use crate::sample::{DType, Sample};
use serde::Serialize;

/// How samples map onto bins.
#[derive(Clone, Debug, PartialEq)]
pub enum Bins {
    /// `bins` equal-width bins over `[lower, upper)`.
    Even {
        /// How many bins (at least 1).
        bins: u32,
        /// The first bin's lower edge (inclusive).
        lower: f64,
        /// The last bin's upper edge (exclusive).
        upper: f64,
    },
    /// Bin `i` is `[edges[i], edges[i+1])`; `edges` strictly increasing, at least two.
    Edges(Vec<f64>),
}

impl Bins {
    /// `bins` equal-width bins over `[lower, upper)`.
    pub fn even(bins: u32, lower: f64, upper: f64) -> Self {
        Bins::Even { bins, lower, upper }
    }

    /// How many bins there are.
    pub fn count(&self) -> usize {
        match self {
            Bins::Even { bins, .. } => *bins as usize,
            Bins::Edges(e) => e.len().saturating_sub(1),
        }
    }

    /// Checks that the bins can be counted: at least one, a finite range with `lower < upper`
    /// that the f64 rule cannot overflow, or at least two finite, strictly increasing edges.
    pub fn validate(&self) -> Result<()> {
        match self {
            Bins::Even { bins, lower, upper } => {
                let (lo, hi) = (short(*lower), short(*upper));
                if *bins == 0 {
                    return Err(Error::invalid("the bin count must be at least 1"));
                }
                if !lower.is_finite() || !upper.is_finite() {
                    return Err(Error::invalid(format!("the range must be finite, got [{lo}, {hi})")));
                }
                if lower >= upper {
                    return Err(Error::invalid(format!("the range needs LO < HI, got [{lo}, {hi})")));
                }
                if !(upper - lower).is_finite() {
                    return Err(Error::invalid(format!(
                        "the range [{lo}, {hi}) is wider than an f64 can hold; give a narrower range or custom edges"
                    )));
                }
                // The f64 rule computes (x - lower) * bins: finite for every x in the range
                // exactly when (upper - lower) * bins is (each step rounds monotonically).
                if !((upper - lower) * *bins as f64).is_finite() {
                    return Err(Error::invalid(format!(
                        "the range [{lo}, {hi}) is too wide for {bins} bins: (HI - LO) * bins overflows an f64; \
                         give a narrower range, fewer bins, or custom edges"
                    )));
                }
            }
            Bins::Edges(edges) => {
                if edges.len() < 2 {
                    return Err(Error::invalid("custom edges need at least two values"));
                }
                if edges.len() - 1 > u32::MAX as usize / 2 {
                    return Err(Error::invalid("too many edges"));
                }
                if let Some(i) = edges.iter().position(|e| !e.is_finite()) {
                    return Err(Error::invalid(format!("edge {i} ({}) is not finite", short(edges[i]))));
                }
                for (i, w) in edges.windows(2).enumerate() {
                    if w[0] >= w[1] {
                        return Err(Error::invalid(format!(
                            "edges must be strictly increasing: edge {} ({}) >= edge {} ({})",
                            i,
                            short(w[0]),
                            i + 1,
                            short(w[1])
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}

/// A number for a message or a table: the shortest digits that read back as the same f64, in
/// exponent form where plain digits would run long (`1e308`, not 309 digits); `inf`, `-inf`,
/// `nan` for the others.
pub fn short(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else if x != 0.0 && (x.abs() >= 1e16 || x.abs() < 1e-5) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Which channels of interleaved samples to count. Sample `i` belongs to channel
/// `i % interleave`; one histogram is kept for each channel in `selected`, in that order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Channels {
    /// Channels in the input, interleaved (1: plain samples; 3 for RGB, ...).
    pub interleave: u32,
    /// The channels to count, each once, in the order the results list them.
    pub selected: Vec<u32>,
}

/// The most channels one pass handles (RGBA and friends need 4; 16 leaves room).
pub const MAX_CHANNELS: u32 = 16;

impl Channels {
    /// Plain samples: one channel, counted.
    pub fn single() -> Self {
        Channels { interleave: 1, selected: vec![0] }
    }

    /// Every channel of `interleave` interleaved ones, in order.
    pub fn all(interleave: u32) -> Self {
        Channels { interleave, selected: (0..interleave).collect() }
    }

    /// Checks that there are 1 to [`MAX_CHANNELS`] channels and that each selected one exists
    /// and is selected once.
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
    /// The bins, the same for every channel.
    pub bins: Bins,
    /// Which interleaved channels to count.
    pub channels: Channels,
}

impl HistogramSpec {
    /// One channel, `bins` equal-width bins over `[lower, upper)`.
    ///
    /// ```
    /// use tally::{Backend, HistogramSpec, Strategy};
    /// let h = Backend::cpu().histogram(&[0.5f32, 1.5, 1.7, 9.0], &HistogramSpec::even(2, 0.0, 2.0), Strategy::Auto)?;
    /// assert_eq!(h.counts[0], vec![1, 2]);
    /// assert_eq!(h.above[0], 1);
    /// # Ok::<(), tally::Error>(())
    /// ```
    pub fn even(bins: u32, lower: f64, upper: f64) -> Self {
        HistogramSpec { bins: Bins::even(bins, lower, upper), channels: Channels::single() }
    }

    /// One channel, bin `i` over `[edges[i], edges[i+1])`.
    ///
    /// ```
    /// use tally::{Backend, HistogramSpec, Strategy};
    /// let spec = HistogramSpec::edges(vec![0.0, 1.0, 10.0, 100.0]);
    /// let h = Backend::cpu().histogram(&[0u32, 5, 7, 50, 100], &spec, Strategy::Auto)?;
    /// assert_eq!((h.counts[0].clone(), h.above[0]), (vec![1, 2, 1], 1));
    /// # Ok::<(), tally::Error>(())
    /// ```
    pub fn edges(edges: Vec<f64>) -> Self {
        HistogramSpec { bins: Bins::Edges(edges), channels: Channels::single() }
    }

    /// The same bins, counted for `channels` of interleaved samples.
    ///
    /// ```
    /// use tally::{Backend, Channels, HistogramSpec, Strategy};
    /// // RGB pixels: count only the blue channel and then the red one.
    /// let pixels = [10u8, 20, 30, 10, 200, 250];
    /// let spec = HistogramSpec::even(2, 0.0, 256.0).with_channels(Channels { interleave: 3, selected: vec![2, 0] });
    /// let h = Backend::cpu().histogram(&pixels, &spec, Strategy::Auto)?;
    /// assert_eq!(h.counts, vec![vec![1, 1], vec![2, 0]]);
    /// # Ok::<(), tally::Error>(())
    /// ```
    pub fn with_channels(mut self, channels: Channels) -> Self {
        self.channels = channels;
        self
    }

    /// Checks the bins and channels, and that all of their counters fit one device histogram
    /// (at most 2^31 - 1 of them).
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
    /// Samples below the first edge, per selected channel.
    pub below: Vec<u64>,
    /// Samples at or above the last edge, per selected channel.
    pub above: Vec<u64>,
    /// NaN samples, per selected channel.
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

    /// A histogram from the device's flat channel-major counts and (below, above, NaN) per
    /// selected channel, as the CUDA plans and the streamed totals hold them.
    pub(crate) fn from_flat(
        spec: &HistogramSpec,
        flat: &[u64],
        outside: &[u64],
        backend: &'static str,
        strategy: Strategy,
    ) -> Self {
        let bins = spec.bins.count();
        let mut h = Histogram::zeroed(spec, backend, strategy);
        for k in 0..spec.channels.selected.len() {
            h.counts[k].copy_from_slice(&flat[k * bins..(k + 1) * bins]);
            (h.below[k], h.above[k], h.nan[k]) = (outside[3 * k], outside[3 * k + 1], outside[3 * k + 2]);
        }
        h
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

/// The lower and upper edge of every bin, for printing and plotting: the f64 rule's own
/// boundaries (see [`rule_edge`]).
pub fn bin_edges(bins: &Bins) -> Vec<f64> {
    (0..=bins.count()).map(|i| rule_edge(bins, DType::F64, i).to_f64()).collect()
}

/// A bin boundary: an integer under the exact integer rule, else an f64.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Edge {
    /// A boundary of the exact integer rule: the least integer in the bin.
    Int(i64),
    /// A boundary of the f64 rule, or a custom edge.
    Float(f64),
}

impl Edge {
    /// The boundary as an f64 (rounded, for an integer beyond 2^53).
    pub fn to_f64(self) -> f64 {
        match self {
            Edge::Int(i) => i as f64,
            Edge::Float(x) => x,
        }
    }
}

impl std::fmt::Display for Edge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Edge::Int(i) => write!(f, "{i}"),
            Edge::Float(x) => f.write_str(&short(*x)),
        }
    }
}

/// Where bin `i` begins (`i == bins.count()`: where the last bin ends) under the rule that bins
/// samples of `dtype`, so that a printed edge is exactly the rule's boundary:
/// - custom edges: the edge itself;
/// - the exact integer rule (integer samples, integral bounds): the least integer of bin `i`,
///   `lower + ceil(i * (upper - lower) / bins)`;
/// - the f64 rule: the least f64 `x` with `floor(((x - lower) * bins) / (upper - lower)) >= i`
///   (found by search, not by a formula that may be an ulp off). Bins that no f64 reaches (more
///   bins than f64 values in the range) begin where the next one does.
pub fn rule_edge(bins: &Bins, dtype: DType, i: usize) -> Edge {
    let Bins::Even { bins: nb, lower, upper } = *bins else {
        let Bins::Edges(e) = bins else { unreachable!() };
        return Edge::Float(e[i]);
    };
    if !dtype.is_float() {
        if let Some(b) = binning::int_bounds(bins) {
            let (num, den) = (i as i128 * b.range as i128, b.bins as i128);
            let first = b.lower as i128 + (num + den - 1) / den;
            return Edge::Int(first as i64);
        }
    }
    if i == 0 {
        return Edge::Float(lower);
    }
    if i >= nb as usize {
        return Edge::Float(upper);
    }
    let (range, nbf, target) = (upper - lower, nb as f64, i as f64);
    let reached = |x: f64| x >= upper || (((x - lower) * nbf) / range).floor() >= target;
    let guess = (lower + range * (target / nbf)).clamp(lower, upper);
    Edge::Float(first_reached(lower, upper, guess, reached))
}

/// The least f64 in `[lo, hi]` for which the monotone `reached` holds (it holds at `hi`),
/// searched from `guess` outwards, then by bisection: a few steps when the guess is close.
fn first_reached(lo: f64, hi: f64, guess: f64, reached: impl Fn(f64) -> bool) -> f64 {
    // Order-preserving map of f64 onto i64 (-0.0 just below +0.0).
    let key = |x: f64| {
        let b = x.to_bits() as i64;
        if b < 0 {
            !(b & i64::MAX)
        } else {
            b
        }
    };
    let val = |k: i64| f64::from_bits(if k < 0 { (!k | i64::MIN) as u64 } else { k as u64 });
    let (klo, khi, kg) = (key(lo), key(hi), key(guess));
    // Bracket: `a` not reached (or below the range), `b` reached.
    let (mut a, mut b);
    if reached(val(kg)) {
        b = kg;
        let mut step = 1i64;
        loop {
            let k = b.saturating_sub(step).max(klo);
            if k == b {
                return val(b); // b == klo
            }
            if reached(val(k)) {
                b = k;
                step = step.saturating_mul(2);
            } else {
                a = k;
                break;
            }
        }
    } else {
        a = kg;
        let mut step = 1i64;
        loop {
            let k = a.saturating_add(step).min(khi);
            if reached(val(k)) {
                b = k;
                break;
            }
            a = k;
            step = step.saturating_mul(2);
        }
    }
    while b - a > 1 {
        let m = a + (b - a) / 2;
        if reached(val(m)) {
            b = m;
        } else {
            a = m;
        }
    }
    val(b)
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
            (Backend::Cuda(dev), Input::Host(s))
                if streams_host_input(dev.info().total_memory, std::mem::size_of_val(s), dev.tuning()) =>
            {
                self.histogram_stream(&mut SliceSource::new(s), spec, strategy)
            }
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
