//! Printing a histogram: an aligned table, JSON, CSV, or an SVG chart. Outputs are streamed:
//! nothing the size of the histogram is built besides the histogram itself.

use std::io::Write;
use tally::histogram::{rule_edge, short, Edge, Weighting};
use tally::{Bins, DType, Histogram, Histogram2d, Histogram2dSpec, HistogramSpec, Strategy, WeightedHistogram};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
}

/// A histogram with what it was made from and how long it took.
pub struct Report<'a, H = Histogram> {
    pub spec: &'a HistogramSpec,
    pub hist: &'a H,
    pub labels: &'a [String],
    pub dtype: DType,
    /// The type whose binning rule the edges are printed by: `dtype`, or f64 where the samples
    /// counted are computed from it (an image's brightness).
    pub rule: DType,
    pub n: usize,
    pub seconds: f64,
}

// ---- writing numbers --------------------------------------------------------------------------

/// A float in JSON: a number where finite, else the string "inf", "-inf" or "nan" (the table
/// and the CSV print the same words).
fn json_f64(out: &mut dyn Write, x: f64) -> std::io::Result<()> {
    if x.is_finite() {
        serde_json::to_writer(out, &x).map_err(std::io::Error::other)
    } else {
        write!(out, "\"{}\"", short(x))
    }
}

/// A float as a JSON value: a number where finite, else the string "nan", "inf" or "-inf".
pub fn json_number(x: f64) -> serde_json::Value {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        (if x > 0.0 { "inf" } else { "-inf" }).into()
    } else {
        x.into()
    }
}

/// An integer as a JSON value: a number where it fits in an i64, else its decimal string.
pub fn json_integer(i: i128) -> serde_json::Value {
    i64::try_from(i).map(serde_json::Value::from).unwrap_or_else(|_| i.to_string().into())
}

fn json_edge(out: &mut dyn Write, e: Edge) -> std::io::Result<()> {
    match e {
        Edge::Int(i) => write!(out, "{i}"),
        Edge::Float(x) => json_f64(out, x),
    }
}

fn json_value(out: &mut dyn Write, v: &impl serde::Serialize) -> std::io::Result<()> {
    serde_json::to_writer(out, v).map_err(std::io::Error::other)
}

/// `[a, b, ...]`, one element written at a time: nothing the size of the histogram is built.
fn json_array<T>(
    out: &mut dyn Write,
    items: impl IntoIterator<Item = T>,
    mut each: impl FnMut(&mut dyn Write, T) -> std::io::Result<()>,
) -> std::io::Result<()> {
    out.write_all(b"[")?;
    for (i, x) in items.into_iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        each(out, x)?;
    }
    out.write_all(b"]")
}

/// One value per selected channel: the value itself for one channel, an array for several.
fn json_per_channel<T: Copy>(
    out: &mut dyn Write,
    v: &[T],
    mut each: impl FnMut(&mut dyn Write, T) -> std::io::Result<()>,
) -> std::io::Result<()> {
    if v.len() == 1 {
        each(out, v[0])
    } else {
        json_array(out, v.iter().copied(), each)
    }
}

fn json_rows<T: Copy>(
    out: &mut dyn Write,
    rows: &[Vec<T>],
    each: impl Fn(&mut dyn Write, T) -> std::io::Result<()> + Copy,
) -> std::io::Result<()> {
    if rows.len() == 1 {
        json_array(out, rows[0].iter().copied(), each)
    } else {
        json_array(out, rows, |o, r| json_array(o, r.iter().copied(), each))
    }
}

fn write_u64(out: &mut dyn Write, x: u64) -> std::io::Result<()> {
    write!(out, "{x}")
}

fn write_f64(out: &mut dyn Write, x: f64) -> std::io::Result<()> {
    json_f64(out, x)
}

fn json_edges(out: &mut dyn Write, bins: &Bins, dtype: DType) -> std::io::Result<()> {
    json_array(out, 0..=bins.count(), |o, i| json_edge(o, rule_edge(bins, dtype, i)))
}

