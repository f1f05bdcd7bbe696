//! Streamed reductions: every chunk reduced by the one-shot plan, its result words copied on
//! the device into a batch of per-chunk results that is read back once per
//! [`RESULT_BATCH`] chunks (not once per chunk, which would stall the pipeline), each decoded
//! into a partial result (`reduce::partial`) with the chunk's first index and combined in chunk order. Integer sums,
//! exact float sums, counts, NaN counts and extrema with their global indices combine exactly:
//! the result is the one-shot call's, bit for bit. Plain float sums add the chunks' f64 sums,
//! so, as for any change of launch shape, their rounding may differ from the one-shot call's.

use super::cuda::ReducePlan;
use super::partial::Partial;
use super::{cpu, validate, ReduceElement, ReduceOp, ReduceOptions, Reduction};
use crate::device::staging::{layout_for, run_on_host, ChunkLayout, ChunkPipeline, ChunkPlans, ChunkSource};
use crate::device::{Backend, DeviceBuffer};
use crate::error::Result;

/// Chunks whose result words are gathered on the device before one read.
pub const RESULT_BATCH: usize = 64;

/// The partial results of chunks not yet combined: their result words on the device.
struct Batch {
    words: DeviceBuffer<u64>,
    /// (first element, which plan: full or last chunk) of each chunk in the batch.
    chunks: Vec<(u64, bool)>,
}

impl<T: ReduceElement> ChunkPipeline<T> {
    /// Reduces `source` by `op`, chunk by chunk: the result of [`Backend::reduce`] over all the
    /// elements (bit for bit, but for plain float sums and means; see the module's notes).
    pub fn reduce(
        &mut self,
        source: &mut dyn ChunkSource<T>,
        op: ReduceOp,
        options: ReduceOptions,
    ) -> Result<Reduction> {
        validate::<T>(&op, &options)?;
        let dev = self.device().clone();
        let stream = dev.stream();
        let mut plans = ChunkPlans::<ReducePlan<T>>::new(self.layout().chunk_elements);
        let stride = super::policy::OUT_WORDS;
        let mut batch =
            Batch { words: stream.alloc::<u64>(RESULT_BATCH * stride, "streamed results")?, chunks: Vec::new() };
        let mut total = Partial::empty(op, options);
        // Reads the batch back and folds it into `total`, in chunk order.
        let fold = |batch: &mut Batch, plans: &ChunkPlans<ReducePlan<T>>, total: &mut Partial<T>| -> Result<()> {
            if batch.chunks.is_empty() {
                return Ok(());
            }
            let words = stream.download(&batch.words.view())?;
            for (k, &(first, last)) in batch.chunks.iter().enumerate() {
                let plan = plans.get(last).expect("a plan read its chunk");
                let p = plan.partial(&words[k * stride..(k + 1) * stride], first)?;
                total.absorb(p)?;
            }
            batch.chunks.clear();
            Ok(())
        };
        let n = self.run(source, &mut |stream, xs, first| {
            let last = plans.is_last(xs.len());
            let plan = plans.for_chunk(xs.len(), || ReducePlan::new(&dev, op, options, xs.len()))?;
            plan.launch_unposted(stream, xs)?;
            let words = plan.result_words();
            let at = batch.chunks.len() * stride;
            let mut out = batch.words.view_mut();
            let mut into = out.slice_mut(at..at + words).expect("a batch slot");
            stream.copy_on_device(&plan.out_words().slice(..words).expect("the result words"), &mut into)?;
            batch.chunks.push((first, last));
            if batch.chunks.len() == RESULT_BATCH {
                fold(&mut batch, &plans, &mut total)?;
            }
            Ok(())
        })?;
        fold(&mut batch, &plans, &mut total)?;
        total.finish(op, options, n, "cuda")
    }
}

impl Backend {
    /// Reduces the elements of `source` (a [`crate::device::SliceSource`], a
    /// [`crate::device::FileSource`], a [`crate::device::ReadSource`]) by `op` without holding
    /// them all in memory: on the CUDA backend through a [`ChunkPipeline`], on the CPU chunk by
    /// chunk. The result is that of [`Backend::reduce`] over all the elements; plain float sums
    /// and means may round differently (their order of addition follows the chunks).
    pub fn reduce_stream<T: ReduceElement>(
        &self,
        source: &mut dyn ChunkSource<T>,
        op: ReduceOp,
        options: ReduceOptions,
    ) -> Result<Reduction> {
        let input = source.remaining();
        match self {
            Backend::Cuda(dev) => {
                ChunkPipeline::new(dev, layout_for::<T>(Some(dev), input, 1))?.reduce(source, op, options)
            }
            Backend::Cpu => cpu_reduce_stream(source, op, options, layout_for::<T>(None, input, 1)),
        }
    }
}

/// The CPU's streamed reduction in chunks of `layout`: each chunk reduced to a partial, the
/// partials combined ([`Backend::reduce_stream`] on the CPU, with a chosen chunking).
pub fn cpu_reduce_stream<T: ReduceElement>(
    source: &mut dyn ChunkSource<T>,
    op: ReduceOp,
    options: ReduceOptions,
    layout: ChunkLayout,
) -> Result<Reduction> {
    validate::<T>(&op, &options)?;
    let mut total = Partial::empty(op, options);
    let n = run_on_host(layout, source, |xs, first| total.absorb(cpu::partial(xs, op, options, first)))?;
    total.finish(op, options, n, "cpu")
}
