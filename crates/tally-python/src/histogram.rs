//! Histograms: `Backend::histogram`, `histogram_weighted` and `histogram_2d`, the counts or sums
//! written into numpy arrays that the Python layer allocated (it moves them to the input's
//! device), and the binning rule's bin edges. Device samples are counted in two steps,
//! [`histogram_start`] and [`histogram_finish`], so that the Python layer's own work overlaps
//! the kernel; their counts stay on the device.

use crate::array::{parse_dtype, Held, Out, Subject, Target};
use crate::dispatch;
use crate::error::{to_py, value_error};
use crate::plans::{self, Key};
use cudarc::driver::DeviceRepr;
use pyo3::prelude::*;
use std::sync::Arc;
use std::sync::Mutex;
use tally::histogram::{rule_edge, Outliers2d, PairsInput, Weight};
use tally::{
    Bins, Channels, CudaDevice, DType, DevicePairs, DeviceViewMut, ElementType, HistogramPlan, HistogramSpec, Input,
    Pairs, Sample, Strategy, WeightedOptions,
};

/// The bins the Python layer passes: `(bins, lower, upper)` for even bins, or a list of edges.
fn parse_bins(bins: &Bound<'_, PyAny>) -> PyResult<Bins> {
    if let Ok((n, lower, upper)) = bins.extract::<(u32, f64, f64)>() {
        return Ok(Bins::even(n, lower, upper));
    }
    let edges =
        bins.extract::<Vec<f64>>().map_err(|_| value_error("bins: (count, lower, upper) or a list of edges"))?;
    Ok(Bins::Edges(edges))
}

fn parse_strategy(name: &str) -> PyResult<Strategy> {
    name.parse().map_err(to_py)
}

/// What a 1-D histogram counts, and how.
fn prepare(bins: &Bound<'_, PyAny>, strategy: &str) -> PyResult<(HistogramSpec, Strategy)> {
    Ok((HistogramSpec { bins: parse_bins(bins)?, channels: Channels::single() }, parse_strategy(strategy)?))
}

/// A host output's elements (histograms return on the host; the Python layer moves them).
fn host_out<V: DeviceRepr>(out: &mut Out<V>) -> PyResult<&mut [V]> {
    out.host().ok_or_else(|| value_error("histogram outputs are host arrays"))
}

/// The plan's key for even bins (custom edges are not kept: their key would be the edges).
fn plan_key<T: Sample>(dev: &Arc<CudaDevice>, spec: &HistogramSpec, strategy: Strategy, n: usize) -> Option<Key> {
    let Bins::Even { bins, lower, upper } = spec.bins else { return None };
    let what =
        format!("histogram {:?} {} {bins} {:x} {:x}", T::DTYPE, strategy.name(), lower.to_bits(), upper.to_bits());
    Some((Arc::as_ptr(dev) as usize, what, n))
}

/// A histogram of device samples queued by [`histogram_start`] and not yet waited for: the
/// plan that counted them (kept again for the next call by [`histogram_finish`]).
trait Queued: Send {
    /// Queues the counts into `counts` (64-bit words), with the samples above the last edge
    /// added into the last count where `move_above`, waits for the outliers, and returns them
    /// (below, above, NaN: those above as counted) and the strategy that ran.
    fn finish(
        &mut self,
        stream: &tally::Stream,
        counts: &mut DeviceViewMut<'_, u64>,
        move_above: bool,
    ) -> tally::Result<Counted>;
    /// Counters per call (the bins).
    fn bins(&self) -> usize;
    /// The device view it was launched on.
    fn device(&self) -> &Arc<CudaDevice>;
    /// Puts the plan back into the kept plans.
    fn keep(self: Box<Self>);
}

struct QueuedPlan<T: Sample> {
    plan: HistogramPlan<T>,
    /// The device view (and so the stream) the plan was launched on: finishing elsewhere
    /// would read counters that another stream's kernel may still be writing.
    dev: Arc<CudaDevice>,
    bins: usize,
    key: Option<Key>,
}

