//! `tally hist` of a file it streams (a raw file given `--dtype`, a `.npy` file of plain
//! elements): counted chunk by chunk through the pipeline, never read whole, with the counts of
//! the whole-file path. A default range takes one streamed min/max pass before the counting.

use super::hist::HistArgs;
use super::hist_range::{bins_for_span, Span};
use super::input::with_type;
use super::limits;
use super::output;
use super::stream::{self, Progress, StreamedFile};
use anyhow::Context;
use tally::device::{ChunkSource, FileSource, PlainData};
use tally::reduce::{ReduceElement, ReduceOp, ReduceOptions};
use tally::{Backend, Bins, Channels, DType, HistogramSpec, Sample};

/// Elements read at a time by the host pass that finds the finite extent of floats.
const SPAN_PIECE: usize = 1 << 20;

/// The file `tally hist` streams, where it streams one: a file (not standard input, not CSV, not
/// an image) of a type read as stored.
pub fn streamed(a: &HistArgs) -> anyhow::Result<Option<StreamedFile>> {
    let Some(path) = a.file.as_deref().filter(|_| !a.demo && a.channels.is_none() && a.column.is_none()) else {
        return Ok(None);
    };
    stream::streamed_file(path, a.dtype)
}

/// Runs `tally hist` over the streamed `file`.
pub fn run(a: &HistArgs, file: &StreamedFile) -> anyhow::Result<()> {
    output::check_plot_path(a.out.plot.as_deref())?;
    let backend = a.out.backend.open()?;
    with_type!(file.dtype, T => run_typed::<T>(a, file, &backend))
}

fn run_typed<T: Sample + ReduceElement + PlainData>(
    a: &HistArgs,
    file: &StreamedFile,
    backend: &Backend,
) -> anyhow::Result<()> {
    let bins = match (&a.edges, a.range) {
        (Some(e), _) => Bins::Edges(e.clone()),
        (None, Some((lo, hi))) => Bins::even(a.bins, lo, hi),
        (None, None) => bins_for_span(T::DTYPE, span::<T>(backend, file)?, a.bins)?,
    };
    let spec = HistogramSpec { bins, channels: Channels { interleave: 1, selected: vec![0] } };
    spec.validate()?;
    let counters = spec.bins.count() as u128;
    limits::check_memory(Some(limits::counting_bytes(counters)), &format!("a histogram of {counters} counters"))?;
    let quiet = a.out.json || a.out.csv;
    let mut source = Progress::<T>::open(file, quiet)?;
    let n = source.remaining().unwrap_or(0) as usize;
    let start = std::time::Instant::now();
    let h = stream::histogram(backend, &mut source, &spec, a.strategy)?;
    let labels = ["value".to_string()];
    let report = output::Report {
        spec: &spec,
        hist: &h,
        labels: &labels,
        dtype: T::DTYPE,
        n,
        seconds: start.elapsed().as_secs_f64(),
    };
    output::print(&report, a.out.format())?;
    if let Some(path) = &a.out.plot {
        output::plot(&report, path).with_context(|| format!("cannot write the plot {}", path.display()))?;
    }
    Ok(())
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
    let r = match stream::reduce(backend, &mut source, ReduceOp::MinMax, ReduceOptions::skip_nan()) {
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