/// `,"key":v` for each key: one value per selected channel (`below`, `above`, `nan`, ...).
fn json_channel_fields<T: Copy>(
    out: &mut dyn Write,
    fields: [(&str, &Vec<T>); 3],
    each: impl Fn(&mut dyn Write, T) -> std::io::Result<()> + Copy,
) -> std::io::Result<()> {
    for (key, v) in fields {
        write!(out, ",\"{key}\":")?;
        json_per_channel(out, v, each)?;
    }
    Ok(())
}

/// The fields that say how a histogram was made, as every JSON document of `hist` and `hist2d`
/// ends: `backend`, `strategy`, `dtype`, the preformatted `extra` fields, `samples`, `seconds`.
fn json_run_fields(
    out: &mut dyn Write,
    (backend, strategy): (&str, Strategy),
    dtype: DType,
    extra: &str,
    (n, seconds): (usize, f64),
) -> std::io::Result<()> {
    write!(out, ",\"backend\":\"{backend}\",\"strategy\":\"{}\",\"dtype\":\"{}\"", strategy.name(), dtype.name())?;
    write!(out, "{extra},\"samples\":{n},\"seconds\":")?;
    json_f64(out, seconds)
}

/// JSON: `counts` is an array for one channel and an array of arrays for several; `below`,
/// `above` and `nan` follow the same shape. Streamed: the document is never held whole.
pub fn write_json(out: &mut impl Write, r: &Report) -> std::io::Result<()> {
    let h = r.hist;
    out.write_all(b"{\"counts\":")?;
    json_rows(out, &h.counts, write_u64)?;
    json_channel_fields(out, [("below", &h.below), ("above", &h.above), ("nan", &h.nan)], write_u64)?;
    out.write_all(b",\"edges\":")?;
    json_edges(out, &r.spec.bins, r.rule)?;
    out.write_all(b",\"channels\":")?;
    json_value(out, &r.labels)?;
    json_run_fields(out, (h.backend, h.strategy), r.dtype, "", (r.n, r.seconds))?;
    out.write_all(b"}\n")
}

/// The one table style of `hist`, counted or weighted: right-aligned columns `bin`, `lower`,
/// `upper` (the rule's own edges) and one column per channel.
fn write_table<H>(out: &mut impl Write, r: &Report<H>, value: impl Fn(usize, usize) -> String) -> std::io::Result<()> {
    let (bins, dtype, labels) = (&r.spec.bins, r.rule, r.labels);
    let n = bins.count();
    let edge = |i: usize| rule_edge(bins, dtype, i).to_string();
    let wl = (0..=n).map(|i| edge(i).len()).max().unwrap_or(1).max(5);
    let wb = n.to_string().len().max(3);
    let wc: Vec<usize> = labels
        .iter()
        .enumerate()
        .map(|(k, l)| (0..n).map(|b| value(k, b).len()).max().unwrap_or(1).max(l.len()))
        .collect();
    write!(out, "{:>wb$}  {:>wl$}  {:>wl$}", "bin", "lower", "upper")?;
    for (l, w) in labels.iter().zip(&wc) {
        write!(out, "  {l:>w$}")?;
    }
    writeln!(out)?;
    let mut lower = edge(0);
    for b in 0..n {
        let upper = edge(b + 1);
        write!(out, "{b:>wb$}  {lower:>wl$}  {upper:>wl$}")?;
        for (k, w) in wc.iter().enumerate() {
            write!(out, "  {:>w$}", value(k, b))?;
        }
        writeln!(out)?;
        lower = upper;
    }
    Ok(())
}