impl<T: Sample> Queued for QueuedPlan<T> {
    fn finish(
        &mut self,
        stream: &tally::Stream,
        counts: &mut DeviceViewMut<'_, u64>,
        move_above: bool,
    ) -> tally::Result<Counted> {
        // The counts' widening into the caller's int64 array is queued while the kernel most
        // likely still runs (its cost on the host is hidden), then the call waits for the
        // outliers that the kernel's last block posted (a one-pass plan; otherwise a copy
        // behind the widening). The counts are then complete in the order of the call's
        // stream, which the caller's stream follows (`Subject`), as PyTorch's own kernels'
        // results are; the host waited for the outliers alone, as the Rust library's caller of
        // a kept plan does (v38 and earlier: an unposted launch, a copy of the outliers behind
        // the widening and a wait for both, 13-15% over the Rust call at 2^28 on an H200).
        // The last bin's samples on the upper edge are moved on the device, in the same order:
        // an add by the caller's array library could run on another stream than the widening.
        self.plan.copy_counts_u64(stream, counts)?;
        if move_above {
            self.plan.add_above_into_last_u64(stream, counts)?;
        }
        let outliers = self.plan.read_outliers(stream)?;
        Ok((outliers[0], outliers[1], outliers[2], self.plan.strategy().name()))
    }

    fn bins(&self) -> usize {
        self.bins
    }

    fn device(&self) -> &Arc<CudaDevice> {
        &self.dev
    }

    fn keep(self: Box<Self>) {
        if let Some(k) = self.key {
            plans::keep(k, self.plan);
        }
    }
}

/// A device histogram that [`histogram_start`] queued and [`histogram_finish`] completes.
/// Dropped unfinished, its plan goes (in stream order) and nothing else happens.
#[pyclass(module = "tally._native")]
pub struct PendingHistogram {
    queued: Mutex<Option<Box<dyn Queued>>>,
}

fn start_typed<T: Sample>(
    py: Python<'_>,
    x: &Subject<'_>,
    spec: &HistogramSpec,
    strategy: Strategy,
) -> PyResult<PendingHistogram> {
    let dev = x.target.cuda("the samples")?;
    let held = x.held::<T>()?;
    let Input::Device(view) = held.input() else {
        return Err(value_error("histogram_start counts device samples"));
    };
    let key = plan_key::<T>(dev, spec, strategy, view.len());
    // The counts stay on the device (`copy_counts_u64`): the launch posts the outliers alone.
    // Made only where no plan is kept.
    let make = || {
        let tuning = tally::Tuning { posted_counts_max_bytes: Some(0), ..dev.tuning().clone() };
        HistogramPlan::new(dev, &view, spec, strategy, &tuning)
    };
    let plan = py
        .detach(|| -> tally::Result<HistogramPlan<T>> {
            let mut plan = match &key {
                Some(k) => plans::take(k, make)?,
                None => make()?,
            };
            plan.launch(dev.stream(), &view)?;
            Ok(plan)
        })
        .map_err(to_py)?;
    let queued: Box<dyn Queued> = Box::new(QueuedPlan { plan, dev: dev.clone(), bins: spec.bins.count(), key });
    Ok(PendingHistogram { queued: Mutex::new(Some(queued)) })
}

/// Queues a histogram of device samples `x` (see `Subject`) into `bins` (see [`parse_bins`])
/// and returns without waiting, so that the Python layer prepares its results (edges, the
/// counts' array) while the kernel runs; [`histogram_finish`] then waits. The samples must
/// stay alive until then.
#[pyfunction]
pub fn histogram_start(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    bins: &Bound<'_, PyAny>,
    strategy: &str,
) -> PyResult<PendingHistogram> {
    let x = Subject::new(x)?;
    let (spec, strategy) = prepare(bins, strategy)?;
    dispatch!(x.dtype, "a histogram", T => start_typed::<T>(py, &x, &spec, strategy),
        [U8: u8, U16: u16, I32: i32, U32: u32, I64: i64, F32: f32, F64: f64, F16: tally::half::f16,
         BF16: tally::half::bf16])
}

