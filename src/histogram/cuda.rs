//! The CUDA side of the histogram: resolve the strategy, specialise and load the kernel, size
//! the grid to the device, launch, and read the counts back.

use super::binning::{int_bounds, BinRule};
use super::strategy::{self, AutoInputs};
use super::{Bins, Histogram, HistogramSpec, Strategy, MAX_CHANNELS};
use crate::device::cuda::{driver, CudaDevice};
use crate::error::{Error, Result};
use crate::kernels;
use crate::sample::{DType, Sample};
use cudarc::driver::{CudaFunction, CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// Block sizes the kernels are built for: larger private histograms get larger blocks, so that
/// the threads a multiprocessor runs share fewer, larger private copies.
pub const BLOCK_SIZES: [u32; 3] = [256, 512, 1024];
/// 16-byte loads per thread per tile: four for 4- and 8-byte samples; two for 1- and 2-byte
/// ones, whose 16 or 8 samples per load already make long unrolled bodies.
pub fn vecs_for(dtype: DType) -> u32 {
    if dtype.size() <= 2 {
        2
    } else {
        4
    }
}

/// Threads per block: for one private copy per block, about 64 bytes of it per thread. The
/// other strategies keep 256 (per-warp copies and per-thread counters only fit at sizes where
/// 256 is what this rule would give anyway).
fn block_threads_for(strategy: Strategy, private_bytes: usize) -> u32 {
    match strategy {
        Strategy::BlockShared | Strategy::WarpAggregated => {
            BLOCK_SIZES.into_iter().find(|&t| private_bytes <= t as usize * 64).unwrap_or(1024)
        }
        _ => BLOCK_SIZES[0],
    }
}

/// Shared memory the kernel declares statically (one u64 per warp for the block reduction).
fn static_shared_bytes(block_threads: u32) -> usize {
    (block_threads as usize / 32) * 8
}
/// Samples the skew probe looks at.
const PROBE_SAMPLES: u32 = 4096;

/// Kernel parameters, passed by value. Must match `HistParams` in histogram.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct HistParams {
    samples: u64,
    n: u64,
    counts: u64,
    outliers: u64,
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
    nslots: u32,
    edges_in_shared: u32,
    slot: [i32; MAX_CHANNELS as usize],
}
// SAFETY: plain old data with the C layout the kernel declares.
unsafe impl DeviceRepr for HistParams {}

/// Whether samples of `dtype` and the bounds share one 32-bit domain (signed for u8, u16 and
/// i32; unsigned for u32), so that the kernel's wrap-around range test is exact.
fn fits32(dtype: DType, lower: i64, upper: i64) -> bool {
    match dtype {
        DType::U8 | DType::U16 | DType::I32 => lower >= i32::MIN as i64 && upper <= 1i64 << 31,
        DType::U32 => lower >= 0 && upper <= 1i64 << 32,
        _ => false,
    }
}

/// Whether every value of an 8- or 16-bit sample type lies inside integral bounds.
fn all_in_range(dtype: DType, bins: &Bins) -> bool {
    let top = match dtype {
        DType::U8 => 1i64 << 8,
        DType::U16 => 1i64 << 16,
        _ => return false,
    };
    int_bounds(bins).is_some_and(|b| b.lower <= 0 && b.upper >= top)
}

/// The smallest f32 that is >= v: for f32 samples, `x < v` exactly when `x < ceil_f32(v)`.
fn ceil_f32(v: f64) -> f32 {
    let f = v as f32;
    if (f as f64) < v {
        f.next_up()
    } else {
        f
    }
}

/// How far from an integer the kernel's f32 estimate of the bin must land to be trusted
/// (error bound of the estimate, times four); above 1/4 the estimate is never used.
fn f32_slack(lower: f64, upper: f64, bins: u32) -> f32 {
    let scale = bins as f64 / (upper - lower);
    let m = lower.abs().max(upper.abs());
    let eps = 2f64.powi(-24);
    let bound = 4.0 * (scale * eps * (lower.abs() + 2.0 * m) + bins as f64 * 2.0 * eps) + 2f64.powi(-40);
    if bound.is_finite() && bound < 0.25 && m < f32::MAX as f64 {
        bound as f32
    } else {
        2.0
    }
}