fn write_csv<H>(out: &mut impl Write, r: &Report<H>, value: impl Fn(usize, usize) -> String) -> std::io::Result<()> {
    let (bins, dtype, labels) = (&r.spec.bins, r.rule, r.labels);
    write!(out, "bin,lower,upper")?;
    for l in labels {
        write!(out, ",{l}")?;
    }
    writeln!(out)?;
    let mut lower = rule_edge(bins, dtype, 0);
    for b in 0..bins.count() {
        let upper = rule_edge(bins, dtype, b + 1);
        write!(out, "{b},{lower},{upper}")?;
        for k in 0..labels.len() {
            write!(out, ",{}", value(k, b))?;
        }
        writeln!(out)?;
        lower = upper;
    }
    Ok(())
}

/// Runs `f` on buffered stdout.
fn to_stdout(f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    f(&mut out)?;
    out.flush()?;
    Ok(())
}

pub fn print(r: &Report, format: Format) -> anyhow::Result<()> {
    to_stdout(|mut out| write_report(&mut out, r, format))
}

pub fn write_report(out: &mut impl Write, r: &Report, format: Format) -> std::io::Result<()> {
    let h = r.hist;
    let value = |k: usize, b: usize| h.counts[k][b].to_string();
    match format {
        Format::Json => write_json(out, r),
        Format::Csv => write_csv(out, r, value),
        Format::Table => {
            writeln!(
                out,
                "# {} {} samples, {} bins, backend {}, strategy {}, {:.3} ms",
                r.n,
                r.dtype,
                r.spec.bins.count(),
                h.backend,
                h.strategy,
                r.seconds * 1e3
            )?;
            for (k, l) in r.labels.iter().enumerate() {
                writeln!(out, "# {l}: below {}, above {}, nan {}", h.below[k], h.above[k], h.nan[k])?;
            }
            write_table(out, r, value)
        }
    }
}

pub use super::plot::{check_plot_path, plot, plot_heatmap, plot_weighted};

// ---- weighted ---------------------------------------------------------------------------------

pub struct WeightedReport<'a> {
    pub report: Report<'a, WeightedHistogram>,
    pub weight_dtype: DType,
    /// Said with the result (table, JSON and CSV on stderr) when small weights may be lost.
    pub warning: Option<String>,
}

/// A warning when the fixed-point error bound exceeds the smallest nonzero weight: weights that
/// small may vanish from the sums (within the stated bound, but not what one expects).
pub fn dynamic_range_warning(w: &Weighting, smallest_nonzero: Option<f64>) -> Option<String> {
    let (bound, smallest) = (w.error_bound?, smallest_nonzero?);
    (bound > smallest).then(|| {
        format!(
            "the weights span a wide range: the error bound {} exceeds the smallest nonzero weight {}, \
             so the smallest weights may be lost from the sums (--exact sums them exactly)",
            short(bound),
            short(smallest)
        )
    })
}

/// JSON: `sums` an array for one channel and an array of arrays for several; `below`, `above`,
/// `nan` (summed weights) and their `*_count`s follow the same shape; `weighting` says how the
/// sums were formed (fixed-point scale and error bound, or float atomics). Non-finite sums are
/// the strings "inf", "-inf", "nan", as in the table.
pub fn write_weighted_json(out: &mut impl Write, w: &WeightedReport) -> std::io::Result<()> {
    let r = &w.report;
    let h = r.hist;
    out.write_all(b"{\"sums\":")?;
    json_rows(out, &h.sums, write_f64)?;
    json_channel_fields(out, [("below", &h.below), ("above", &h.above), ("nan", &h.nan)], write_f64)?;
    let counts = [("below_count", &h.below_count), ("above_count", &h.above_count), ("nan_count", &h.nan_count)];
    json_channel_fields(out, counts, write_u64)?;
    out.write_all(b",\"edges\":")?;
    json_edges(out, &r.spec.bins, r.rule)?;
    out.write_all(b",\"channels\":")?;
    json_value(out, &r.labels)?;
    out.write_all(b",\"weighting\":")?;
    json_value(out, &h.weighting)?;
    let weight_dtype = format!(",\"weight_dtype\":\"{}\"", w.weight_dtype.name());
    json_run_fields(out, (h.backend, h.strategy), r.dtype, &weight_dtype, (r.n, r.seconds))?;
    if let Some(warning) = &w.warning {
        out.write_all(b",\"warning\":")?;
        json_value(out, warning)?;
    }
    out.write_all(b"}\n")
}

