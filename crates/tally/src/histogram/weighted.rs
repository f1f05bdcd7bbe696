//! Weighted histograms: a weight per sample, summed per bin, deterministic by construction.
//!
//! Sums are kept in 64-bit fixed point: each weight `w` becomes the integer
//! `round_half_even(w * 2^k)` and the integers are added with wrapping 64-bit arithmetic. The
//! scale `2^k` is chosen from the largest |weight| and the sample count so that no partial sum
//! can reach 2^62 in magnitude ([`FixedScale`]); the wrapped sums are then the exact sums, and
//! integer addition is associative, so the result is the same bits whatever order the additions
//! happen in: on every run, with every strategy, on every GPU and on the CPU backend. Each sum is
//! converted to f64 once at the end. docs/WEIGHTED.md states the bounds.
//!
//! [`Accumulation::FloatAtomics`] adds the weights as floats instead (in the weight's type in
//! shared memory, f64 in global memory on the GPU; f64 on the CPU): not deterministic, offered
//! to measure against.

use super::binning::{BinRule, ABOVE, BELOW};
use super::{Histogram2d, HistogramSpec, Outliers2d, Strategy};
use crate::device::{CudaDevice, DeviceView};
use crate::error::{Error, Result};
use crate::reduce::{ReduceElement, ReduceOp, ReduceOptions, ReducePlan};
use crate::sample::{DType, Sample};
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use rayon::prelude::*;
use serde::Serialize;
use std::sync::Arc;

pub use super::fixed_scale::FixedScale;

/// A weight element: f32 or f64.
pub trait Weight: Copy + Send + Sync + Default + std::fmt::Debug + DeviceRepr + ValidAsZeroBits + 'static {
    /// This type's [`DType`] (F32 or F64).
    const DTYPE: DType;
    /// The weight as an f64 (exact).
    fn to_f64(self) -> f64;
    /// The least and greatest of `weights` (NaN where there is one), reduced on `dev`.
    fn device_minmax(dev: &Arc<CudaDevice>, weights: &DeviceView<'_, Self>) -> Result<(f64, f64)>;
}

/// [`Weight`] for a float type that is also a [`ReduceElement`].
macro_rules! float_weight {
    ($t:ty, $dtype:expr) => {
        impl Weight for $t {
            const DTYPE: DType = $dtype;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                f64::from(self)
            }
            fn device_minmax(dev: &Arc<CudaDevice>, weights: &DeviceView<'_, Self>) -> Result<(f64, f64)> {
                minmax_on(dev, weights)
            }
        }
    };
}
float_weight!(f32, DType::F32);
float_weight!(f64, DType::F64);

/// One min/max reduction of resident elements (NaN propagates).
fn minmax_on<E: ReduceElement>(dev: &Arc<CudaDevice>, xs: &DeviceView<'_, E>) -> Result<(f64, f64)> {
    let r = ReducePlan::<E>::new(dev, ReduceOp::MinMax, ReduceOptions::default(), xs.len())?.run(xs)?;
    Ok((r.value, r.max.unwrap_or(f64::NAN)))
}

/// The largest |weight| of `weights` (not empty), from one min/max reduction on `dev` (a read
/// of two numbers); None where a weight is NaN or infinite.
pub(crate) fn device_max_abs<W: Weight>(dev: &Arc<CudaDevice>, weights: &DeviceView<'_, W>) -> Result<Option<f64>> {
    let (min, max) = W::device_minmax(dev, weights)?;
    Ok(FixedScale::max_abs(min, max))
}

/// How weights are summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Accumulation {
    /// 64-bit fixed point with integer atomics: bitwise deterministic.
    #[default]
    FixedPoint,
    /// Plain float atomics: the order of the additions, and so the result, changes from run to run.
    FloatAtomics,
    /// The exact sum of each bin's weights, rounded once to f64 (half to even): bitwise the same
    /// on every run, strategy and backend. NaN and infinite weights follow IEEE (docs/WEIGHTED.md).
    Exact,
}

/// GPU only: how a block adds 64-bit fixed-point values in shared memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SharedAtomics {
    /// Two 32-bit halves with a carry: native 32-bit shared atomics (the default).
    #[default]
    Halves,
    /// Native 64-bit shared `atomicAdd`, a compare-and-swap loop on sm_90 (docs/LAB.md).
    Native64,
}