/// Completes `pending` (from [`histogram_start`] of the same `x`): queues the counts into
/// `counts`, int64 device memory of one word per bin on `x`'s device (complete in the order of
/// the caller's stream, as PyTorch's results are), waits for the outliers, and keeps the plan
/// for the next call. `move_above`: the samples counted above the last edge are added into the
/// last count as well (a closed last bin whose upper edge is the data's maximum); the
/// returned outliers still count them above.
/// Returns the samples below the first edge, at or above the last, the NaNs, and the strategy
/// that ran. A pending histogram completes once.
#[pyfunction]
#[pyo3(signature = (x, pending, counts, move_above=false))]
pub fn histogram_finish(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    pending: &PendingHistogram,
    counts: &Bound<'_, PyAny>,
    move_above: bool,
) -> PyResult<Counted> {
    let x = Subject::new(x)?;
    let dev = x.target.cuda("the counts")?;
    let mut slot = pending.queued.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let queued = slot.as_ref().ok_or_else(|| value_error("this histogram was already finished"))?;
    if !Arc::ptr_eq(queued.device(), dev) {
        return Err(value_error("a histogram finishes on the device and stream it was started on (the same x)"));
    }
    // Checked before the pending histogram is taken: a wrong output leaves it to finish.
    let mut out = Out::<u64>::new(counts, &x.target, queued.bins())?;
    let mut queued = slot.take().expect("checked above");
    drop(slot);
    let counted = py
        .detach(|| {
            let mut dest = out.device().ok_or_else(|| tally::Error::invalid("host counts for device samples"))?;
            queued.finish(dev.stream(), &mut dest, move_above)
        })
        .map_err(to_py)?;
    queued.keep();
    Ok(counted)
}

