//! The CUDA side of weighted and 2-D histograms (`histogram_general.cu`): the kernel family,
//! its parameters, and the plan that resolves the strategy, loads the specialisation and
//! launches it (one pass per L2-sized range of keys for global-l2).

use super::axis::{binning_for, Binning, DeviceAxis};
use super::hist2d::Histogram2dSpec;
use super::partition::{PartitionKeys, PartitionParams, PartitionPlan, PartitionSource};
use super::policy::{self, KernelStrategy, Tuning};
use super::strategy::partition_preferred;
use super::weighted::{Raw, SharedAtomics, ValueKind, Weight};
use super::weighted_exact::ExactLayout;
use super::{Bins, HistogramSpec, Strategy, MAX_CHANNELS};
use crate::device::params::KernelParams;
use crate::device::registry::KernelFamily;
use crate::device::{CudaDevice, DevPtr, DeviceBuffer, Kernel, LaunchShape, Stream};
use crate::error::{Error, Result};
use crate::sample::{DType, Sample};
use std::marker::PhantomData;
use std::sync::Arc;

/// Threads per block of every general kernel.
pub const GENERAL_BLOCK_THREADS: u32 = 256;
/// Samples a thread has in flight (UNROLL in the kernel).
const UNROLL: u64 = 8;

crate::kernel_codes! {
    /// How the general kernel accumulates weights (`TALLY_ACCUM`).
    pub enum AccumCode as "TALLY_ACCUM" {
        /// 64-bit fixed point in shared memory as 32-bit halves with a carry (and counts).
        Halves,
        /// 64-bit fixed point with native 64-bit shared atomics.
        Native64,
        /// Float atomics in the weight's type (not deterministic).
        Float,
        /// Exact sums: 128-bit digit sums per key in global memory (`tally_histogram_exact`).
        Exact,
    }
}

crate::kernel_codes! {
    /// The weights' type (`TALLY_WEIGHT`).
    pub enum WeightCode as "TALLY_WEIGHT" {
        /// No weights: counts.
        None,
        /// f32 weights.
        F32,
        /// f64 weights.
        F64,
    }
}

crate::kernel_params! {
    /// What `tally_histogram_general` reads.
    pub(crate) struct GeneralParams as "GeneralParams" {
        /// Samples, or x coordinates (`const Sample*`).
        x: DevPtr<u8>,
        /// y coordinates (2-D).
        y: DevPtr<u8>,
        /// One weight per sample (`const Weight*`), or null for counts.
        weights: DevPtr<u8>,
        n: u64,
        /// Elements from one sample's coordinate to the next's: 1, or 2 for interleaved pairs.
        stride: u64,
        values: DevPtr<u64>,
        outlier_values: DevPtr<u64>,
        outlier_counts: DevPtr<u64>,
        /// `tally_general_probe`: where the probed keys go.
        probe: DevPtr<i32>,
        /// Fixed point: 2^k.
        scale: f64,
        ax: super::axis::AxisParams,
        ay: super::axis::AxisParams,
        /// 1-D: bins per slot; 2-D: bins_x * bins_y.
        bins: u32,
        bins_y: u32,
        nslots: u32,
        slice_lo: u32,
        slice_width: u32,
        first_pass: u32,
        /// `tally_general_probe`: samples (pairs) to look at.
        probe_k: u32,
        slot: [i32; MAX_CHANNELS as usize],
    }
}

/// `histogram_general.cu`: weighted and 2-D histograms.
pub(crate) static FAMILY: KernelFamily = KernelFamily {
    name: "histogram_general.cu",
    source: include_str!("../../kernels/histogram_general.cu"),
    params: || vec![super::axis::AxisParams::layout(), GeneralParams::layout()],
    variants: |_| GeneralVariant::all().iter().map(GeneralVariant::defines).collect(),
};