impl SharedAtomics {
    /// The name reports print (`halves`, `native64`).
    pub fn name(self) -> &'static str {
        match self {
            SharedAtomics::Halves => "halves",
            SharedAtomics::Native64 => "native64",
        }
    }
}

/// Options of a weighted histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WeightedOptions {
    /// The strategy (`auto`: the policy's choice).
    pub strategy: Strategy,
    /// Fixed point (deterministic, the default), exact sums, or float atomics.
    pub accumulation: Accumulation,
    /// GPU block strategies, fixed point: how shared memory adds 64-bit values.
    pub shared_atomics: SharedAtomics,
}

impl Default for WeightedOptions {
    fn default() -> Self {
        WeightedOptions {
            strategy: Strategy::Auto,
            accumulation: Accumulation::FixedPoint,
            shared_atomics: SharedAtomics::Halves,
        }
    }
}

impl WeightedOptions {
    /// The defaults, but with plain float atomics (to compare against fixed point).
    pub fn float_atomics() -> Self {
        WeightedOptions { accumulation: Accumulation::FloatAtomics, ..Default::default() }
    }
    /// The defaults, but with exact sums (each bin's exact sum, rounded once).
    pub fn exact() -> Self {
        WeightedOptions { accumulation: Accumulation::Exact, ..Default::default() }
    }
    /// These options with `strategy`.
    pub fn with_strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }
}

/// How the sums of a weighted histogram were formed.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Weighting {
    /// Fixed point or float atomics.
    pub accumulation: Accumulation,
    /// The fixed-point scale (fixed point only).
    pub fixed: Option<FixedScale>,
    /// `samples * 2^-(k+1)`: the largest possible difference of any sum from the exact sum of
    /// its weights, besides the final rounding (2^-53 relative). Fixed point only.
    pub error_bound: Option<f64>,
    /// Whether the same input gives the same bits on every run, strategy and backend.
    pub deterministic: bool,
    /// The shared-memory atomics that ran (GPU block strategies, fixed point).
    pub shared_atomics: Option<SharedAtomics>,
}

/// A weighted histogram: per selected channel, the summed weights per bin and of the samples that
/// fell in no bin.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WeightedHistogram {
    /// `sums[k][b]`: summed weights of the k-th selected channel's samples in bin `b`.
    pub sums: Vec<Vec<f64>>,
    /// Summed weights of the samples below the first edge, per selected channel.
    pub below: Vec<f64>,
    /// Summed weights of the samples at or above the last edge, per selected channel.
    pub above: Vec<f64>,
    /// Summed weights of the NaN samples, per selected channel.
    pub nan: Vec<f64>,
    /// How many samples were below the first edge, per selected channel.
    pub below_count: Vec<u64>,
    /// How many samples were at or above the last edge, per selected channel.
    pub above_count: Vec<u64>,
    /// How many samples were NaN, per selected channel.
    pub nan_count: Vec<u64>,
    /// How the sums were formed, and their error bound.
    pub weighting: Weighting,
    /// The backend that counted ("cpu" or "cuda").
    pub backend: &'static str,
    /// The strategy that ran (what `auto` resolved to).
    pub strategy: Strategy,
}

impl WeightedHistogram {
    /// Same bits in every sum and the same outlier counts (backend and strategy aside).
    pub fn same_bits(&self, other: &WeightedHistogram) -> bool {
        let bits = |v: &Vec<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        self.sums.len() == other.sums.len()
            && self.sums.iter().zip(&other.sums).all(|(a, b)| bits(a) == bits(b))
            && bits(&self.below) == bits(&other.below)
            && bits(&self.above) == bits(&other.above)
            && bits(&self.nan) == bits(&other.nan)
            && self.below_count == other.below_count
            && self.above_count == other.above_count
            && self.nan_count == other.nan_count
    }
}

// ---- the accumulation both backends share the shape of ------------------------------------------

/// What one sample adds: one (counts), its weight in fixed point, or its weight as a float.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ValueKind {
    /// One per sample.
    Count,
    /// The weight in fixed point at this scale.
    Fixed(FixedScale),
    /// The weight as a float.
    Float,
    /// The weight into an exact sum ([`crate::reduce::ExactSum`]); the raw value of a key is
    /// its rounded sum's f64 bits.
    Exact,
}