/// Samples below the first edge, at or above the last, NaN; and the strategy that ran.
type Counted = (u64, u64, u64, &'static str);

/// Writes a one-channel histogram's counts into `out` (host int64) and returns its outliers.
fn counted(h: &tally::Histogram, out: &mut Out<i64>) -> PyResult<Counted> {
    for (o, &c) in host_out(out)?.iter_mut().zip(&h.counts[0]) {
        *o = c as i64;
    }
    Ok((h.below[0], h.above[0], h.nan[0], h.strategy.name()))
}

/// Counts host samples `x` (see `Subject`; for device samples see [`histogram_start`]) into
/// `bins` (see [`parse_bins`]), writing the counts into `counts`, a host array of int64, one
/// per bin. Returns the samples below the first edge, at or above the last, the NaNs, and the
/// strategy that ran.
#[pyfunction]
pub fn histogram(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    bins: &Bound<'_, PyAny>,
    strategy: &str,
    counts: &Bound<'_, PyAny>,
) -> PyResult<Counted> {
    let x = Subject::new(x)?;
    let (spec, strategy) = prepare(bins, strategy)?;
    let mut out = Out::<i64>::new(counts, &x.target, spec.bins.count())?;
    let h = dispatch!(x.dtype, "a histogram", T => {
        let held = x.held::<T>()?;
        let backend = x.target.backend();
        py.detach(|| backend.histogram(held.input(), &spec, strategy)).map_err(to_py)
    }, [U8: u8, U16: u16, I32: i32, U32: u32, I64: i64, F32: f32, F64: f64, F16: tally::half::f16,
             BF16: tally::half::bf16])?;
    counted(&h, &mut out)
}

/// Sums of the weights outside the bins and their counts: below, above, NaN.
type OutlierSums = (f64, f64, f64, u64, u64, u64);

fn weighted_typed<T: Sample, W: Weight>(
    py: Python<'_>,
    (x, weights): (&Subject<'_>, &Bound<'_, PyAny>),
    spec: &HistogramSpec,
    strategy: Strategy,
    sums: &mut [f64],
) -> PyResult<(OutlierSums, &'static str)> {
    let held = x.held::<T>()?;
    let w = Held::<W>::new(weights, &x.target, "weights")?;
    let backend = x.target.backend();
    let options = WeightedOptions::default().with_strategy(strategy);
    let h = py.detach(|| backend.histogram_weighted(held.input(), w.input(), spec, options)).map_err(to_py)?;
    sums.copy_from_slice(&h.sums[0]);
    Ok(((h.below[0], h.above[0], h.nan[0], h.below_count[0], h.above_count[0], h.nan_count[0]), h.strategy.name()))
}

/// Sums `weights` (float32 or float64 by `weights_dtype`, one per sample of `x`) into `bins`,
/// writing the sums into `sums` (float64). Returns the weight sums below, above and NaN, their
/// counts, and the strategy that ran.
#[pyfunction]
pub fn histogram_weighted(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    weights: (Bound<'_, PyAny>, String),
    bins: &Bound<'_, PyAny>,
    strategy: &str,
    sums: &Bound<'_, PyAny>,
) -> PyResult<(OutlierSums, &'static str)> {
    let (weights, weights_dtype) = weights;
    let x = Subject::new(x)?;
    let (spec, strategy) = prepare(bins, strategy)?;
    let mut out = Out::<f64>::new(sums, &x.target, spec.bins.count())?;
    let sums = host_out(&mut out)?;
    dispatch!(x.dtype, "a histogram", T => {
        dispatch!(parse_dtype(&weights_dtype)?, "weights", W => {
            weighted_typed::<T, W>(py, (&x, &weights), &spec, strategy, sums)
        }, [F32: f32, F64: f64])
    }, [U8: u8, U16: u16, I32: i32, U32: u32, I64: i64, F32: f32, F64: f64, F16: tally::half::f16,
             BF16: tally::half::bf16])
}

/// The pairs of two held arrays, both on the host or both on the device.
fn pairs<'a, T: DeviceRepr>(x: &'a Held<T>, y: &'a Held<T>) -> tally::Result<PairsInput<'a, T>> {
    match (x.input(), y.input()) {
        (Input::Host(a), Input::Host(b)) => Ok(PairsInput::Host(Pairs::Split(a, b))),
        (Input::Device(a), Input::Device(b)) => Ok(PairsInput::Device(DevicePairs::Split(a, b))),
        _ => Err(tally::Error::invalid("x and y must both be host arrays or both device arrays")),
    }
}

/// Pairs outside the bins (x below, x above, y below, y above, NaN), counted, and their summed
/// weights where weighted.
type Outliers = ((u64, u64, u64, u64, u64), Option<(f64, f64, f64, f64, f64)>);

fn outliers(counts: Outliers2d<u64>, sums: Option<Outliers2d<f64>>) -> Outliers {
    let o = counts;
    (
        (o.x_below, o.x_above, o.y_below, o.y_above, o.nan),
        sums.map(|s| (s.x_below, s.x_above, s.y_below, s.y_above, s.nan)),
    )
}

fn hist2d_typed<T: Sample, W: Weight>(
    py: Python<'_>,
    (x, y, weights): (&Subject<'_>, &Bound<'_, PyAny>, Option<&Bound<'_, PyAny>>),
    spec: &tally::Histogram2dSpec,
    strategy: Strategy,
    out: &Bound<'_, PyAny>,
) -> PyResult<(Outliers, &'static str)> {
    let target = &x.target;
    let (hx, hy) = (x.held::<T>()?, Held::<T>::new(y, target, "y")?);
    let w = weights.map(|w| Held::<W>::new(w, target, "weights")).transpose()?;
    let backend = target.backend();
    let cells = spec.x.count() * spec.y.count();
    let h = py
        .detach(|| {
            let p = pairs(&hx, &hy)?;
            match &w {
                None => backend.histogram_2d(p, spec, strategy),
                Some(w) => backend.histogram_2d_weighted(
                    p,
                    w.input(),
                    spec,
                    WeightedOptions::default().with_strategy(strategy),
                ),
            }
        })
        .map_err(to_py)?;
    if w.is_some() {
        host_out(&mut Out::<f64>::new(out, target, cells)?)?.copy_from_slice(&h.sums);
    } else {
        let mut counts = Out::<i64>::new(out, target, cells)?;
        for (o, &c) in host_out(&mut counts)?.iter_mut().zip(&h.counts) {
            *o = c as i64;
        }
    }
    Ok((outliers(h.outliers, h.outlier_sums), h.strategy.name()))
}

/// Counts (x, y) pairs (`x` see `Subject`, `y` its `(address, elements, on_host)` of the same
/// dtype) into `bins_x` x `bins_y` (row-major), writing `out`: int64 counts, or float64 sums of
/// `weights` (`((address, elements, on_host), "float32" or "float64")`) where there are weights.
/// Returns the outliers and the strategy that ran.
#[pyfunction]
pub fn histogram2d(
    py: Python<'_>,
    coordinates: (Bound<'_, PyAny>, Bound<'_, PyAny>),
    weights: Option<(Bound<'_, PyAny>, String)>,
    bins: (Bound<'_, PyAny>, Bound<'_, PyAny>),
    strategy: &str,
    out: &Bound<'_, PyAny>,
) -> PyResult<(Outliers, &'static str)> {
    let ((x, y), (bins_x, bins_y)) = (coordinates, bins);
    let x = Subject::new(&x)?;
    let spec = tally::Histogram2dSpec { x: parse_bins(&bins_x)?, y: parse_bins(&bins_y)? };
    let strategy = parse_strategy(strategy)?;
    let (w, weights_dtype) = match &weights {
        Some((w, dtype)) => (Some(w), dtype.as_str()),
        None => (None, "float64"),
    };
    dispatch!(x.dtype, "a histogram", T => {
        dispatch!(parse_dtype(weights_dtype)?, "weights", W => {
            hist2d_typed::<T, W>(py, (&x, &y, w), &spec, strategy, out)
        }, [F32: f32, F64: f64])
    }, [U8: u8, U16: u16, I32: i32, U32: u32, I64: i64, F32: f32, F64: f64, F16: tally::half::f16,
             BF16: tally::half::bf16])
}

/// Counts the brightness of every pixel of the image `x` (see `Subject`; `shape`: height, width,
/// channels; `layout`: "hwc" or "chw"; `brightness`: "mean", "rec709", or one weight per
/// channel) into `bins` (see [`parse_bins`]), writing int64 counts into `counts` (host).
/// Returns the pixels below the first edge, at or above the last, the NaNs, and the strategy
/// that ran.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn image_histogram(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    shape: (usize, usize, u32),
    layout: &str,
    brightness: &Bound<'_, PyAny>,
    bins: &Bound<'_, PyAny>,
    strategy: &str,
    counts: &Bound<'_, PyAny>,
) -> PyResult<Counted> {
    let x = Subject::new(x)?;
    let (spec, strategy) = prepare(bins, strategy)?;
    let (height, width, channels) = shape;
    let layout = match layout {
        "hwc" => tally::ImageLayout::Hwc,
        "chw" => tally::ImageLayout::Chw,
        other => return Err(value_error(format!("layout is 'hwc' or 'chw', not '{other}'"))),
    };
    let brightness = match brightness.extract::<String>() {
        Ok(name) if name == "mean" => tally::Brightness::Mean,
        // Gray (and gray with alpha): the luma of gray is the gray value, the mean's channel.
        Ok(name) if name == "rec709" && channels < 3 => tally::Brightness::Mean,
        Ok(name) if name == "rec709" && channels == 4 => tally::Brightness::rec709_alpha(),
        Ok(name) if name == "rec709" => tally::Brightness::rec709(),
        Ok(name) => {
            return Err(value_error(format!("brightness is 'mean', 'rec709' or one weight per channel, not '{name}'")))
        }
        Err(_) => tally::Brightness::Weighted(
            brightness
                .extract::<Vec<f64>>()
                .map_err(|_| value_error("brightness is 'mean', 'rec709' or one weight per channel"))?,
        ),
    };
    let image = tally::Image { height, width, channels, layout, brightness };
    let mut out = Out::<i64>::new(counts, &x.target, spec.bins.count())?;
    let h = dispatch!(x.dtype, "an image histogram", T => {
        let held = x.held::<T>()?;
        let backend = x.target.backend();
        py.detach(|| backend.image_histogram(held.input(), &image, &spec, strategy)).map_err(to_py)
    }, [U8: u8, U16: u16, F32: f32, F64: f64])?;
    counted(&h, &mut out)
}

/// The sample type of a histogram's dtype (the f64 rule for any other).
fn sample_dtype(dtype: ElementType) -> DType {
    match dtype {
        ElementType::U8 => DType::U8,
        ElementType::U16 => DType::U16,
        ElementType::I32 => DType::I32,
        ElementType::U32 => DType::U32,
        ElementType::I64 => DType::I64,
        ElementType::F32 => DType::F32,
        ElementType::F16 => DType::F16,
        ElementType::BF16 => DType::BF16,
        _ => DType::F64,
    }
}

/// Writes into `out` (float64, `bins + 1` of them) where each of `bins` even bins over
/// `[lower, upper)` begins under the rule that bins samples of `dtype` (and where the last one
/// ends): the exact integer rule's least integer of each bin for integer samples with integral
/// bounds, else the least f64 that the f64 rule puts in the bin. Custom edges with these values
/// bin exactly as the even bins do.
#[pyfunction]
pub fn rule_edges(py: Python<'_>, bins: (u32, f64, f64), dtype: &str, out: &Bound<'_, PyAny>) -> PyResult<()> {
    let spec = Bins::even(bins.0, bins.1, bins.2);
    spec.validate().map_err(to_py)?;
    let dtype = sample_dtype(parse_dtype(dtype)?);
    let mut out = Out::<f64>::new(out, &Target::Cpu, bins.0 as usize + 1)?;
    let edges = host_out(&mut out)?;
    py.detach(|| {
        for (i, e) in edges.iter_mut().enumerate() {
            *e = rule_edge(&spec, dtype, i).to_f64();
        }
    });
    Ok(())
}
