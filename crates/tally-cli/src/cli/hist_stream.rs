//! `tally hist` of a file it streams (a raw file given `--dtype`, a `.npy` file of plain
//! elements), weighted or not: counted chunk by chunk through the pipeline, never read whole,
//! with the result of the whole-file path. A default range takes one streamed min/max pass
//! before the counting; fixed-point weights one streamed pass for their largest magnitude.

use super::hist::{show, show_weighted, smallest_nonzero, spec_for, HistArgs};
use super::hist_range::{bins_for_span, Span};
use super::input::with_type;
use super::output;
use super::stream::{self, Progress, StreamedFile};
use tally::device::{ChunkSource, FileSource, PlainData};
use tally::histogram::{Accumulation, Weight};
use tally::reduce::{ReduceElement, ReduceOp, ReduceOptions};
use tally::{Backend, Channels, DType, HistogramSpec, Sample};

/// Elements read at a time by the host pass that finds the finite extent of floats.
const SPAN_PIECE: usize = 1 << 20;

/// The files `tally hist` streams: the samples and, where given, the weights (f32 or f64).
pub struct StreamedFiles {
    samples: StreamedFile,
    weights: Option<StreamedFile>,
}

/// The files `tally hist` streams, where it streams them: files (not standard input, not CSV,
/// not images) of types read as stored, weights summed in fixed point, on one device (a device
/// set takes the files whole, split over its devices).
pub fn streamed(a: &HistArgs) -> anyhow::Result<Option<StreamedFiles>> {
    // Float atomics and exact sums need the whole input at once; only fixed-point sums stream.
    let fixed_point = a.weights.options(a.strategy).accumulation == Accumulation::FixedPoint;
    let streamable = a.out.devices.devices.is_none() && fixed_point;
    let plain = !a.demo && a.channels.is_none() && a.column.is_none() && a.brightness.is_none();
    let Some(path) = a.file.as_deref().filter(|_| plain && streamable) else { return Ok(None) };
    let Some(samples) = stream::streamed_file(path, a.dtype, "--dtype")? else { return Ok(None) };
    let weights = match a.weights.weights.as_deref() {
        None => None,
        Some(w) if a.weights.weights_column.is_some() || w.as_os_str() == "-" => return Ok(None),
        Some(w) => {
            // A raw file of weights has --weights-dtype, else the samples' type; a .npy its own.
            let npy = w.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy"));
            let dtype = if npy { None } else { a.weights.weights_dtype.or(Some(samples.dtype)) };
            match stream::streamed_file(w, dtype, "--weights-dtype")? {
                // Weights stream as stored, so only the weight types (a 16-bit float file is
                // read whole and widened).
                Some(file) if matches!(file.dtype, DType::F32 | DType::F64) => Some(file),
                _ => return Ok(None),
            }
        }
    };
    Ok(Some(StreamedFiles { samples, weights }))
}

/// Runs `tally hist` over the streamed `files`.
pub fn run(a: &HistArgs, files: &StreamedFiles) -> anyhow::Result<()> {
    output::check_plot_path(a.out.plot.as_deref())?;
    let backend = a.out.backend.open()?;
    with_type!(files.samples.dtype, T => match &files.weights {
        None => run_typed::<T>(a, &files.samples, &backend),
        Some(w) if w.dtype == DType::F32 => run_weighted::<T, f32>(a, &files.samples, w, &backend),
        Some(w) => run_weighted::<T, f64>(a, &files.samples, w, &backend),
    })
}

/// The bins of `a` for the samples of `file`; checks the spec and the memory of its counters.
fn spec_of<T: Sample + ReduceElement + PlainData>(
    a: &HistArgs,
    file: &StreamedFile,
    backend: &Backend,
) -> anyhow::Result<HistogramSpec> {
    let channels = Channels { interleave: 1, selected: vec![0] };
    spec_for(a, channels, || bins_for_span(T::DTYPE, span::<T>(backend, file)?, a.bins))
}

/// A source of weights that notes the smallest nonzero magnitude of those it passes on (for
/// the warning of weights too small for the fixed-point sums).
struct NotingSmallest<W> {
    inner: Progress<W>,
    smallest: Option<f64>,
}