impl ValueKind {
    /// What `accumulation` adds per sample; fixed point without a scale means counting.
    pub fn new(accumulation: Accumulation, scale: Option<FixedScale>) -> ValueKind {
        match (accumulation, scale) {
            (Accumulation::FixedPoint, Some(s)) => ValueKind::Fixed(s),
            (Accumulation::FixedPoint, None) => ValueKind::Count,
            (Accumulation::FloatAtomics, _) => ValueKind::Float,
            (Accumulation::Exact, _) => ValueKind::Exact,
        }
    }

    pub(crate) fn weighting(self, shared_atomics: Option<SharedAtomics>) -> Option<Weighting> {
        match self {
            ValueKind::Count => None,
            ValueKind::Fixed(s) => Some(Weighting {
                accumulation: Accumulation::FixedPoint,
                fixed: Some(s),
                error_bound: Some(s.conversion_bound()),
                deterministic: true,
                shared_atomics,
            }),
            ValueKind::Float => Some(Weighting {
                accumulation: Accumulation::FloatAtomics,
                fixed: None,
                error_bound: None,
                deterministic: false,
                shared_atomics: None,
            }),
            // Correctly rounded: nothing besides the final rounding.
            ValueKind::Exact => Some(Weighting {
                accumulation: Accumulation::Exact,
                fixed: None,
                error_bound: Some(0.0),
                deterministic: true,
                shared_atomics: None,
            }),
        }
    }

    /// One raw 64-bit accumulator as the value it stands for.
    pub(crate) fn decode(self, raw: u64) -> f64 {
        match self {
            ValueKind::Count => raw as f64,
            ValueKind::Fixed(s) => s.to_f64(raw as i64),
            ValueKind::Float | ValueKind::Exact => f64::from_bits(raw),
        }
    }
}

/// Raw accumulators, as both backends produce them: `values` per key (u64 counts, i64 fixed-point
/// sums as u64, or f64 bits), the same for the outlier keys, and the outlier keys' sample counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Raw {
    pub values: Vec<u64>,
    pub outlier_values: Vec<u64>,
    pub outlier_counts: Vec<u64>,
}

/// Keys: `[0, width)` bins, then `outs` outlier keys, then one trash key (`width + outs`).
pub(crate) struct KeySpace {
    pub width: usize,
    pub outs: usize,
}

struct Acc {
    values: Vec<u64>,
    floats: Vec<f64>,
    counts: Vec<u64>,
}

/// Samples per sequential piece of the CPU backend's loop.
const PIECE: usize = 1 << 15;

/// The CPU backend's accumulation: rayon workers with private accumulators over pieces of the
/// input, merged at the end. Fixed point and counts merge with wrapping integer adds, so the
/// result does not depend on how the work was split.
pub(crate) fn cpu_accumulate(
    n: usize,
    keys: &KeySpace,
    kind: ValueKind,
    key: impl Fn(usize) -> usize + Sync,
    weight: impl Fn(usize) -> f64 + Sync,
) -> Raw {
    if kind == ValueKind::Exact {
        return super::weighted_exact::cpu_accumulate_exact(n, keys, key, weight);
    }
    let total = keys.width + keys.outs + 1;
    let float = matches!(kind, ValueKind::Float);
    let new = || Acc {
        values: if float { Vec::new() } else { vec![0; total] },
        floats: if float { vec![0.0; total] } else { Vec::new() },
        counts: vec![0; total],
    };
    let acc = (0..n.div_ceil(PIECE))
        .into_par_iter()
        .fold(new, |mut a, piece| {
            let range = piece * PIECE..((piece + 1) * PIECE).min(n);
            match kind {
                ValueKind::Count => {
                    for i in range {
                        a.values[key(i)] += 1;
                    }
                }
                ValueKind::Fixed(s) => {
                    let scale = s.scale();
                    for i in range {
                        let k = key(i);
                        a.values[k] = a.values[k].wrapping_add(s.to_fixed(weight(i), scale) as u64);
                        a.counts[k] += 1;
                    }
                }
                ValueKind::Float | ValueKind::Exact => {
                    for i in range {
                        let k = key(i);
                        a.floats[k] += weight(i);
                        a.counts[k] += 1;
                    }
                }
            }
            a
        })
        .reduce(new, |mut a, b| {
            for (x, y) in a.values.iter_mut().zip(&b.values) {
                *x = x.wrapping_add(*y);
            }
            for (x, y) in a.floats.iter_mut().zip(&b.floats) {
                *x += y;
            }
            for (x, y) in a.counts.iter_mut().zip(&b.counts) {
                *x += y;
            }
            a
        });
    let w = keys.width;
    let values: Vec<u64> = if float { acc.floats.iter().map(|f| f.to_bits()).collect() } else { acc.values };
    let counts = if matches!(kind, ValueKind::Count) { values.clone() } else { acc.counts };
    Raw {
        values: values[..w].to_vec(),
        outlier_values: values[w..w + keys.outs].to_vec(),
        outlier_counts: counts[w..w + keys.outs].to_vec(),
    }
}

