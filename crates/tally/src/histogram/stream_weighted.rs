//! Streamed weighted histograms. The fixed-point scale depends on the largest |weight| of the
//! whole input and on its length, so it comes first, from one streamed min/max pass over the
//! weights ([`Backend::fixed_scale_stream`]); then every chunk is summed at that one scale and
//! its raw fixed-point sums are added to the totals with wrapping 64-bit adds. Those are the
//! additions the one-shot call makes, in another order, and integer addition is associative: the
//! result is the one-shot call's, bit for bit. Float accumulation is not streamed.
//!
//! On the GPU the samples come through the pipeline's pinned buffers; each chunk's weights are
//! read on the host and copied on the compute stream before its kernel.

use super::cuda_general::{GeneralInput, GeneralPlan, GeneralSpec};
use super::stream::{add_counters, AccumulateParams, FAMILY};
use super::weighted::{cpu_weighted_raw, weighted_from_raw, Accumulation, FixedScale, Raw, ValueKind, Weight};
use super::{HistogramSpec, Strategy, WeightedHistogram, WeightedOptions};
use crate::device::staging::{
    check_chunk, layout_for, run_on_host, ChunkLayout, ChunkPipeline, ChunkPlans, ChunkSource, PlainData,
};
use crate::device::{Backend, DeviceBuffer};
use crate::error::{Error, Result};
use crate::reduce::{ReduceElement, ReduceOp, ReduceOptions};
use crate::sample::Sample;

/// The next `out.len()` weights, or an error where the weights end before the samples.
fn fill_weights<'b, W>(weights: &mut dyn ChunkSource<W>, out: &'b mut [W]) -> Result<&'b [W]> {
    let mut got = 0;
    while got < out.len() {
        let n = weights.fill(&mut out[got..])?;
        if n == 0 {
            return Err(Error::invalid("there are fewer weights than samples: there must be one weight per sample"));
        }
        got += n;
    }
    Ok(out)
}

/// An error where weights are left once the samples have ended.
fn no_more_weights<W: Default + Clone>(weights: &mut dyn ChunkSource<W>) -> Result<()> {
    if weights.fill(&mut [W::default()])? != 0 {
        return Err(Error::invalid("there are more weights than samples: there must be one weight per sample"));
    }
    Ok(())
}

/// The fixed-point kind of a streamed weighted histogram; float accumulation is refused.
fn fixed_kind(options: &WeightedOptions, scale: FixedScale) -> Result<ValueKind> {
    if options.accumulation != Accumulation::FixedPoint {
        return Err(Error::invalid(
            "a streamed weighted histogram sums in fixed point: float atomics need the whole input at once",
        ));
    }
    Ok(ValueKind::Fixed(scale))
}

impl Backend {
    /// The fixed-point scale of a weighted histogram over the weights of `weights`, from one
    /// streamed min/max pass: what the one-shot call finds for all of them at once (NaN or
    /// infinite weights are an error).
    pub fn fixed_scale_stream<W: Weight + ReduceElement>(
        &self,
        weights: &mut dyn ChunkSource<W>,
    ) -> Result<FixedScale> {
        let r = match self.reduce_stream(weights, ReduceOp::MinMax, ReduceOptions::default()) {
            Err(Error::EmptyInput(_)) => return Ok(FixedScale::new(0.0, 0)),
            r => r?,
        };
        FixedScale::from_extrema(r.value, r.max.unwrap_or(f64::NAN), r.n)
            .ok_or_else(|| Error::invalid("every weight must be finite: the weights hold NaN or an infinity"))
    }

    /// Sums `weights` (one per sample) into the bins of `spec` by the samples of `samples`,
    /// chunk by chunk, at the fixed-point `scale` of all the weights
    /// ([`Backend::fixed_scale_stream`] over the same weights): the result of
    /// [`Backend::histogram_weighted`] over all of them, bit for bit. Fixed point only.
    pub fn histogram_weighted_stream<T: Sample + PlainData, W: Weight + PlainData>(
        &self,
        samples: &mut dyn ChunkSource<T>,
        weights: &mut dyn ChunkSource<W>,
        spec: &HistogramSpec,
        options: WeightedOptions,
        scale: FixedScale,
    ) -> Result<WeightedHistogram> {
        let (input, align) = (samples.remaining(), spec.channels.interleave as usize);
        match self {
            Backend::Cuda(dev) => {
                let layout = layout_for::<T>(Some(dev), input, align);
                ChunkPipeline::new(dev, layout)?.histogram_weighted(samples, weights, spec, options, scale)
            }
            Backend::Cpu => {
                fixed_kind(&options, scale)?;
                cpu_histogram_weighted_stream(samples, weights, spec, scale, layout_for::<T>(None, input, align))
            }
        }
    }
}

/// Adds `b`'s raw accumulators into `a`'s: wrapping, as the one-shot call adds.
fn add_raw(a: &mut Raw, b: &Raw) {
    for (x, y) in [(&mut a.values, &b.values), (&mut a.outlier_values, &b.outlier_values)] {
        x.iter_mut().zip(y).for_each(|(x, &y)| *x = x.wrapping_add(y));
    }
    a.outlier_counts.iter_mut().zip(&b.outlier_counts).for_each(|(x, &y)| *x += y);
}