fn weighting_line(w: &Weighting) -> String {
    if w.accumulation == tally::Accumulation::Exact {
        return "exact sums, rounded once (deterministic)".to_string();
    }
    match (w.fixed, w.error_bound) {
        (Some(f), Some(b)) => format!(
            "fixed point 2^{} (deterministic), per-bin error at most {} + 2^-53 relative{}",
            f.log2,
            short(b),
            w.shared_atomics.map(|s| format!(", shared atomics {}", s.name())).unwrap_or_default()
        ),
        _ => "float atomics (not deterministic)".to_string(),
    }
}

pub fn print_weighted(w: &WeightedReport, format: Format) -> anyhow::Result<()> {
    if let (Some(warning), Format::Csv | Format::Json) = (&w.warning, format) {
        eprintln!("tally: warning: {warning}");
    }
    to_stdout(|mut out| write_weighted(&mut out, w, format))
}

pub fn write_weighted(out: &mut impl Write, w: &WeightedReport, format: Format) -> std::io::Result<()> {
    let r = &w.report;
    let h = r.hist;
    let value = |k: usize, b: usize| short(h.sums[k][b]);
    match format {
        Format::Json => write_weighted_json(out, w),
        Format::Csv => write_csv(out, r, value),
        Format::Table => {
            writeln!(
                out,
                "# {} {} samples, {} weights, {} bins, backend {}, strategy {}, {:.3} ms",
                r.n,
                r.dtype,
                w.weight_dtype,
                r.spec.bins.count(),
                h.backend,
                h.strategy,
                r.seconds * 1e3
            )?;
            writeln!(out, "# {}", weighting_line(&h.weighting))?;
            if let Some(warning) = &w.warning {
                writeln!(out, "# warning: {warning}")?;
            }
            for (k, l) in r.labels.iter().enumerate() {
                writeln!(
                    out,
                    "# {l}: below {} ({} samples), above {} ({}), nan {} ({})",
                    short(h.below[k]),
                    h.below_count[k],
                    short(h.above[k]),
                    h.above_count[k],
                    short(h.nan[k]),
                    h.nan_count[k]
                )?;
            }
            write_table(out, r, value)
        }
    }
}

// ---- 2-D ----------------------------------------------------------------------------------------

pub struct Report2d<'a> {
    pub spec: &'a Histogram2dSpec,
    pub hist: &'a Histogram2d,
    pub labels: (&'a str, &'a str),
    pub dtype: DType,
    pub n: usize,
    pub seconds: f64,
}

impl Report2d<'_> {
    /// The value of bin (ix, iy): count, or summed weight.
    pub(super) fn value(&self, ix: usize, iy: usize) -> f64 {
        let h = self.hist;
        let k = ix * h.bins_y + iy;
        if h.sums.is_empty() {
            h.counts[k] as f64
        } else {
            h.sums[k]
        }
    }
}