/// The key of sample `i` of a 1-D histogram (layout of the GPU kernel): `slot * bins + bin`, then
/// `width + slot * 3 + {0 below, 1 above, 2 NaN}`, then trash for unselected channels.
pub(crate) fn key_1d<T: Sample>(
    rule: &BinRule,
    slots: &[i32],
    bins: usize,
    width: usize,
    trash: usize,
    i: usize,
    x: T,
) -> usize {
    let slot = slots[i % slots.len()];
    if slot < 0 {
        return trash;
    }
    let b = rule.bin(x);
    if b >= 0 {
        slot as usize * bins + b as usize
    } else {
        width + slot as usize * 3 + (-1 - b) as usize
    }
}

/// An error unless there is one weight per sample.
fn check_weight_count(samples: usize, weights: usize) -> Result<()> {
    if samples != weights {
        return Err(Error::invalid(format!(
            "{samples} samples but {weights} weights: there must be one weight per sample"
        )));
    }
    Ok(())
}

/// Checks that there is one weight per sample and, but for exact sums (which take NaN and
/// infinities as IEEE does), that every weight is finite; finds the fixed-point scale (None for
/// float and exact accumulation).
pub fn prepare<W: Weight>(samples: usize, weights: &[W], accumulation: Accumulation) -> Result<Option<FixedScale>> {
    check_weight_count(samples, weights.len())?;
    if accumulation == Accumulation::Exact {
        return super::weighted_exact::check_samples(samples).map(|_| None);
    }
    let scale = FixedScale::of(weights)?;
    Ok((accumulation == Accumulation::FixedPoint).then_some(scale))
}

/// [`prepare`] for weights on the device: their largest magnitude from one min/max reduction
/// there (a read of two numbers), not a copy of the weights to the host. The weights are read
/// back only to name the first NaN or infinite one in the error.
pub fn prepare_device<W: Weight>(
    dev: &Arc<CudaDevice>,
    samples: usize,
    weights: &DeviceView<'_, W>,
    accumulation: Accumulation,
) -> Result<Option<FixedScale>> {
    check_weight_count(samples, weights.len())?;
    if accumulation == Accumulation::Exact {
        return super::weighted_exact::check_samples(samples).map(|_| None);
    }
    if weights.is_empty() {
        return Ok((accumulation == Accumulation::FixedPoint).then(|| FixedScale::new(0.0, 0)));
    }
    let Some(max_abs) = device_max_abs(dev, weights)? else {
        return prepare(samples, &dev.stream().download(weights)?, accumulation);
    };
    Ok((accumulation == Accumulation::FixedPoint).then(|| FixedScale::new(max_abs, samples as u64)))
}

/// A weighted 1-D histogram from raw accumulators.
pub(crate) fn weighted_from_raw(
    spec: &HistogramSpec,
    raw: &Raw,
    kind: ValueKind,
    backend: &'static str,
    strategy: Strategy,
    shared: Option<SharedAtomics>,
) -> WeightedHistogram {
    let bins = spec.bins.count();
    let slots = spec.channels.selected.len();
    let d = |v: u64| kind.decode(v);
    WeightedHistogram {
        sums: (0..slots).map(|k| raw.values[k * bins..(k + 1) * bins].iter().map(|&v| d(v)).collect()).collect(),
        below: (0..slots).map(|k| d(raw.outlier_values[3 * k])).collect(),
        above: (0..slots).map(|k| d(raw.outlier_values[3 * k + 1])).collect(),
        nan: (0..slots).map(|k| d(raw.outlier_values[3 * k + 2])).collect(),
        below_count: (0..slots).map(|k| raw.outlier_counts[3 * k]).collect(),
        above_count: (0..slots).map(|k| raw.outlier_counts[3 * k + 1]).collect(),
        nan_count: (0..slots).map(|k| raw.outlier_counts[3 * k + 2]).collect(),
        weighting: kind.weighting(shared).expect("weighted"),
        backend,
        strategy,
    }
}