/// The CPU's streamed weighted histogram in chunks of `layout`, summed in fixed point at
/// `scale` ([`Backend::histogram_weighted_stream`] on the CPU, with a chosen chunking).
pub fn cpu_histogram_weighted_stream<T: Sample + PlainData, W: Weight + PlainData>(
    samples: &mut dyn ChunkSource<T>,
    weights: &mut dyn ChunkSource<W>,
    spec: &HistogramSpec,
    scale: FixedScale,
    layout: ChunkLayout,
) -> Result<WeightedHistogram> {
    // Only fixed-point sums add chunk by chunk as raw integers.
    let kind = ValueKind::Fixed(scale);
    spec.validate()?;
    check_chunk(layout, spec.channels.interleave as usize)?;
    let mut total = cpu_weighted_raw::<T, W>(&[], &[], spec, kind);
    let mut buffer = vec![W::default(); layout.chunk_elements];
    run_on_host(layout, samples, |xs, _first| {
        let ws = fill_weights(weights, &mut buffer[..xs.len()])?;
        add_raw(&mut total, &cpu_weighted_raw(xs, ws, spec, kind));
        Ok(())
    })?;
    no_more_weights(weights)?;
    Ok(weighted_from_raw(spec, &total, kind, "cpu", Strategy::ThreadPrivate, None))
}

impl<T: Sample + PlainData> ChunkPipeline<T> {
    /// Sums `weights` into the bins of `spec` by the samples of `source`, chunk by chunk, at
    /// the fixed-point `scale` of all the weights (see [`Backend::histogram_weighted_stream`]).
    pub fn histogram_weighted<W: Weight + PlainData>(
        &mut self,
        source: &mut dyn ChunkSource<T>,
        weights: &mut dyn ChunkSource<W>,
        spec: &HistogramSpec,
        options: WeightedOptions,
        scale: FixedScale,
    ) -> Result<WeightedHistogram> {
        spec.validate()?;
        let kind = fixed_kind(&options, scale)?;
        check_chunk(self.layout(), spec.channels.interleave as usize)?;
        let dev = self.device().clone();
        let stream = dev.stream();
        let chunk = self.layout().chunk_elements;
        let general = GeneralSpec::OneD(spec.clone());
        let add = dev.kernel::<AccumulateParams>(&FAMILY, &[], "tally_accumulate", 0)?;
        let mut host_weights = vec![W::default(); chunk];
        let mut device_weights = stream.alloc::<W>(chunk, "streamed weights")?;
        // The totals are sized by the first plan.
        let mut plans = ChunkPlans::<GeneralPlan<T, W>>::new(chunk);
        let mut totals: Option<[DeviceBuffer<u64>; 3]> = None;
        let mut ran = None;
        self.run(source, &mut |stream, xs, _first| {
            let n = xs.len();
            let ws = fill_weights(weights, &mut host_weights[..n])?;
            let mut all = device_weights.view_mut();
            stream.copy_to_device(ws, &mut all.slice_mut(..n).expect("a chunk of weights"))?;
            let plan = plans.for_chunk(n, || {
                GeneralPlan::new(
                    &dev,
                    n,
                    &general,
                    true,
                    kind,
                    options.strategy,
                    options.shared_atomics,
                    dev.tuning(),
                    None,
                )
            })?;
            let w = device_weights.view();
            let input = GeneralInput {
                x: xs.slice(..).expect("the chunk"),
                y: None,
                interleaved: false,
                weights: Some(w.slice(..n).expect("a chunk of weights")),
            };
            plan.launch(stream, &input)?;
            ran.get_or_insert((plan.strategy(), plan.shared_atomics()));
            let (_, accumulators) = plan.accumulators_mut();
            let totals = match &mut totals {
                Some(t) => t,
                None => {
                    let zeros = |b: &DeviceBuffer<u64>| stream.alloc_zeros::<u64>(b.len(), "streamed weighted totals");
                    totals.insert([zeros(accumulators[0])?, zeros(accumulators[1])?, zeros(accumulators[2])?])
                }
            };
            for (from, into) in accumulators.into_iter().zip(totals.iter_mut()) {
                let bytes = from.len() * 8;
                add_counters(stream, &add, from.view().ptr(stream.cuda_stream()).cast(), bytes, true, into)?;
            }
            Ok(())
        })?;
        no_more_weights(weights)?;
        let Some(totals) = totals else {
            // No samples: the one-shot call's empty histogram.
            return Backend::Cuda(dev.clone()).histogram_weighted(&[] as &[T], &[] as &[W], spec, options);
        };
        let [values, outlier_values, outlier_counts] = totals.map(|t| stream.download(&t.view()));
        let raw = Raw { values: values?, outlier_values: outlier_values?, outlier_counts: outlier_counts? };
        let (strategy, shared) = ran.unwrap_or((options.strategy, None));
        Ok(weighted_from_raw(spec, &raw, kind, "cuda", strategy, shared))
    }
}
