//! The CUDA side of image histograms (`histogram_image.cu`): its parameters, its
//! specialisations, and the plan that picks the strategy, loads the kernel and launches it.

use super::{Brightness, Image, IMAGE_DTYPES, MAX_IMAGE_CHANNELS};
use crate::device::params::KernelParams;
use crate::device::registry::KernelFamily;
use crate::device::{CudaDevice, DevPtr, DeviceBuffer, DeviceView, Kernel, LaunchShape, Stream};
use crate::error::{Error, Result};
use crate::histogram::axis::{self, binning_for, Binning, DeviceAxis};
use crate::histogram::binning::BinRule;
use crate::histogram::policy::{self, KernelStrategy};
use crate::histogram::{Histogram, HistogramSpec, Strategy};
use crate::sample::{DType, Sample};
use std::marker::PhantomData;
use std::sync::Arc;

/// Threads per block.
const IMAGE_BLOCK_THREADS: u32 = 256;
/// Pixels a thread has in flight (UNROLL in the kernel).
const UNROLL: u64 = 4;

crate::kernel_params! {
    /// What `tally_histogram_image` reads.
    pub(crate) struct ImageParams as "ImageParams" {
        /// Channel 0 of the first pixel (`const Sample*`).
        pixels: DevPtr<u8>,
        n: u64,
        pixel_stride: u64,
        plane_stride: u64,
        /// Bins, then below, above, NaN.
        counts: DevPtr<u64>,
        /// The sum table's keys (`TALLY_SUM_TABLE`).
        sum_table: DevPtr<u32>,
        axis: axis::AxisParams,
        weight: [f64; MAX_IMAGE_CHANNELS as usize],
        channels: u32,
        /// The mean of this many channels; 0: the weighted sum.
        mean_of: u32,
        bins: u32,
        table_sums: u32,
    }
}

/// One specialisation of the image kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageVariant {
    /// The channels' type.
    pub dtype: DType,
    /// The f64 rule or edges, on the brightness.
    pub binning: Binning,
    /// BlockShared or GlobalAtomic.
    pub strategy: Strategy,
    /// The mean of u8 channels, binned by a table of their sums.
    pub sum_table: bool,
}

impl ImageVariant {
    /// The preprocessor defines that compile this specialisation.
    pub fn defines(&self) -> Vec<(&'static str, String)> {
        vec![
            ("TALLY_SAMPLE", self.dtype.cuda_type().to_string()),
            ("TALLY_BINNING", self.binning.cpp().to_string()),
            ("TALLY_STRATEGY", KernelStrategy::of(self.strategy).cpp().to_string()),
            ("TALLY_BLOCK_THREADS", IMAGE_BLOCK_THREADS.to_string()),
            ("TALLY_SUM_TABLE", (self.sum_table as u32).to_string()),
        ]
    }

    /// Every specialisation a plan can ask for.
    pub fn all() -> Vec<ImageVariant> {
        let mut out = Vec::new();
        for dtype in IMAGE_DTYPES {
            for binning in [Binning::Float, Binning::Edges] {
                for strategy in [Strategy::BlockShared, Strategy::GlobalAtomic] {
                    for sum_table in [false, true] {
                        if sum_table && dtype != DType::U8 {
                            continue;
                        }
                        out.push(ImageVariant { dtype, binning, strategy, sum_table });
                    }
                }
            }
        }
        out
    }
}

/// `histogram_image.cu`: brightness histograms of images.
pub(crate) static FAMILY: KernelFamily = KernelFamily {
    name: "histogram_image.cu",
    source: include_str!("../../kernels/histogram_image.cu"),
    params: || vec![axis::AxisParams::layout(), ImageParams::layout()],
    variants: |_| ImageVariant::all().iter().map(ImageVariant::defines).collect(),
};

/// An image histogram ready to launch on resident pixels of `T`.
pub struct ImagePlan<T> {
    kernel: Kernel<ImageParams>,
    shape: LaunchShape,
    params: ImageParams,
    /// Bins, then below, above, NaN.
    counts: DeviceBuffer<u64>,
    _axis: DeviceAxis,
    _sum_table: Option<DeviceBuffer<u32>>,
    len: usize,
    spec: HistogramSpec,
    strategy: Strategy,
    _data: PhantomData<fn(T)>,
}