/// The CPU backend's weighted 1-D histogram.
pub fn cpu_histogram_weighted<T: Sample, W: Weight>(
    samples: &[T],
    weights: &[W],
    spec: &HistogramSpec,
    accumulation: Accumulation,
) -> Result<WeightedHistogram> {
    spec.validate()?;
    let scale = prepare(samples.len(), weights, accumulation)?;
    let kind = ValueKind::new(accumulation, scale);
    let raw = cpu_weighted_raw(samples, weights, spec, kind);
    Ok(weighted_from_raw(spec, &raw, kind, "cpu", Strategy::ThreadPrivate, None))
}

/// The CPU backend's raw accumulators of a weighted 1-D histogram summed as `kind` says (one
/// weight per sample, checked by the caller).
pub(crate) fn cpu_weighted_raw<T: Sample, W: Weight>(
    samples: &[T],
    weights: &[W],
    spec: &HistogramSpec,
    kind: ValueKind,
) -> Raw {
    let rule = BinRule::new::<T>(spec);
    let slots = spec.channels.slots();
    let bins = spec.bins.count();
    let keys = KeySpace { width: bins * spec.channels.selected.len(), outs: 3 * spec.channels.selected.len() };
    let trash = keys.width + keys.outs;
    cpu_accumulate(
        samples.len(),
        &keys,
        kind,
        |i| key_1d(&rule, &slots, bins, keys.width, trash, i, samples[i]),
        |i| weights[i].to_f64(),
    )
}

/// 2-D outlier keys, in the kernel's order.
pub(crate) const X_BELOW: usize = 0;
pub(crate) const X_ABOVE: usize = 1;
pub(crate) const Y_BELOW: usize = 2;
pub(crate) const Y_ABOVE: usize = 3;
pub(crate) const NAN_2D: usize = 4;

/// The key of one (x, y) pair: NaN in either coordinate first, then x out of range, then y.
#[inline(always)]
pub(crate) fn key_2d<T: Sample>(rx: &BinRule, ry: &BinRule, bins_y: usize, width: usize, x: T, y: T) -> usize {
    if x.is_nan() || y.is_nan() {
        return width + NAN_2D;
    }
    match rx.bin(x) {
        BELOW => width + X_BELOW,
        ABOVE => width + X_ABOVE,
        bx => match ry.bin(y) {
            BELOW => width + Y_BELOW,
            ABOVE => width + Y_ABOVE,
            by => bx as usize * bins_y + by as usize,
        },
    }
}

/// A 2-D histogram from raw accumulators.
pub(crate) fn hist2d_from_raw(
    bins_x: usize,
    bins_y: usize,
    raw: &Raw,
    kind: ValueKind,
    backend: &'static str,
    strategy: Strategy,
    shared: Option<SharedAtomics>,
) -> Histogram2d {
    let o = |v: &[u64]| Outliers2d {
        x_below: v[X_BELOW],
        x_above: v[X_ABOVE],
        y_below: v[Y_BELOW],
        y_above: v[Y_ABOVE],
        nan: v[NAN_2D],
    };
    let weighted = !matches!(kind, ValueKind::Count);
    let dv: Vec<f64> = raw.outlier_values.iter().map(|&v| kind.decode(v)).collect();
    Histogram2d {
        bins_x,
        bins_y,
        counts: if weighted { Vec::new() } else { raw.values.clone() },
        sums: if weighted { raw.values.iter().map(|&v| kind.decode(v)).collect() } else { Vec::new() },
        outliers: o(&raw.outlier_counts),
        outlier_sums: weighted.then(|| Outliers2d {
            x_below: dv[X_BELOW],
            x_above: dv[X_ABOVE],
            y_below: dv[Y_BELOW],
            y_above: dv[Y_ABOVE],
            nan: dv[NAN_2D],
        }),
        weighting: kind.weighting(shared),
        backend,
        strategy,
    }
}