/// What one sample adds, as the kernel's TALLY_WEIGHT / TALLY_ACCUM see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accum {
    /// Each sample adds one (a counted histogram).
    Count,
    /// Fixed point; the shared-memory atomics of the block strategy.
    Fixed(SharedAtomics),
    /// The weight as a float, with float atomics (not deterministic).
    Float,
    /// The exact sum per key (global atomics on its digits).
    Exact,
}

/// One specialisation of the general kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GeneralVariant {
    /// The sample type (both coordinates', in 2-D).
    pub dtype: DType,
    /// 1-D: the binning; 2-D: the x axis's.
    pub binning: Binning,
    /// 2-D: the y axis's binning.
    pub binning_y: Option<Binning>,
    /// 1-D interleaved channels (2-D: 1).
    pub channels: u32,
    /// f32 or f64 weights; None for counts.
    pub weight: Option<DType>,
    /// What one sample adds, and how.
    pub accum: Accum,
    /// GlobalAtomic, BlockShared or GlobalL2.
    pub strategy: Strategy,
}

/// The strategies the general kernel has.
pub const GENERAL_STRATEGIES: [Strategy; 3] = [Strategy::GlobalAtomic, Strategy::BlockShared, Strategy::GlobalL2];

impl GeneralVariant {
    /// Native 64-bit shared atomics only change the block strategy's bins; elsewhere the same
    /// kernel (outliers in shared memory by halves) runs.
    fn normalised(mut self) -> Self {
        if self.strategy != Strategy::BlockShared && self.accum == Accum::Fixed(SharedAtomics::Native64) {
            self.accum = Accum::Fixed(SharedAtomics::Halves);
        }
        self
    }

    /// The preprocessor defines that compile this specialisation of `histogram_general.cu`.
    pub fn defines(&self) -> Vec<(&'static str, String)> {
        let mut d = vec![
            ("TALLY_SAMPLE", self.dtype.cuda_type().to_string()),
            ("TALLY_DIMS", if self.binning_y.is_some() { "2" } else { "1" }.to_string()),
        ];
        match self.binning_y {
            Some(by) => {
                d.push(("TALLY_BINNING_X", self.binning.cpp().to_string()));
                d.push(("TALLY_BINNING_Y", by.cpp().to_string()));
            }
            None => {
                d.push(("TALLY_BINNING", self.binning.cpp().to_string()));
                d.push(("TALLY_CHANNELS", self.channels.to_string()));
            }
        }
        let weight = match self.weight {
            None => WeightCode::None,
            Some(DType::F32) => WeightCode::F32,
            Some(_) => WeightCode::F64,
        };
        d.push(("TALLY_WEIGHT", weight.cpp().to_string()));
        let accum = match self.accum {
            Accum::Count | Accum::Fixed(SharedAtomics::Halves) => AccumCode::Halves,
            Accum::Fixed(SharedAtomics::Native64) => AccumCode::Native64,
            Accum::Float => AccumCode::Float,
            Accum::Exact => AccumCode::Exact,
        };
        d.push(("TALLY_ACCUM", accum.cpp().to_string()));
        assert!(
            GENERAL_STRATEGIES.contains(&self.strategy),
            "{} is not a strategy of the general kernel",
            self.strategy
        );
        d.push(("TALLY_STRATEGY", KernelStrategy::of(self.strategy).cpp().to_string()));
        d.push(("TALLY_BLOCK_THREADS", GENERAL_BLOCK_THREADS.to_string()));
        d
    }

