//! Streamed histograms: every chunk counted by the one-shot plan, its counters added on the
//! device into 64-bit totals (no host round trip per chunk), outliers likewise. The counts of
//! a sample do not depend on which chunk holds it, so the result is the one-shot call's, bit
//! for bit, whatever the chunking.

use super::cuda::HistogramPlan;
use super::{cpu, Histogram, HistogramSpec, Strategy};
use crate::device::params::KernelParams;
use crate::device::registry::KernelFamily;
use crate::device::staging::{
    self, layout_for, run_on_host, ChunkLayout, ChunkPipeline, ChunkPlans, ChunkSource, PlainData,
};
use crate::device::{Backend, DevPtr, DeviceBuffer, Kernel, LaunchShape, Stream};
use crate::error::{Error, Result};
use crate::sample::Sample;

crate::kernel_params! {
    /// What `tally_accumulate` reads.
    pub(crate) struct AccumulateParams as "AccumulateParams" {
        /// The chunk's counters: u32, or u64 where `wide`.
        from: DevPtr<u8>,
        into: DevPtr<u64>,
        n: u64,
        wide: u32,
        /// 1: the counters are copied into `into` (widened), not added.
        assign: u32,
    }
}

/// `accumulate.cu`: adds a chunk's counters into a stream's totals, or widens a plan's
/// counters into 64-bit counts.
pub(crate) static FAMILY: KernelFamily = KernelFamily {
    name: "accumulate.cu",
    source: include_str!("../kernels/accumulate.cu"),
    params: || vec![AccumulateParams::layout()],
    variants: |_| vec![vec![]],
};

/// Threads per block of the add, and its most blocks (grid-stride beyond).
const ADD_THREADS: u32 = 256;
const ADD_MAX_BLOCKS: u64 = 4096;

/// Queues `into[i] += from[i]` for the `into.len()` counters of `from` (4 or 8 bytes each).
pub(super) fn add_counters(
    stream: &Stream,
    kernel: &Kernel<AccumulateParams>,
    from: DevPtr<u8>,
    from_bytes: usize,
    wide: bool,
    into: &mut DeviceBuffer<u64>,
) -> Result<()> {
    let n = into.len();
    let into = into.view_mut().ptr_mut(stream.cuda_stream());
    queue_counters(stream, kernel, from, from_bytes, wide, into, n, false)
}

/// Queues `into[i] = from[i]` (`assign`) or `into[i] += from[i]` for `n` counters of `from` (4
/// or 8 bytes each, `from_bytes` in all) into the 64-bit words at `into`, which the caller
/// holds for `n` words in `stream`'s order.
#[allow(clippy::too_many_arguments)]
pub(super) fn queue_counters(
    stream: &Stream,
    kernel: &Kernel<AccumulateParams>,
    from: DevPtr<u8>,
    from_bytes: usize,
    wide: bool,
    into: DevPtr<u64>,
    n: usize,
    assign: bool,
) -> Result<()> {
    let n = n as u64;
    let counter = if wide { 8 } else { 4 };
    if from_bytes as u64 != n * counter {
        return Err(Error::invalid(format!("{from_bytes} bytes of counters do not make {n} counters")));
    }
    if n == 0 {
        return Ok(());
    }
    let params = AccumulateParams { from, into, n, wide: wide as u32, assign: assign as u32 };
    let grid = n.div_ceil(ADD_THREADS as u64).min(ADD_MAX_BLOCKS) as u32;
    stream.launch(kernel, LaunchShape::new(grid, ADD_THREADS, 0), &params)
}

