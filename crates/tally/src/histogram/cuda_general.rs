//! The CUDA side of weighted and 2-D histograms (`histogram_general.cu`): resolve the strategy,
//! specialise and load the kernel, launch (one pass per L2-sized range of keys for global-l2),
//! read the raw accumulators back.

use super::binning::{int_bounds, BinRule};
use super::cuda::{binning_for, ceil_f32, f32_slack, f64_slack, knob, l2_slice, Binning};
use super::hist2d::{Histogram2dSpec, Pairs};
use super::weighted::{Raw, SharedAtomics, ValueKind};
use super::{Bins, HistogramSpec, Strategy, MAX_CHANNELS};
use crate::device::cuda::{driver, CudaDevice};
use crate::error::{Error, Result};
use crate::kernels;
use crate::sample::{DType, Sample};
use cudarc::driver::{CudaFunction, CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// Threads per block of every general kernel.
pub const GENERAL_BLOCK_THREADS: u32 = 256;
/// Samples a thread has in flight (UNROLL in the kernel).
const UNROLL: u64 = 8;

/// How one axis is binned. Must match `AxisParams` in histogram_general.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct AxisParams {
    lut: u64,
    edges: u64,
    lower_i: i64,
    upper_i: i64,
    range_i: u64,
    lower: f64,
    upper: f64,
    range: f64,
    bins_f: f64,
    scale_d: f64,
    inv_range: f64,
    slack_d: f64,
    scale_f: f32,
    lo32: f32,
    hi32: f32,
    lower_f: f32,
    slack_f: f32,
    bins: u32,
    num_edges: u32,
    pad: u32,
}

/// Kernel parameters. Must match `GeneralParams` in histogram_general.cu field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct GeneralParams {
    x: u64,
    y: u64,
    weights: u64,
    n: u64,
    stride: u64,
    values: u64,
    outlier_values: u64,
    outlier_counts: u64,
    scale: f64,
    ax: AxisParams,
    ay: AxisParams,
    bins: u32,
    bins_y: u32,
    nslots: u32,
    slice_lo: u32,
    slice_width: u32,
    first_pass: u32,
    slot: [i32; MAX_CHANNELS as usize],
}
// SAFETY: plain old data with the C layout the kernel declares.
unsafe impl DeviceRepr for GeneralParams {}

/// What one sample adds, as the kernel's TALLY_WEIGHT / TALLY_ACCUM see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accum {
    Count,
    /// Fixed point; the shared-memory atomics of the block strategy.
    Fixed(SharedAtomics),
    Float,
}