    /// Every specialisation tally can ask for (channel counts 1 and 4 stand for all), for the
    /// NVRTC check.
    pub fn all() -> Vec<GeneralVariant> {
        let accums = |weighted: bool, strategy: Strategy| -> Vec<(Option<DType>, Accum)> {
            if !weighted {
                return vec![(None, Accum::Count)];
            }
            let mut v = Vec::new();
            for w in [DType::F32, DType::F64] {
                v.push((Some(w), Accum::Fixed(SharedAtomics::Halves)));
                if strategy == Strategy::BlockShared {
                    v.push((Some(w), Accum::Fixed(SharedAtomics::Native64)));
                }
                v.push((Some(w), Accum::Float));
                if strategy == Strategy::GlobalAtomic {
                    v.push((Some(w), Accum::Exact));
                }
            }
            v
        };
        let mut out = Vec::new();
        // 1-D, weighted.
        for dtype in DType::ALL {
            for &binning in super::axis::binnings_of(dtype) {
                for channels in [1, 4] {
                    for strategy in GENERAL_STRATEGIES {
                        for (weight, accum) in accums(true, strategy) {
                            out.push(GeneralVariant {
                                dtype,
                                binning,
                                binning_y: None,
                                channels,
                                weight,
                                accum,
                                strategy,
                            });
                        }
                    }
                }
            }
        }
        // 2-D, counted and weighted.
        for dtype in GENERAL_2D_DTYPES {
            for bx in [Binning::Float, Binning::Edges] {
                for by in [Binning::Float, Binning::Edges] {
                    for strategy in GENERAL_STRATEGIES {
                        for weighted in [false, true] {
                            for (weight, accum) in accums(weighted, strategy) {
                                out.push(GeneralVariant {
                                    dtype,
                                    binning: bx,
                                    binning_y: Some(by),
                                    channels: 1,
                                    weight,
                                    accum,
                                    strategy,
                                });
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

/// Coordinate types of 2-D histograms on the GPU.
pub const GENERAL_2D_DTYPES: [DType; 2] = [DType::F32, DType::F64];

/// The binning of one 2-D axis on the GPU: the f64 rule or edges (floating-point coordinates).
fn binning_2d(bins: &Bins) -> Binning {
    if matches!(bins, Bins::Edges(_)) {
        Binning::Edges
    } else {
        Binning::Float
    }
}

/// Dynamic shared memory of one block: [table][outlier counts][accumulators].
fn shared_bytes(v: &GeneralVariant, width: usize, outs: usize) -> usize {
    let table = if v.binning == Binning::Table8 && v.binning_y.is_none() { 256 * 4 } else { 0 };
    if v.accum == Accum::Exact {
        return table;
    }
    let counts = (outs * 4).div_ceil(16) * 16;
    let keys = if v.strategy == Strategy::BlockShared { width } else { 0 } + outs + 1;
    let per_key = match v.accum {
        Accum::Count => 4,
        Accum::Fixed(_) => 8,
        Accum::Float => v.weight.map_or(4, |w| w.size()),
        Accum::Exact => 0,
    };
    table + counts + keys * per_key
}

/// The u64 words of the exact accumulators of `keys` keys (bins and outlier keys) with weights
/// of `weight`: refused, with the figures, where they would pass the stream's workspace limit.
fn exact_words(stream: &Stream, weight: DType, keys: usize) -> Result<usize> {
    let per_key = ExactLayout::of(weight).words_per_key();
    let limit = stream.workspace_limit();
    match keys.checked_mul(per_key) {
        Some(words) if words.saturating_mul(8) <= limit => Ok(words),
        _ => Err(Error::invalid(format!(
            "exact sums of {keys} bins and outlier keys need {} bytes of device memory ({} bytes a key, {weight} weights), \
             more than the workspace limit of {limit} bytes: use fewer bins, fixed point, or the CPU backend",
            (keys as u128) * per_key as u128 * 8,
            per_key * 8
        ))),
    }
}

/// What to count: a 1-D spec (weighted) or a 2-D one.
#[derive(Clone, Debug)]
pub enum GeneralSpec {
    /// A weighted 1-D histogram.
    OneD(HistogramSpec),
    /// A 2-D histogram, counted or weighted.
    TwoD(Histogram2dSpec),
}

/// What a general plan launches.
enum GeneralEngine {
    /// The general kernel, once per pass over an L2-sized range of keys (one pass but for
    /// global-l2).
    Kernel { kernel: Kernel<GeneralParams>, shape: LaunchShape, passes: Vec<(u32, u32)> },
    /// The partition's three kernels (2-D counts), into the plan's accumulators.
    Partition(Box<PartitionPlan>),
}

/// A weighted or 2-D histogram ready to launch on resident data of `T` (weights of `W`).
pub struct GeneralPlan<T, W> {
    dev: Arc<CudaDevice>,
    engine: GeneralEngine,
    params: GeneralParams,
    values: DeviceBuffer<u64>,
    outlier_values: DeviceBuffer<u64>,
    outlier_counts: DeviceBuffer<u64>,
    n: usize,
    _axes: Vec<DeviceAxis>,
    kind: ValueKind,
    strategy: Strategy,
    variant: GeneralVariant,
    _data: PhantomData<fn(T, W)>,
}

impl<T: Sample, W: Weight> GeneralPlan<T, W> {
    /// Prepares a histogram of `n` samples (pairs). `kind`: counts (2-D only), fixed point with
    /// its scale, or float atomics; `weighted`: whether weights of `W` come with the samples;
    /// `probe`: data of that length for `auto` to look at where its choice depends on them (2-D
    /// counts past one block's shared memory: the partition, unless one bin holds a large share
    /// and one pass of global-l2 holds every bin);
    /// without it, `auto` takes the data as spread.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        dev: &Arc<CudaDevice>,
        n: usize,
        spec: &GeneralSpec,
        weighted: bool,
        kind: ValueKind,
        requested: Strategy,
        shared_atomics: SharedAtomics,
        tuning: &Tuning,
        probe: Option<&GeneralInput<'_, T, W>>,
    ) -> Result<Self> {
        let info = dev.info();
        let stream = dev.stream();
        let (width, outs, binning, binning_y, channels, nslots) = match spec {
            GeneralSpec::OneD(s) => {
                s.validate()?;
                let nslots = s.channels.selected.len();
                (
                    s.bins.count() * nslots,
                    3 * nslots,
                    binning_for(T::DTYPE, &s.bins),
                    None,
                    s.channels.interleave,
                    nslots,
                )
            }
            GeneralSpec::TwoD(s) => {
                s.validate()?;
                if !GENERAL_2D_DTYPES.contains(&T::DTYPE) {
                    return Err(Error::invalid(format!(
                        "2-D histograms on the GPU take f32 or f64 coordinates, not {} (convert them, or use the CPU backend)",
                        T::DTYPE
                    )));
                }
                (s.x.count() * s.y.count(), 5, binning_2d(&s.x), Some(binning_2d(&s.y)), 1, 1)
            }
        };
        if weighted && !matches!(W::DTYPE, DType::F32 | DType::F64) {
            return Err(Error::invalid(format!("weights are f32 or f64, not {}", W::DTYPE)));
        }
        let accum = match kind {
            ValueKind::Count => Accum::Count,
            ValueKind::Fixed(_) => Accum::Fixed(shared_atomics),
            ValueKind::Float => Accum::Float,
            ValueKind::Exact => Accum::Exact,
        };
        let weight = weighted.then_some(W::DTYPE);
        let make = |strategy| {
            GeneralVariant { dtype: T::DTYPE, binning, binning_y, channels, weight, accum, strategy }.normalised()
        };
        let mut params = GeneralParams {
            n: n as u64,
            scale: match kind {
                ValueKind::Fixed(s) => s.scale(),
                _ => 1.0,
            },
            nslots: nslots as u32,
            slot: [-1; MAX_CHANNELS as usize],
            first_pass: 1,
            slice_lo: 0,
            slice_width: width as u32,
            ..Default::default()
        };
        let mut axes = Vec::new();
        match spec {
            GeneralSpec::OneD(s) => {
                axes.push(DeviceAxis::new::<T>(stream, &s.bins, binning)?);
                params.ax = axes[0].params;
                params.bins = s.bins.count() as u32;
                for (c, slot) in s.channels.slots().into_iter().enumerate() {
                    params.slot[c] = slot;
                }
            }
            GeneralSpec::TwoD(s) => {
                axes.push(DeviceAxis::new::<T>(stream, &s.x, binning)?);
                axes.push(DeviceAxis::new::<T>(stream, &s.y, binning_y.expect("2-D"))?);
                params.ax = axes[0].params;
                params.ay = axes[1].params;
                params.bins = width as u32;
                params.bins_y = s.y.count() as u32;
                params.slot[0] = 0;
            }
        }
        let fits = |s: Strategy| shared_bytes(&make(s), width, outs) <= info.smem_per_block_optin;
        // Counted pairs partition like 1-D samples, within the partition's reach.
        let partition_reach =
            binning_y.is_some() && accum == Accum::Count && width <= super::partition::max_keys_tuned(info, tuning);
        // The skew probe, where it decides: the top-bin share of `probe`'s pairs (0 without data),
        // taken at most once.
        let probe_top = |params: &GeneralParams| -> Result<f64> {
            match probe {
                Some(input) if n > 0 => probe::top_bin_fraction(dev, &make(Strategy::GlobalL2), params, input, width),
                _ => Ok(0.0),
            }
        };
        let mut top_bin_fraction = None;
        // Only three strategies here and the partition for 2-D counts: the per-warp and 16-bit
        // ones degrade to a block copy when it fits, everything else (clusters included, and the
        // partition where it cannot take the histogram) to L2-sized passes of global atomics.
        // Global-l2's keys a pass (64-bit counters in half the L2).
        let l2_pass = tuning.l2_pass_keys(info.l2_bytes, 8);
        let strategy = match requested {
            Strategy::ThreadPrivate => {
                return Err(Error::invalid("thread-private is the CPU backend's strategy; use --backend cpu"))
            }
            // Exact sums have one kernel: global atomics on every key's digits.
            _ if accum == Accum::Exact => Strategy::GlobalAtomic,
            Strategy::GlobalAtomic => Strategy::GlobalAtomic,
            Strategy::GlobalL2 => Strategy::GlobalL2,
            Strategy::Partition if partition_reach => Strategy::Partition,
            // As 1-D `auto` past its block copies (strategy::partition_preferred): the partition,
            // unless the probe finds one bin holding a large share (global-l2's warp aggregation)
            // and global-l2 counts every key in one pass of its 64-bit counters.
            Strategy::Auto if partition_reach && !fits(Strategy::BlockShared) => {
                let top = probe_top(&params)?;
                top_bin_fraction = Some(top);
                if partition_preferred(width, top, l2_pass) {
                    Strategy::Partition
                } else {
                    Strategy::GlobalL2
                }
            }
            _ if fits(Strategy::BlockShared) => Strategy::BlockShared,
            _ => Strategy::GlobalL2,
        };
        let variant = make(strategy);

        let value_words = match weight {
            Some(w) if accum == Accum::Exact => exact_words(stream, w, width + outs)?,
            _ => width,
        };
        let mut values = stream.alloc::<u64>(value_words, "histogram accumulators")?;
        let mut outlier_values = stream.alloc::<u64>(outs, "outlier accumulators")?;
        let mut outlier_counts = stream.alloc::<u64>(outs, "outlier counts")?;
        let cs = stream.cuda_stream();
        params.values = values.view_mut().ptr_mut(cs);
        params.outlier_values = outlier_values.view_mut().ptr_mut(cs);
        params.outlier_counts = outlier_counts.view_mut().ptr_mut(cs);

        let engine = if strategy == Strategy::Partition {
            // The scatter's ranking as 1-D's: warp-matched where the probe found a bin with a
            // share past partition::PARTITION_MATCH_MIN_TOP_FRACTION, unless the caller fixed it.
            let mut tuning = tuning.clone();
            if tuning.partition_match.is_none() {
                let top = match top_bin_fraction {
                    Some(t) => t,
                    None => probe_top(&params)?,
                };
                tuning.partition_match = Some(super::partition::match_ranks_preferred(top));
            }
            let keys = PartitionKeys::Pairs {
                dtype: T::DTYPE,
                binning_x: binning,
                binning_y: binning_y.expect("pairs partition"),
            };
            let pp = PartitionParams {
                counts: params.values.cast(),
                outliers: params.outlier_values,
                axis: params.ax,
                axis_y: params.ay,
                nslots: 1,
                width: width as u32,
                bins_y: params.bins_y,
                ..Default::default()
            };
            GeneralEngine::Partition(Box::new(PartitionPlan::new(dev, &keys, n, pp, &tuning)?))
        } else {
            let smem = shared_bytes(&variant, width, outs);
            let entry = if accum == Accum::Exact { "tally_histogram_exact" } else { "tally_histogram_general" };
            let kernel = dev.kernel::<GeneralParams>(&FAMILY, &variant.defines(), entry, smem)?;
            let threads = GENERAL_BLOCK_THREADS;
            let max_grid = info.multiprocessors as u64 * kernel.blocks_per_sm(threads, smem)? as u64;
            let per_thread = if accum == Accum::Exact { 1 } else { UNROLL };
            let grid = policy::grid(n as u64, threads as u64 * per_thread, max_grid);
            let slice = if strategy == Strategy::GlobalL2 { l2_pass } else { width };
            let passes = policy::passes(width, slice.clamp(1, width.max(1)));
            GeneralEngine::Kernel { kernel, shape: LaunchShape::new(grid as u32, threads, smem), passes }
        };
        Ok(GeneralPlan {
            dev: dev.clone(),
            engine,
            params,
            values,
            outlier_values,
            outlier_counts,
            n,
            _axes: axes,
            kind,
            strategy,
            variant,
            _data: PhantomData,
        })
    }

    /// The strategy that runs.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// The kernel specialisation that runs; for a partition plan, the general kernel's variant
    /// with strategy `Partition`, which names no general kernel (its `defines` would refuse it).
    pub fn variant(&self) -> &GeneralVariant {
        &self.variant
    }

    /// Passes over the samples one launch makes (the partition's: slices of the input).
    pub fn passes(&self) -> usize {
        match &self.engine {
            GeneralEngine::Kernel { passes, .. } => passes.len(),
            GeneralEngine::Partition(p) => p.layout().slices,
        }
    }

    /// The partition's slices and bytes of workspace scratch, where it runs.
    pub fn partition_scratch(&self) -> Option<(usize, usize)> {
        match &self.engine {
            GeneralEngine::Partition(p) => Some((p.layout().slices, p.layout().scratch_bytes)),
            GeneralEngine::Kernel { .. } => None,
        }
    }

    /// The shared-memory atomics of the fixed-point block strategy, when that ran.
    pub fn shared_atomics(&self) -> Option<SharedAtomics> {
        match self.variant.accum {
            Accum::Fixed(s) if self.strategy == Strategy::BlockShared => Some(s),
            _ => None,
        }
    }

    /// Zeroes the accumulators and queues the kernel (once per pass) on `stream`.
    pub fn launch(&mut self, stream: &Stream, input: &GeneralInput<'_, T, W>) -> Result<()> {
        if input.len() != self.n {
            return Err(Error::invalid(format!("this plan counts {} samples, but {} were given", self.n, input.len())));
        }
        if input.weights.as_ref().is_some_and(|w| w.len() != self.n)
            || input.weights.is_some() != self.variant.weight.is_some()
        {
            return Err(Error::invalid("the weights must match the plan: one per sample, or none"));
        }
        if self.variant.binning_y.is_some() {
            input.validate_pairs()?;
        }
        stream.memset_zeros(&mut self.values.view_mut())?;
        stream.memset_zeros(&mut self.outlier_values.view_mut())?;
        stream.memset_zeros(&mut self.outlier_counts.view_mut())?;
        if self.n == 0 {
            return Ok(());
        }
        let cs = stream.cuda_stream();
        let x = input.x.ptr(cs);
        let (y, stride) = match (&input.y, input.interleaved) {
            (Some(y), _) => (y.ptr(cs), 1),
            (None, true) => (x.offset(1), 2),
            (None, false) => (DevPtr::default(), 1),
        };
        let base = GeneralParams {
            x: x.cast(),
            y: y.cast(),
            stride,
            weights: input.weights.as_ref().map_or(DevPtr::default(), |w| w.ptr(cs).cast()),
            ..self.params
        };
        match &self.engine {
            GeneralEngine::Kernel { kernel, shape, passes } => {
                for (i, &(lo, keys)) in passes.iter().enumerate() {
                    let p = GeneralParams { slice_lo: lo, slice_width: keys, first_pass: (i == 0) as u32, ..base };
                    stream.launch(kernel, *shape, &p)?;
                }
                Ok(())
            }
            GeneralEngine::Partition(plan) => {
                // Apart, y is its own array; interleaved, the partition's loads read whole pairs.
                let interleaved = input.y.is_none();
                let source = PartitionSource {
                    samples: base.x,
                    samples_y: if interleaved { DevPtr::default() } else { base.y },
                    interleaved,
                };
                plan.launch(stream, source, self.n, std::mem::size_of::<T>())
            }
        }
    }

    /// Waits for `stream` and reads the raw accumulators back.
    pub(crate) fn read_raw(&self, stream: &Stream) -> Result<Raw> {
        let values = stream.download(&self.values.view())?;
        if let (Accum::Exact, Some(w)) = (self.variant.accum, self.variant.weight) {
            let layout = ExactLayout::of(w);
            let outs = self.outlier_values.len();
            return Ok(layout.raw(&values, values.len() / layout.words_per_key() - outs, outs));
        }
        let outlier_values = stream.download(&self.outlier_values.view())?;
        let outlier_counts = if matches!(self.kind, ValueKind::Count) {
            outlier_values.clone()
        } else {
            stream.download(&self.outlier_counts.view())?
        };
        Ok(Raw { values, outlier_values, outlier_counts })
    }

    /// The weighted 1-D histogram (spec: the one the plan was made with).
    pub fn read_weighted(&self, stream: &Stream, spec: &HistogramSpec) -> Result<super::WeightedHistogram> {
        let raw = self.read_raw(stream)?;
        Ok(super::weighted::weighted_from_raw(spec, &raw, self.kind, "cuda", self.strategy, self.shared_atomics()))
    }

    /// The 2-D histogram (spec: the one the plan was made with).
    pub fn read_2d(&self, stream: &Stream, spec: &Histogram2dSpec) -> Result<super::Histogram2d> {
        let raw = self.read_raw(stream)?;
        Ok(super::weighted::hist2d_from_raw(
            spec.x.count(),
            spec.y.count(),
            &raw,
            self.kind,
            "cuda",
            self.strategy,
            self.shared_atomics(),
        ))
    }

    /// Fills the accumulators with `byte`: tests poison them before a launch, so that values
    /// the launch leaves unwritten show.
    pub fn fill_outputs(&mut self, stream: &Stream, byte: u8) -> Result<()> {
        let word = u64::from_ne_bytes([byte; 8]);
        for buf in [&mut self.values, &mut self.outlier_values, &mut self.outlier_counts] {
            stream.copy_to_device(&vec![word; buf.len()], &mut buf.view_mut())?;
        }
        Ok(())
    }

    /// The device this plan runs on.
    pub fn device(&self) -> &Arc<CudaDevice> {
        &self.dev
    }

    /// The accumulators (values, outlier values, outlier counts) and what their words hold, for
    /// combining plans of several devices in place.
    pub(crate) fn accumulators_mut(&mut self) -> (ValueKind, [&mut DeviceBuffer<u64>; 3]) {
        (self.kind, [&mut self.values, &mut self.outlier_values, &mut self.outlier_counts])
    }
}

mod input;
mod probe;
pub use input::GeneralInput;

#[cfg(test)]
mod tests;