/// The same for the f64 estimate `((x - lower) * bins) * (1 / range)` against the division.
fn f64_slack(bins: u32) -> f64 {
    let bound = bins as f64 * 2f64.powi(-48) + 2f64.powi(-60);
    if bound < 0.25 {
        bound
    } else {
        2.0
    }
}

/// How the kernel turns a sample into a bin (the `TALLY_BINNING` define).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binning {
    Table8 = 0,
    Integer = 1,
    Float = 2,
    Edges = 3,
    /// Exact integer arithmetic in 32 bits: samples and bounds share one 32-bit domain.
    Integer32 = 4,
}

pub fn binning_for(dtype: DType, bins: &Bins) -> Binning {
    let integer = !dtype.is_float() && int_bounds(bins).is_some();
    if dtype == DType::U8 && !integer {
        // Arithmetic beats a table lookup (a shared-memory access per sample) where it is exact.
        Binning::Table8
    } else if matches!(bins, Bins::Edges(_)) {
        Binning::Edges
    } else if integer {
        let b = int_bounds(bins).expect("checked above");
        if fits32(dtype, b.lower, b.upper) {
            Binning::Integer32
        } else {
            Binning::Integer
        }
    } else {
        Binning::Float
    }
}

fn strategy_code(s: Strategy) -> u32 {
    match s {
        Strategy::GlobalAtomic => 0,
        Strategy::BlockShared => 1,
        Strategy::WarpPrivate => 2,
        Strategy::WarpAggregated => 3,
        Strategy::Auto | Strategy::ThreadPrivate => unreachable!("resolved before compiling"),
    }
}

/// One kernel specialisation: everything the defines encode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    pub dtype: DType,
    pub binning: Binning,
    pub channels: u32,
    pub wide_counters: bool,
    pub strategy: Strategy,
    pub block_threads: u32,
    /// Integer binning with as many bins as values in range: the bin is the offset.
    pub identity: bool,
    /// 32-bit integer binning where every value of the sample type lies in range.
    pub all_in_range: bool,
}

impl Variant {
    pub fn defines(&self) -> Vec<(&'static str, String)> {
        vec![
            ("TALLY_SAMPLE", self.dtype.cuda_type().to_string()),
            ("TALLY_BINNING", (self.binning as u32).to_string()),
            ("TALLY_CHANNELS", self.channels.to_string()),
            (
                "TALLY_COUNTER",
                if self.wide_counters { "unsigned long long" } else { "unsigned int" }.to_string(),
            ),
            ("TALLY_STRATEGY", strategy_code(self.strategy).to_string()),
            ("TALLY_IDENTITY", (self.identity as u32).to_string()),
            ("TALLY_ALL_IN_RANGE", (self.all_in_range as u32).to_string()),
            ("TALLY_BLOCK_THREADS", self.block_threads.to_string()),
            ("TALLY_VECS", vecs_for(self.dtype).to_string()),
        ]
    }