/// One specialisation of the general kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GeneralVariant {
    pub dtype: DType,
    /// 1-D: the binning; 2-D: the x axis's.
    pub binning: Binning,
    /// 2-D: the y axis's binning.
    pub binning_y: Option<Binning>,
    /// 1-D interleaved channels (2-D: 1).
    pub channels: u32,
    /// f32 or f64 weights; None for counts.
    pub weight: Option<DType>,
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

    pub fn defines(&self) -> Vec<(&'static str, String)> {
        let mut d = vec![
            ("TALLY_SAMPLE", self.dtype.cuda_type().to_string()),
            ("TALLY_DIMS", if self.binning_y.is_some() { "2" } else { "1" }.to_string()),
        ];
        match self.binning_y {
            Some(by) => {
                d.push(("TALLY_BINNING_X", (self.binning as u32).to_string()));
                d.push(("TALLY_BINNING_Y", (by as u32).to_string()));
            }
            None => {
                d.push(("TALLY_BINNING", (self.binning as u32).to_string()));
                d.push(("TALLY_CHANNELS", self.channels.to_string()));
            }
        }
        let weight = match self.weight {
            None => 0,
            Some(DType::F32) => 1,
            Some(_) => 2,
        };
        d.push(("TALLY_WEIGHT", weight.to_string()));
        let accum = match self.accum {
            Accum::Count | Accum::Fixed(SharedAtomics::Halves) => 0,
            Accum::Fixed(SharedAtomics::Native64) => 1,
            Accum::Float => 2,
        };
        d.push(("TALLY_ACCUM", accum.to_string()));
        let strategy = match self.strategy {
            Strategy::GlobalAtomic => 0,
            Strategy::BlockShared => 1,
            Strategy::GlobalL2 => 5,
            s => unreachable!("{s} is not a strategy of the general kernel"),
        };
        d.push(("TALLY_STRATEGY", strategy.to_string()));
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
            }
            v
        };
        let mut out = Vec::new();
        // 1-D, weighted.
        for dtype in DType::ALL {
            let binnings: &[Binning] = match dtype {
                DType::U8 => &[Binning::Table8, Binning::Integer32, Binning::Integer],
                DType::F32 | DType::F64 => &[Binning::Float, Binning::Edges],
                DType::I64 => &[Binning::Integer, Binning::Float, Binning::Edges],
                _ => &[Binning::Integer32, Binning::Integer, Binning::Float, Binning::Edges],
            };
            for &binning in binnings {
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

fn outs_per_slot(two_d: bool) -> usize {
    if two_d {
        5
    } else {
        3
    }
}

/// Dynamic shared memory of one block: [table][outlier counts][accumulators].
fn shared_bytes(v: &GeneralVariant, width: usize, outs: usize) -> usize {
    let table = if v.binning == Binning::Table8 && v.binning_y.is_none() { 256 * 4 } else { 0 };
    let counts = (outs * 4).div_ceil(16) * 16;
    let keys = if v.strategy == Strategy::BlockShared { width } else { 0 } + outs + 1;
    let per_key = match v.accum {
        Accum::Count => 4,
        Accum::Fixed(_) => 8,
        Accum::Float => v.weight.map_or(4, |w| w.size()),
    };
    table + counts + keys * per_key
}

/// Where the samples are on the device.
#[derive(Clone, Copy, Debug)]
pub struct GeneralInput {
    /// Samples, or x coordinates.
    pub x: u64,
    /// y coordinates (2-D; `x + size` for interleaved pairs).
    pub y: u64,
    /// 1, or 2 for interleaved pairs.
    pub stride: u64,
    /// Weights, or 0 for counts.
    pub weights: u64,
    /// Samples (pairs).
    pub n: usize,
}

/// What to count: a 1-D spec (weighted) or a 2-D one.
#[derive(Clone, Debug)]
pub enum GeneralSpec {
    OneD(HistogramSpec),
    TwoD(Histogram2dSpec),
}

/// A weighted or 2-D histogram ready to launch on resident data.
pub struct GeneralPlan {
    dev: Arc<CudaDevice>,
    func: CudaFunction,
    params: GeneralParams,
    cfg: LaunchConfig,
    passes: Vec<(u32, u32)>,
    values: CudaSlice<u64>,
    outlier_values: CudaSlice<u64>,
    outlier_counts: CudaSlice<u64>,
    width: usize,
    outs: usize,
    _tables: Vec<CudaSlice<i32>>,
    _edges: Vec<CudaSlice<f64>>,
    pub kind: ValueKind,
    pub strategy: Strategy,
    pub variant: GeneralVariant,
}

/// The fields of one axis; uploads its table or edges.
fn axis_params<T: Sample>(
    dev: &Arc<CudaDevice>,
    bins: &Bins,
    binning: Binning,
    tables: &mut Vec<CudaSlice<i32>>,
    edges: &mut Vec<CudaSlice<f64>>,
) -> Result<AxisParams> {
    let spec = HistogramSpec { bins: bins.clone(), channels: Default::default() };
    let mut a = AxisParams { bins: bins.count() as u32, ..Default::default() };
    match binning {
        Binning::Table8 => {
            let t = dev.upload(&BinRule::new::<T>(&spec).lut8(), "bin table")?;
            a.lut = dev.ptr(&t);
            tables.push(t);
        }
        Binning::Integer | Binning::Integer32 => {
            let b = int_bounds(bins).expect("integer binning has integer bounds");
            a.lower_i = b.lower;
            a.upper_i = b.upper;
            a.range_i = b.range;
            a.scale_f = (b.bins as f64 / b.range as f64) as f32;
            a.scale_d = b.bins as f64 / b.range as f64;
        }
        Binning::Float => {
            let Bins::Even { bins, lower, upper } = *bins else { unreachable!() };
            a.lower = lower;
            a.upper = upper;
            a.range = upper - lower;
            a.bins_f = bins as f64;
            a.inv_range = 1.0 / (upper - lower);
            a.slack_d = f64_slack(bins);
            a.lo32 = ceil_f32(lower);
            a.hi32 = ceil_f32(upper);
            a.lower_f = lower as f32;
            a.scale_f = (bins as f64 / (upper - lower)) as f32;
            a.slack_f = f32_slack(lower, upper, bins);
        }
        Binning::Edges => {
            let Bins::Edges(e) = bins else { unreachable!() };
            let buf = dev.upload(e, "bin edges")?;
            a.edges = dev.ptr(&buf);
            a.num_edges = e.len() as u32;
            edges.push(buf);
        }
    }
    Ok(a)
}

impl GeneralPlan {
    /// Prepares a histogram of resident data. `kind`: counts (2-D only), fixed point with its
    /// scale, or float atomics; `weight`: the weights' type (None for counts).
    pub fn new<T: Sample>(
        dev: &Arc<CudaDevice>,
        input: GeneralInput,
        spec: &GeneralSpec,
        weight: Option<DType>,
        kind: ValueKind,
        requested: Strategy,
        shared_atomics: SharedAtomics,
    ) -> Result<GeneralPlan> {
        let info = dev.info();
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
        debug_assert_eq!(outs, outs_per_slot(binning_y.is_some()) * nslots);
        let accum = match kind {
            ValueKind::Count => Accum::Count,
            ValueKind::Fixed(_) => Accum::Fixed(shared_atomics),
            ValueKind::Float => Accum::Float,
        };
        let make = |strategy| {
            GeneralVariant { dtype: T::DTYPE, binning, binning_y, channels, weight, accum, strategy }.normalised()
        };
        let room = info.smem_per_block_optin;
        let fits = |s: Strategy| shared_bytes(&make(s), width, outs) <= room;
        // Only three strategies here: the per-warp and 16-bit ones degrade to a block copy when
        // it fits, everything else (clusters included) to L2-sized passes of global atomics.
        let strategy = match requested {
            Strategy::ThreadPrivate => {
                return Err(Error::invalid("thread-private is the CPU backend's strategy; use --backend cpu"))
            }
            Strategy::GlobalAtomic => Strategy::GlobalAtomic,
            Strategy::GlobalL2 => Strategy::GlobalL2,
            _ if fits(Strategy::BlockShared) => Strategy::BlockShared,
            _ => Strategy::GlobalL2,
        };
        let variant = make(strategy);
        let module = dev.module(&kernels::HISTOGRAM_GENERAL, &variant.defines())?;
        let smem = shared_bytes(&variant, width, outs);
        let func = dev.function(&module, "tally_histogram_general", smem)?;
        let threads = GENERAL_BLOCK_THREADS;
        let per_sm = dev.blocks_per_sm(&func, threads, smem)?;
        let n = input.n as u64;
        // Enough blocks to fill the device, no more than there are chunks, and enough that no
        // block's 32-bit shared counters can overflow.
        let grid = n
            .div_ceil(threads as u64 * UNROLL)
            .clamp(1, info.multiprocessors as u64 * per_sm as u64)
            .max(n.div_ceil(1 << 31));
        let slice = if strategy == Strategy::GlobalL2 {
            knob("TALLY_PASS_KEYS").map(|k| k as usize).unwrap_or_else(|| l2_slice(info.l2_bytes, 8))
        } else {
            width
        }
        .clamp(1, width.max(1));
        let passes: Vec<(u32, u32)> =
            (0..width.max(1)).step_by(slice).map(|lo| (lo as u32, slice.min(width - lo) as u32)).collect();

        let values = dev.alloc::<u64>(width, "histogram accumulators")?;
        let outlier_values = dev.alloc::<u64>(outs, "outlier accumulators")?;
        let outlier_counts = dev.alloc::<u64>(outs, "outlier counts")?;
        let (mut tables, mut edges) = (Vec::new(), Vec::new());
        let mut params = GeneralParams {
            x: input.x,
            y: input.y,
            weights: input.weights,
            n,
            stride: input.stride,
            values: dev.ptr(&values),
            outlier_values: dev.ptr(&outlier_values),
            outlier_counts: dev.ptr(&outlier_counts),
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
        match spec {
            GeneralSpec::OneD(s) => {
                params.ax = axis_params::<T>(dev, &s.bins, binning, &mut tables, &mut edges)?;
                params.bins = s.bins.count() as u32;
                for (c, slot) in s.channels.slots().into_iter().enumerate() {
                    params.slot[c] = slot;
                }
            }
            GeneralSpec::TwoD(s) => {
                params.ax = axis_params::<T>(dev, &s.x, binning, &mut tables, &mut edges)?;
                params.ay = axis_params::<T>(dev, &s.y, binning_y.expect("2-D"), &mut tables, &mut edges)?;
                params.bins = width as u32;
                params.bins_y = s.y.count() as u32;
                params.slot[0] = 0;
            }
        }
        let cfg =
            LaunchConfig { grid_dim: (grid as u32, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: smem as u32 };
        Ok(GeneralPlan {
            dev: dev.clone(),
            func,
            params,
            cfg,
            passes,
            values,
            outlier_values,
            outlier_counts,
            width,
            outs,
            _tables: tables,
            _edges: edges,
            kind,
            strategy,
            variant,
        })
    }

    /// Passes over the samples one launch makes.
    pub fn passes(&self) -> usize {
        self.passes.len()
    }

    /// The shared-memory atomics of the fixed-point block strategy, when that ran.
    pub fn shared_atomics(&self) -> Option<SharedAtomics> {
        match self.variant.accum {
            Accum::Fixed(s) if self.strategy == Strategy::BlockShared => Some(s),
            _ => None,
        }
    }

    /// Zeroes the accumulators and launches the kernel (once per pass), asynchronously.
    pub fn launch(&mut self) -> Result<()> {
        let stream = self.dev.stream().clone();
        stream.memset_zeros(&mut self.values).map_err(driver("cuMemsetD8Async(accumulators)"))?;
        stream.memset_zeros(&mut self.outlier_values).map_err(driver("cuMemsetD8Async(outliers)"))?;
        stream.memset_zeros(&mut self.outlier_counts).map_err(driver("cuMemsetD8Async(outlier counts)"))?;
        if self.params.n == 0 {
            return Ok(());
        }
        for (i, &(lo, keys)) in self.passes.iter().enumerate() {
            let mut p = self.params;
            p.slice_lo = lo;
            p.slice_width = keys;
            p.first_pass = (i == 0) as u32;
            unsafe { stream.launch_builder(&self.func).arg(&p).launch(self.cfg) }
                .map_err(driver("cuLaunchKernel(tally_histogram_general)"))?;
        }
        Ok(())
    }

    /// Waits for the kernel and reads the raw accumulators back.
    pub(crate) fn read_raw(&self) -> Result<Raw> {
        self.dev.synchronize("tally_histogram_general")?;
        let values = self.dev.download(&self.values, self.width)?;
        let outlier_values = self.dev.download(&self.outlier_values, self.outs)?;
        let outlier_counts = if matches!(self.kind, ValueKind::Count) {
            outlier_values.clone()
        } else {
            self.dev.download(&self.outlier_counts, self.outs)?
        };
        Ok(Raw { values, outlier_values, outlier_counts })
    }

    /// The weighted 1-D histogram (spec: the one the plan was made with).
    pub fn read_weighted(&self, spec: &HistogramSpec) -> Result<super::WeightedHistogram> {
        let raw = self.read_raw()?;
        Ok(super::weighted::weighted_from_raw(spec, &raw, self.kind, "cuda", self.strategy, self.shared_atomics()))
    }

    /// The 2-D histogram (spec: the one the plan was made with).
    pub fn read_2d(&self, spec: &Histogram2dSpec) -> Result<super::Histogram2d> {
        let raw = self.read_raw()?;
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

    /// The accumulator buffers, for tests that poison them before a launch.
    #[doc(hidden)]
    pub fn accumulators_mut(&mut self) -> [&mut CudaSlice<u64>; 3] {
        [&mut self.values, &mut self.outlier_values, &mut self.outlier_counts]
    }
}

/// Where 2-D pairs live on the device: uploads them (and the weights).
pub fn upload_pairs<T: Sample>(dev: &Arc<CudaDevice>, pairs: Pairs<T>) -> Result<(Vec<CudaSlice<T>>, GeneralInput)> {
    let size = std::mem::size_of::<T>() as u64;
    Ok(match pairs {
        Pairs::Split(x, y) => {
            let (bx, by) = (dev.upload(x, "x coordinates")?, dev.upload(y, "y coordinates")?);
            let input = GeneralInput { x: dev.ptr(&bx), y: dev.ptr(&by), stride: 1, weights: 0, n: x.len() };
            (vec![bx, by], input)
        }
        Pairs::Interleaved(v) => {
            let b = dev.upload(v, "pairs")?;
            let p = dev.ptr(&b);
            (vec![b], GeneralInput { x: p, y: p + size, stride: 2, weights: 0, n: v.len() / 2 })
        }
    })
}

/// Compiles every specialisation of the general kernel for `arch`; returns how many.
pub fn compile_all(arch: &str) -> Result<usize> {
    use rayon::prelude::*;
    let only = std::env::var("TALLY_NVRTC_ONLY").ok();
    let variants: Vec<GeneralVariant> =
        GeneralVariant::all().into_iter().filter(|v| only.as_deref().is_none_or(|o| v.strategy.name() == o)).collect();
    variants.par_iter().try_for_each(|v| {
        let opts: Vec<String> = v.defines().iter().map(|(k, val)| format!("-D{k}={val}")).collect();
        crate::device::nvrtc::compile(
            kernels::HISTOGRAM_GENERAL.name,
            kernels::HISTOGRAM_GENERAL.text,
            kernels::HEADERS,
            arch,
            &opts,
        )
        .map(|_| ())
    })?;
    Ok(variants.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every specialisation a plan can ask for is in GeneralVariant::all, which CI compiles.
    #[test]
    fn plans_only_ask_for_listed_variants() {
        let all = GeneralVariant::all();
        for strategy in GENERAL_STRATEGIES {
            for accum in [Accum::Fixed(SharedAtomics::Halves), Accum::Fixed(SharedAtomics::Native64), Accum::Float] {
                for weight in [DType::F32, DType::F64] {
                    for dtype in DType::ALL {
                        for bins in
                            [Bins::even(256, 0.0, 256.0), Bins::even(10, 0.5, 7.25), Bins::Edges(vec![0.0, 1.0, 3.0])]
                        {
                            let v = GeneralVariant {
                                dtype,
                                binning: binning_for(dtype, &bins),
                                binning_y: None,
                                channels: 4,
                                weight: Some(weight),
                                accum,
                                strategy,
                            }
                            .normalised();
                            assert!(all.contains(&v), "{v:?}");
                        }
                    }
                    for dtype in GENERAL_2D_DTYPES {
                        let v = GeneralVariant {
                            dtype,
                            binning: Binning::Float,
                            binning_y: Some(Binning::Edges),
                            channels: 1,
                            weight: Some(weight),
                            accum,
                            strategy,
                        }
                        .normalised();
                        assert!(all.contains(&v), "{v:?}");
                    }
                }
            }
            let v = GeneralVariant {
                dtype: DType::F32,
                binning: Binning::Edges,
                binning_y: Some(Binning::Float),
                channels: 1,
                weight: None,
                accum: Accum::Count,
                strategy,
            };
            assert!(all.contains(&v), "{v:?}");
        }
    }

    #[test]
    fn shared_memory_of_a_block() {
        let v = GeneralVariant {
            dtype: DType::F32,
            binning: Binning::Float,
            binning_y: None,
            channels: 1,
            weight: Some(DType::F32),
            accum: Accum::Fixed(SharedAtomics::Halves),
            strategy: Strategy::BlockShared,
        };
        // 256 bins + 3 outliers + trash, 8 bytes each; 3 outlier counts padded to 16 bytes.
        assert_eq!(shared_bytes(&v, 256, 3), 16 + 260 * 8);
        let g = GeneralVariant { strategy: Strategy::GlobalL2, ..v };
        assert_eq!(shared_bytes(&g, 1 << 20, 3), 16 + 4 * 8);
        let f = GeneralVariant { accum: Accum::Float, ..v };
        assert_eq!(shared_bytes(&f, 256, 3), 16 + 260 * 4);
    }
}