impl<T: Sample + PlainData> ChunkPipeline<T> {
    /// Counts `source` into the bins of `spec`, chunk by chunk: the same counts as
    /// [`Backend::histogram`] of all the elements at once. The chunk size must be a multiple of
    /// the channel interleave.
    pub fn histogram(
        &mut self,
        source: &mut dyn ChunkSource<T>,
        spec: &HistogramSpec,
        strategy: Strategy,
    ) -> Result<Histogram> {
        spec.validate()?;
        staging::check_chunk(self.layout(), spec.channels.interleave as usize)?;
        let dev = self.device().clone();
        let stream = dev.stream();
        let nslots = spec.channels.selected.len();
        let mut totals = stream.alloc_zeros::<u64>(spec.bins.count() * nslots, "streamed histogram totals")?;
        let mut outliers = stream.alloc_zeros::<u64>(nslots * 3, "streamed outlier totals")?;
        let add = dev.kernel::<AccumulateParams>(&FAMILY, &[], "tally_accumulate", 0)?;
        let mut plans = ChunkPlans::<HistogramPlan<T>>::new(self.layout().chunk_elements);
        let mut ran = None;
        self.run(source, &mut |stream, samples, _first| {
            let plan =
                plans.for_chunk(samples.len(), || HistogramPlan::new(&dev, samples, spec, strategy, dev.tuning()))?;
            ran.get_or_insert(plan.strategy());
            plan.launch_unposted(stream, samples)?;
            let (counts, outside) = plan.counters();
            let wide = plan.counter_bytes() == 8;
            add_counters(stream, &add, counts.ptr(stream.cuda_stream()), counts.len(), wide, &mut totals)?;
            let outside_bytes = outside.len() * 8;
            add_counters(stream, &add, outside.ptr(stream.cuda_stream()).cast(), outside_bytes, true, &mut outliers)
        })?;
        let flat = stream.download(&totals.view())?;
        let outside = stream.download(&outliers.view())?;
        Ok(Histogram::from_flat(spec, &flat, &outside, "cuda", ran.unwrap_or(strategy)))
    }
}

/// Adds `b`'s counts into `a`'s (the same spec); an error where a total would overflow.
pub(crate) fn add_histogram(a: &mut Histogram, b: &Histogram) -> Result<()> {
    let overflow = || Error::Overflow("a count passed 2^64 where parts of a histogram were added".into());
    let add = |x: &mut u64, y: u64| x.checked_add(y).map(|s| *x = s).ok_or_else(overflow);
    for (ca, cb) in a.counts.iter_mut().zip(&b.counts) {
        for (x, &y) in ca.iter_mut().zip(cb) {
            add(x, y)?;
        }
    }
    for (xa, xb) in [(&mut a.below, &b.below), (&mut a.above, &b.above), (&mut a.nan, &b.nan)] {
        for (x, &y) in xa.iter_mut().zip(xb.iter()) {
            add(x, y)?;
        }
    }
    Ok(())
}

impl Backend {
    /// Counts the elements of `source` (a [`crate::device::SliceSource`], a
    /// [`crate::device::FileSource`], a [`crate::device::ReadSource`]) into the bins of `spec`
    /// without holding them all in memory: on the CUDA backend through a [`ChunkPipeline`]
    /// (pinned staging, copies overlapping the counting), on the CPU chunk by chunk (chunks as
    /// [`crate::device::DeviceOptions::from_env`] tunes them, as for a device). The counts
    /// are those of [`Backend::histogram`] over all the elements.
    pub fn histogram_stream<T: Sample + PlainData>(
        &self,
        source: &mut dyn ChunkSource<T>,
        spec: &HistogramSpec,
        strategy: Strategy,
    ) -> Result<Histogram> {
        let (input, align) = (source.remaining(), spec.channels.interleave as usize);
        match self {
            Backend::Cuda(dev) => {
                ChunkPipeline::new(dev, layout_for::<T>(Some(dev), input, align))?.histogram(source, spec, strategy)
            }
            Backend::Cpu => cpu_histogram_stream(source, spec, layout_for::<T>(None, input, align)),
        }
    }
}

/// The CPU's streamed histogram in chunks of `layout`: each chunk counted by the CPU backend,
/// the counts added ([`Backend::histogram_stream`] on the CPU, with a chosen chunking).
pub fn cpu_histogram_stream<T: Sample + PlainData>(
    source: &mut dyn ChunkSource<T>,
    spec: &HistogramSpec,
    layout: ChunkLayout,
) -> Result<Histogram> {
    spec.validate()?;
    staging::check_chunk(layout, spec.channels.interleave as usize)?;
    let mut total = Histogram::zeroed(spec, "cpu", Strategy::ThreadPrivate);
    run_on_host(layout, source, |chunk, _first| {
        let h = cpu::histogram(chunk, spec)?;
        total.strategy = h.strategy;
        add_histogram(&mut total, &h)
    })?;
    Ok(total)
}