/// JSON: `counts` (or `sums`, weighted) as `bins_x` rows of `bins_y` values: `[ix][iy]`.
/// Streamed, one value at a time.
pub fn write_json_2d(out: &mut impl Write, r: &Report2d) -> std::io::Result<()> {
    let h = r.hist;
    let by = h.bins_y.max(1);
    write!(out, "{{\"bins_x\":{},\"bins_y\":{}", h.bins_x, h.bins_y)?;
    if h.sums.is_empty() {
        out.write_all(b",\"counts\":")?;
        json_array(out, h.counts.chunks(by), |o, row| json_array(o, row.iter().copied(), write_u64))?;
    } else {
        out.write_all(b",\"sums\":")?;
        json_array(out, h.sums.chunks(by), |o, row| json_array(o, row.iter().copied(), write_f64))?;
    }
    out.write_all(b",\"edges_x\":")?;
    json_edges(out, &r.spec.x, r.dtype)?;
    out.write_all(b",\"edges_y\":")?;
    json_edges(out, &r.spec.y, r.dtype)?;
    out.write_all(b",\"outliers\":")?;
    json_value(out, &h.outliers)?;
    if let Some(s) = &h.outlier_sums {
        out.write_all(b",\"outlier_sums\":{")?;
        for (i, (k, v)) in [
            ("x_below", s.x_below),
            ("x_above", s.x_above),
            ("y_below", s.y_below),
            ("y_above", s.y_above),
            ("nan", s.nan),
        ]
        .into_iter()
        .enumerate()
        {
            write!(out, "{}\"{k}\":", if i > 0 { "," } else { "" })?;
            json_f64(out, v)?;
        }
        out.write_all(b"}")?;
    }
    if let Some(w) = &h.weighting {
        out.write_all(b",\"weighting\":")?;
        json_value(out, w)?;
    }
    out.write_all(b",\"columns\":")?;
    json_value(out, &[r.labels.0, r.labels.1])?;
    json_run_fields(out, (h.backend, h.strategy), r.dtype, "", (r.n, r.seconds))?;
    out.write_all(b"}\n")
}

pub fn print_2d(r: &Report2d, format: Format) -> anyhow::Result<()> {
    to_stdout(|mut out| write_2d(&mut out, r, format))
}

pub fn write_2d(out: &mut impl Write, r: &Report2d, format: Format) -> std::io::Result<()> {
    let ex = |i: usize| rule_edge(&r.spec.x, r.dtype, i);
    let ey = |i: usize| rule_edge(&r.spec.y, r.dtype, i);
    let h = r.hist;
    let what = if h.sums.is_empty() { "count" } else { "sum" };
    match format {
        Format::Json => write_json_2d(out, r)?,
        Format::Csv => {
            writeln!(out, "ix,iy,x_lower,x_upper,y_lower,y_upper,{what}")?;
            for ix in 0..h.bins_x {
                for iy in 0..h.bins_y {
                    let v = short(r.value(ix, iy));
                    writeln!(out, "{ix},{iy},{},{},{},{},{v}", ex(ix), ex(ix + 1), ey(iy), ey(iy + 1))?;
                }
            }
        }
        Format::Table => {
            writeln!(
                out,
                "# {} ({}, {}) pairs of {}, {} x {} bins, backend {}, strategy {}, {:.3} ms",
                r.n,
                r.labels.0,
                r.labels.1,
                r.dtype,
                h.bins_x,
                h.bins_y,
                h.backend,
                h.strategy,
                r.seconds * 1e3
            )?;
            if let Some(w) = &h.weighting {
                writeln!(out, "# {}", weighting_line(w))?;
            }
            let o = &h.outliers;
            writeln!(
                out,
                "# not binned: x below {}, x above {}, y below {}, y above {}, nan {}",
                o.x_below, o.x_above, o.y_below, o.y_above, o.nan
            )?;
            if let Some(s) = &h.outlier_sums {
                writeln!(
                    out,
                    "# their weights: x below {}, x above {}, y below {}, y above {}, nan {}",
                    short(s.x_below),
                    short(s.x_above),
                    short(s.y_below),
                    short(s.y_above),
                    short(s.nan)
                )?;
            }
            writeln!(out, "# non-empty bins only")?;
            writeln!(out, "ix\tiy\tx_lower\tx_upper\ty_lower\ty_upper\t{what}")?;
            for ix in 0..h.bins_x {
                for iy in 0..h.bins_y {
                    let v = r.value(ix, iy);
                    if v != 0.0 {
                        let v = short(v);
                        writeln!(out, "{ix}\t{iy}\t{}\t{}\t{}\t{}\t{v}", ex(ix), ex(ix + 1), ey(iy), ey(iy + 1))?;
                    }
                }
            }
        }
    }
    Ok(())
}