    /// Every specialisation tally can ask NVRTC for (channel counts: 1 and 4 stand for all).
    pub fn all() -> Vec<Variant> {
        let mut v = Vec::new();
        for dtype in DType::ALL {
            let binnings: &[Binning] = match dtype {
                DType::U8 => &[Binning::Table8, Binning::Integer32, Binning::Integer],
                DType::F32 | DType::F64 => &[Binning::Float, Binning::Edges],
                DType::I64 => &[Binning::Integer, Binning::Float, Binning::Edges],
                _ => &[Binning::Integer32, Binning::Integer, Binning::Float, Binning::Edges],
            };
            for &binning in binnings {
                for channels in [1, 4] {
                    for wide_counters in [false, true] {
                        for &strategy in &Strategy::GPU[1..] {
                            // The block sizes Plan::new can ask for (block_threads_for).
                            let sizes: &[u32] = match strategy {
                                Strategy::BlockShared | Strategy::WarpAggregated => &BLOCK_SIZES,
                                _ => &BLOCK_SIZES[..1],
                            };
                            let identities: &[bool] = match binning {
                                Binning::Integer | Binning::Integer32 => &[false, true],
                                _ => &[false],
                            };
                            let all_in: &[bool] = match (dtype, binning) {
                                (DType::U8 | DType::U16, Binning::Integer32) => &[false, true],
                                _ => &[false],
                            };
                            for &block_threads in sizes {
                                for &identity in identities {
                                    for &all_in_range in all_in {
                                        v.push(Variant { dtype, binning, channels, wide_counters, strategy, block_threads, identity, all_in_range });
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        v
    }
}

/// Dynamic shared memory of one block: [edges][table][outliers][private counters]. A private
/// copy holds the bins, the below/above/NaN counts of each slot and one trash counter.
fn shared_bytes(strategy: Strategy, binning: Binning, width: usize, nslots: usize, edges_in_shared: usize, threads: u32) -> usize {
    let pwidth = width + 3 * nslots + 1;
    let warps = threads as usize / 32;
    let edges = (edges_in_shared * 8).div_ceil(16) * 16;
    let table = if binning == Binning::Table8 { 256 * 4 } else { 0 };
    let outliers = MAX_CHANNELS as usize * 3 * 4;
    let privates = match strategy {
        Strategy::GlobalAtomic => 0,
        Strategy::WarpPrivate => warps * pwidth * 4,
        _ => pwidth * 4,
    };
    edges + table + outliers + privates
}

/// A histogram ready to launch on resident samples: kernel loaded, buffers allocated.
pub struct Plan {
    dev: Arc<CudaDevice>,
    func: CudaFunction,
    params: HistParams,
    cfg: LaunchConfig,
    counts: CudaSlice<u8>,
    counts_bytes: usize,
    outliers: CudaSlice<u64>,
    _lut: Option<CudaSlice<i32>>,
    _edges: Option<CudaSlice<f64>>,
    spec: HistogramSpec,
    pub strategy: Strategy,
    pub variant: Variant,
}

impl Plan {
    /// Prepares a histogram of `n` samples at `samples` (a device address). `auto` probes the
    /// samples for skew, so they must already be there.
    pub fn new<T: Sample>(
        dev: &Arc<CudaDevice>,
        samples: u64,
        n: usize,
        spec: &HistogramSpec,
        requested: Strategy,
    ) -> Result<Plan> {
        spec.validate()?;
        let info = dev.info();
        let bins = spec.bins.count();
        let nslots = spec.channels.selected.len();
        let width = bins * nslots;
        let binning = binning_for(T::DTYPE, &spec.bins);
        let rule = BinRule::new::<T>(spec);
        let num_edges = if let Bins::Edges(e) = &spec.bins { e.len() } else { 0 };
        let optin = info.smem_per_block_optin;

        // Threads per block follow the strategy and the size of one private copy; everything
        // must fit beside the kernel's own static shared memory.
        let threads_for = |s: Strategy| block_threads_for(s, width * 4);
        let fits = |s: Strategy, e: usize| {
            let t = threads_for(s);
            shared_bytes(s, binning, width, nslots, e, t) <= optin.saturating_sub(static_shared_bytes(t))
        };

        let strategy = match requested {
            Strategy::Auto => {
                // Hopper combines same-address shared atomics itself: no probe needed there.
                let probe = n > 0 && info.compute_capability.0 < 9;
                let top = if probe { probe_skew::<T>(dev, samples, n, spec, &rule)? } else { 0.0 };
                let t = threads_for(Strategy::BlockShared);
                strategy::choose(AutoInputs {
                    private_bytes: shared_bytes(Strategy::BlockShared, binning, width, nslots, 0, t),
                    smem_per_block: optin.saturating_sub(static_shared_bytes(t)),
                    top_bin_fraction: top,
                    compute_capability: info.compute_capability,
                })
            }
            Strategy::ThreadPrivate => {
                return Err(Error::invalid("thread-private is the CPU backend's strategy; use --backend cpu"))
            }
            s => s,
        };
        // A private copy that does not fit degrades: per-warp copies to one copy per block, and
        // that to plain global atomics.
        let strategy = if fits(strategy, 0) {
            strategy
        } else if strategy == Strategy::WarpPrivate && fits(Strategy::BlockShared, 0) {
            Strategy::BlockShared
        } else {
            Strategy::GlobalAtomic
        };
        let threads = threads_for(strategy);
        // Edges go to shared memory when they leave room for the private copy.
        let edges_shared = if num_edges > 0 && fits(strategy, num_edges) { num_edges } else { 0 };
        let smem = shared_bytes(strategy, binning, width, nslots, edges_shared, threads);
        let wide = n as u64 >= 1u64 << 32;
        let variant = Variant {
            dtype: T::DTYPE,
            binning,
            channels: spec.channels.interleave,
            wide_counters: wide,
            strategy,
            block_threads: threads,
            identity: matches!(binning, Binning::Integer | Binning::Integer32)
                && int_bounds(&spec.bins).is_some_and(|b| b.range == b.bins as u64),
            all_in_range: binning == Binning::Integer32 && all_in_range(T::DTYPE, &spec.bins),
        };
        let module = dev.module(&kernels::HISTOGRAM, &variant.defines())?;
        let func = dev.function(&module, "tally_histogram", smem)?;

        let per_sm = dev.blocks_per_sm(&func, threads, smem)?;
        let tile = (threads * vecs_for(T::DTYPE)) as u64 * (16 / T::DTYPE.size()) as u64;
        let max_grid = info.multiprocessors as u64 * per_sm as u64;
        // Enough blocks to fill the device, no more than there are tiles, and enough that no
        // block's 32-bit private counters can overflow.
        let grid = (n as u64).div_ceil(tile).clamp(1, max_grid).max((n as u64).div_ceil(1 << 31));
        let cfg = LaunchConfig { grid_dim: (grid as u32, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: smem as u32 };

        let counter_size = if wide { 8 } else { 4 };
        let counts_bytes = width * counter_size;
        let counts = dev.alloc::<u8>(counts_bytes, "histogram counters")?;
        let outliers = dev.alloc::<u64>(nslots * 3, "outlier counters")?;

        let mut params = HistParams {
            samples,
            n: n as u64,
            counts: dev.ptr(&counts),
            outliers: dev.ptr(&outliers),
            bins: bins as u32,
            nslots: nslots as u32,
            num_edges: num_edges as u32,
            edges_in_shared: (edges_shared > 0) as u32,
            slot: [-1; MAX_CHANNELS as usize],
            ..Default::default()
        };
        for (c, s) in spec.channels.slots().into_iter().enumerate() {
            params.slot[c] = s;
        }
        let mut lut = None;
        let mut edges = None;
        match binning {
            Binning::Table8 => {
                let table = dev.upload(&rule.lut8(), "bin table")?;
                params.lut = dev.ptr(&table);
                lut = Some(table);
            }
            Binning::Integer | Binning::Integer32 => {
                let b = int_bounds(&spec.bins).expect("integer binning has integer bounds");
                params.lower_i = b.lower;
                params.upper_i = b.upper;
                params.range_i = b.range;
                params.scale_f = (b.bins as f64 / b.range as f64) as f32;
                params.scale_d = b.bins as f64 / b.range as f64;
            }
            Binning::Float => {
                let Bins::Even { bins, lower, upper } = spec.bins else { unreachable!() };
                params.lower = lower;
                params.upper = upper;
                params.range = upper - lower;
                params.bins_f = bins as f64;
                params.inv_range = 1.0 / (upper - lower);
                params.slack_d = f64_slack(bins);
                params.lo32 = ceil_f32(lower);
                params.hi32 = ceil_f32(upper);
                params.lower_f = lower as f32;
                params.scale_f = (bins as f64 / (upper - lower)) as f32;
                params.slack_f = f32_slack(lower, upper, bins);
            }
            Binning::Edges => {
                let Bins::Edges(e) = &spec.bins else { unreachable!() };
                let buf = dev.upload(e, "bin edges")?;
                params.edges = dev.ptr(&buf);
                edges = Some(buf);
            }
        }
        Ok(Plan {
            dev: dev.clone(),
            func,
            params,
            cfg,
            counts,
            counts_bytes,
            outliers,
            _lut: lut,
            _edges: edges,
            spec: spec.clone(),
            strategy,
            variant,
        })
    }

    /// Zeroes the counters and launches the kernel, asynchronously.
    pub fn launch(&mut self) -> Result<()> {
        let stream = self.dev.stream().clone();
        stream.memset_zeros(&mut self.counts).map_err(driver("cuMemsetD8Async(counters)"))?;
        stream.memset_zeros(&mut self.outliers).map_err(driver("cuMemsetD8Async(outliers)"))?;
        if self.params.n == 0 {
            return Ok(());
        }
        let p = self.params;
        unsafe { stream.launch_builder(&self.func).arg(&p).launch(self.cfg) }
            .map(|_| ())
            .map_err(driver("cuLaunchKernel(tally_histogram)"))
    }

    /// Waits for the kernel and reads the counts back.
    pub fn read(&self) -> Result<Histogram> {
        self.dev.synchronize("tally_histogram")?;
        let raw = self.dev.download(&self.counts, self.counts_bytes)?;
        let outliers = self.dev.download(&self.outliers, self.spec.channels.selected.len() * 3)?;
        let bins = self.spec.bins.count();
        let flat: Vec<u64> = if self.variant.wide_counters {
            raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
        } else {
            raw.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()) as u64).collect()
        };
        let mut h = Histogram::zeroed(&self.spec, "cuda", self.strategy);
        for k in 0..self.spec.channels.selected.len() {
            h.counts[k].copy_from_slice(&flat[k * bins..(k + 1) * bins]);
            h.below[k] = outliers[3 * k];
            h.above[k] = outliers[3 * k + 1];
            h.nan[k] = outliers[3 * k + 2];
        }
        Ok(h)
    }

    /// The raw counter buffer, for tests that poison it before a launch.
    #[doc(hidden)]
    pub fn counters_mut(&mut self) -> &mut CudaSlice<u8> {
        &mut self.counts
    }
}

/// The share of a strided sample of the input that falls in its most frequent bin.
fn probe_skew<T: Sample>(dev: &Arc<CudaDevice>, samples: u64, n: usize, spec: &HistogramSpec, rule: &BinRule) -> Result<f64> {
    let k = (n as u64).min(PROBE_SAMPLES as u64) as u32;
    let variant = Variant {
        dtype: T::DTYPE,
        binning: binning_for(T::DTYPE, &spec.bins),
        channels: spec.channels.interleave,
        wide_counters: false,
        strategy: Strategy::GlobalAtomic,
        block_threads: BLOCK_SIZES[0],
        identity: false,
        all_in_range: false,
    };
    let module = dev.module(&kernels::HISTOGRAM, &variant.defines())?;
    let f = dev.function(&module, "tally_histogram_probe", 0)?;
    let out = dev.alloc::<T>(k as usize, "skew probe")?;
    let po = dev.ptr(&out);
    let nn = n as u64;
    let cfg = LaunchConfig { grid_dim: (k.div_ceil(256), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    unsafe { dev.stream().launch_builder(&f).arg(&samples).arg(&nn).arg(&po).arg(&k).launch(cfg) }
        .map_err(driver("cuLaunchKernel(tally_histogram_probe)"))?;
    let probe = dev.download(&out, k as usize)?;
    let mut freq = std::collections::HashMap::<i32, u32>::new();
    for x in probe {
        let b = rule.bin(x);
        if b >= 0 {
            *freq.entry(b).or_default() += 1;
        }
    }
    Ok(freq.values().copied().max().unwrap_or(0) as f64 / k as f64)
}

/// Compiles every kernel specialisation for `arch` (e.g. "sm_90") without a device: the check
/// CI runs with NVRTC alone. Returns the number compiled.
pub fn compile_all(arch: &str) -> Result<usize> {
    use rayon::prelude::*;
    let variants = Variant::all();
    variants.par_iter().try_for_each(|v| {
        let opts: Vec<String> = v.defines().iter().map(|(k, val)| format!("-D{k}={val}")).collect();
        crate::device::nvrtc::compile(kernels::HISTOGRAM.name, kernels::HISTOGRAM.text, kernels::HEADERS, arch, &opts)
            .map(|_| ())
    })?;
    crate::device::nvrtc::compile(kernels::BANDWIDTH.name, kernels::BANDWIDTH.text, kernels::HEADERS, arch, &[])?;
    Ok(variants.len() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every specialisation Plan::new can ask for is in Variant::all, which CI compiles.
    #[test]
    fn plans_only_ask_for_listed_variants() {
        let all = Variant::all();
        for strategy in &Strategy::GPU[1..] {
            for width in (0..=24).map(|e| 1usize << e).chain([3, 48, 255, 257, 4095, 4097, 12000, 56000]) {
                let threads = block_threads_for(*strategy, width * 4);
                let v = Variant { dtype: DType::I32, binning: Binning::Integer32, channels: 1, wide_counters: false, strategy: *strategy, block_threads: threads, identity: true, all_in_range: false };
                assert!(all.contains(&v), "{v:?} (width {width}) is not compiled by the CI check");
            }
        }
    }
}