impl<T: Sample> ImagePlan<T> {
    /// Prepares the histogram of an image's brightness. Strategies: `block-shared` (the default,
    /// while the bins fit one block's shared memory) and `global-atomic`; the others run
    /// `block-shared` where it fits, else `global-atomic`; `thread-private` is the CPU's.
    pub fn new(dev: &Arc<CudaDevice>, image: &Image, spec: &HistogramSpec, requested: Strategy) -> Result<Self> {
        let len = image.pixels().saturating_mul(image.channels as usize);
        image.validate(len, T::DTYPE, spec)?;
        let info = dev.info();
        let stream = dev.stream();
        let bins = spec.bins.count();
        // The mean of u8 channels: its bin from a table of the channels' sums (an integer sum is
        // exact in f64, so the table is the rule's bin of sum / mean_of for every sum).
        let sum_table = match image.brightness {
            Brightness::Mean if T::DTYPE == DType::U8 => {
                let m = Brightness::mean_of(image.channels);
                let rule = BinRule::new::<f64>(spec);
                let key = |b: i32| if b >= 0 { b as u32 } else { bins as u32 + (-1 - b) as u32 };
                Some((0..=255 * m).map(|s| key(rule.bin(s as f64 / m as f64))).collect::<Vec<u32>>())
            }
            _ => None,
        };
        let table_bytes = sum_table.as_ref().map_or(0, |t| t.len() * 4);
        let smem = (bins + 3) * 4 + table_bytes;
        let strategy = match requested {
            Strategy::ThreadPrivate => {
                return Err(Error::invalid("thread-private is the CPU backend's strategy; use --backend cpu"))
            }
            Strategy::GlobalAtomic => Strategy::GlobalAtomic,
            _ if smem <= info.smem_per_block_optin => Strategy::BlockShared,
            _ => Strategy::GlobalAtomic,
        };
        let binning = binning_for(DType::F64, &spec.bins);
        let variant = ImageVariant { dtype: T::DTYPE, binning, strategy, sum_table: sum_table.is_some() };
        let smem = if strategy == Strategy::BlockShared { smem } else { table_bytes };
        let kernel = dev.kernel::<ImageParams>(&FAMILY, &variant.defines(), "tally_histogram_image", smem)?;
        let threads = IMAGE_BLOCK_THREADS;
        let max_grid = info.multiprocessors as u64 * kernel.blocks_per_sm(threads, smem)? as u64;
        let n = image.pixels() as u64;
        // At most 2^31 pixels a block (policy::grid): its 32-bit shared counters cannot wrap.
        let grid = policy::grid(n, threads as u64 * UNROLL, max_grid);
        let axis = DeviceAxis::new::<f64>(stream, &spec.bins, binning)?;
        let mut counts = stream.alloc::<u64>(bins + 3, "image histogram counters")?;
        let table = sum_table.map(|t| stream.upload(&t, "image sum table")).transpose()?;
        let (pixel, plane) = image.strides();
        let mut weight = [0.0; MAX_IMAGE_CHANNELS as usize];
        let mean_of = match &image.brightness {
            Brightness::Mean => Brightness::mean_of(image.channels),
            Brightness::Weighted(w) => {
                weight[..w.len()].copy_from_slice(w);
                0
            }
        };
        let params = ImageParams {
            n,
            pixel_stride: pixel as u64,
            plane_stride: plane as u64,
            counts: counts.view_mut().ptr_mut(stream.cuda_stream()),
            axis: axis.params,
            weight,
            channels: image.channels,
            mean_of,
            bins: bins as u32,
            sum_table: table.as_ref().map_or(DevPtr::default(), |t| t.view().ptr(stream.cuda_stream())),
            table_sums: table.as_ref().map_or(0, |t| t.len() as u32),
            ..Default::default()
        };
        Ok(ImagePlan {
            kernel,
            shape: LaunchShape::new(grid as u32, threads, smem),
            params,
            counts,
            _axis: axis,
            _sum_table: table,
            len,
            spec: spec.clone(),
            strategy,
            _data: PhantomData,
        })
    }

    /// The strategy that runs.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Zeroes the counters and queues the kernel on `stream`.
    pub fn launch(&mut self, stream: &Stream, pixels: &DeviceView<'_, T>) -> Result<()> {
        if pixels.len() != self.len {
            return Err(Error::invalid(format!(
                "this plan counts an image of {} values, but {} were given",
                self.len,
                pixels.len()
            )));
        }
        stream.memset_zeros(&mut self.counts.view_mut())?;
        if self.params.n == 0 {
            return Ok(());
        }
        let p = ImageParams { pixels: pixels.ptr(stream.cuda_stream()).cast(), ..self.params };
        stream.launch(&self.kernel, self.shape, &p)
    }

    /// Waits for `stream` and reads the counts back.
    pub fn read(&self, stream: &Stream) -> Result<Histogram> {
        let all = stream.download(&self.counts.view())?;
        let bins = self.spec.bins.count();
        Ok(Histogram::from_flat(&self.spec, &all[..bins], &all[bins..], "cuda", self.strategy))
    }

    /// Fills the counters with `byte`: tests poison them before a launch, so that counters the
    /// launch leaves unwritten show.
    pub fn fill_outputs(&mut self, stream: &Stream, byte: u8) -> Result<()> {
        let word = u64::from_ne_bytes([byte; 8]);
        stream.copy_to_device(&vec![word; self.counts.len()], &mut self.counts.view_mut())
    }
}