impl<W: Weight + PlainData> ChunkSource<W> for NotingSmallest<W> {
    fn remaining(&self) -> Option<u64> {
        self.inner.remaining()
    }

    fn fill(&mut self, out: &mut [W]) -> tally::Result<usize> {
        let n = self.inner.fill(out)?;
        self.smallest = match (self.smallest, smallest_nonzero(&out[..n])) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Ok(n)
    }
}

fn run_weighted<T: Sample + ReduceElement + PlainData, W: Weight + ReduceElement + PlainData>(
    a: &HistArgs,
    file: &StreamedFile,
    weights: &StreamedFile,
    backend: &Backend,
) -> anyhow::Result<()> {
    let quiet = a.out.json || a.out.csv;
    let mut source = Progress::<T>::open(file, quiet)?;
    let mut ws = NotingSmallest { inner: Progress::<W>::open(weights, true)?, smallest: None };
    // The lengths first: a default range takes a whole pass over the samples.
    let (n, m) = (source.remaining().unwrap_or(0), ws.remaining().unwrap_or(0));
    if n != m {
        return Err(
            tally::Error::invalid(format!("{n} samples but {m} weights: there must be one weight per sample")).into()
        );
    }
    let spec = spec_of::<T>(a, file, backend)?;
    let start = std::time::Instant::now();
    let scale = backend.fixed_scale_stream(&mut Progress::<W>::open(weights, true)?)?;
    let options = a.weights.options(a.strategy);
    let h = backend.histogram_weighted_stream(&mut source, &mut ws, &spec, options, scale)?;
    let labels = ["value".to_string()];
    let seconds = start.elapsed().as_secs_f64();
    let report = output::Report {
        spec: &spec,
        hist: &h,
        labels: &labels,
        dtype: T::DTYPE,
        rule: T::DTYPE,
        n: n as usize,
        seconds,
    };
    show_weighted(a, report, W::DTYPE, ws.smallest)
}

fn run_typed<T: Sample + ReduceElement + PlainData>(
    a: &HistArgs,
    file: &StreamedFile,
    backend: &Backend,
) -> anyhow::Result<()> {
    let spec = spec_of::<T>(a, file, backend)?;
    let quiet = a.out.json || a.out.csv;
    let mut source = Progress::<T>::open(file, quiet)?;
    let n = source.remaining().unwrap_or(0) as usize;
    let start = std::time::Instant::now();
    let h = backend.histogram_stream(&mut source, &spec, a.strategy)?;
    let labels = ["value".to_string()];
    let seconds = start.elapsed().as_secs_f64();
    show(a, &output::Report { spec: &spec, hist: &h, labels: &labels, dtype: T::DTYPE, rule: T::DTYPE, n, seconds })
}

/// The extent of the file's values for a default range: one streamed min/max pass (none for
/// 8-bit data, whose range is fixed); where floats reach an infinity, one more pass on the host
/// for the finite extent.
fn span<T: Sample + ReduceElement + PlainData>(backend: &Backend, file: &StreamedFile) -> anyhow::Result<Span> {
    if T::DTYPE == DType::U8 {
        return Ok(Span::Empty);
    }
    let mut source = Progress::<T>::open(file, true)?;
    if source.remaining() == Some(0) {
        return Ok(Span::Empty);
    }
    let r = match backend.reduce_stream(&mut source, ReduceOp::MinMax, ReduceOptions::skip_nan()) {
        Err(tally::Error::EmptyInput(_)) => return Ok(Span::Empty),
        r => r?,
    };
    let max = r.max.unwrap_or(f64::NAN);
    if !T::DTYPE.is_float() {
        let int = |x: Option<i128>, v: f64| x.and_then(|x| i64::try_from(x).ok()).unwrap_or(v as i64);
        return Ok(Span::Ints(int(r.exact, r.value), int(r.max_exact, max)));
    }
    if r.value.is_finite() && max.is_finite() {
        return Ok(Span::Floats(r.value, max));
    }
    let mut source = FileSource::<T>::open(&file.path, file.offset, file.elements)?;
    let mut piece = vec![T::default(); SPAN_PIECE];
    let mut span = Span::Empty;
    loop {
        let got = source.fill(&mut piece)?;
        span = span.join(Span::of(&piece[..got]));
        if got < piece.len() {
            return Ok(span);
        }
    }
}
