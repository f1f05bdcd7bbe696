//! Printing a histogram: an aligned table, JSON, CSV, or an SVG chart. Outputs are streamed:
//! nothing the size of the histogram is built besides the histogram itself.

use anyhow::{bail, Context};
use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::Ranged;
use plotters::prelude::*;
use std::io::Write;
use std::path::Path;
use tally::histogram::{bin_edges, rule_edge, short, Edge, Weighting};
use tally::{Bins, DType, Histogram, Histogram2d, Histogram2dSpec, HistogramSpec, WeightedHistogram};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
}

pub struct Report<'a> {
    pub spec: &'a HistogramSpec,
    pub hist: &'a Histogram,
    pub labels: &'a [String],
    pub dtype: DType,
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

/// JSON: `counts` is an array for one channel and an array of arrays for several; `below`,
/// `above` and `nan` follow the same shape. Streamed: the document is never held whole.
pub fn write_json(out: &mut impl Write, r: &Report) -> std::io::Result<()> {
    let h = r.hist;
    out.write_all(b"{\"counts\":")?;
    json_rows(out, &h.counts, write_u64)?;
    for (key, v) in [("below", &h.below), ("above", &h.above), ("nan", &h.nan)] {
        write!(out, ",\"{key}\":")?;
        json_per_channel(out, v, write_u64)?;
    }
    out.write_all(b",\"edges\":")?;
    json_edges(out, &r.spec.bins, r.dtype)?;
    out.write_all(b",\"channels\":")?;
    json_value(out, &r.labels)?;
    write!(
        out,
        ",\"backend\":\"{}\",\"strategy\":\"{}\",\"dtype\":\"{}\"",
        h.backend,
        h.strategy.name(),
        r.dtype.name()
    )?;
    write!(out, ",\"samples\":{},\"seconds\":", r.n)?;
    json_f64(out, r.seconds)?;
    out.write_all(b"}\n")
}

/// The one table style of `hist`, counted or weighted: right-aligned columns `bin`, `lower`,
/// `upper` (the rule's own edges) and one column per channel.
fn write_table(
    out: &mut impl Write,
    bins: &Bins,
    dtype: DType,
    labels: &[String],
    value: impl Fn(usize, usize) -> String,
) -> std::io::Result<()> {
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

fn write_csv(
    out: &mut impl Write,
    bins: &Bins,
    dtype: DType,
    labels: &[String],
    value: impl Fn(usize, usize) -> String,
) -> std::io::Result<()> {
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
        Format::Csv => write_csv(out, &r.spec.bins, r.dtype, r.labels, value),
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
            write_table(out, &r.spec.bins, r.dtype, r.labels, value)
        }
    }
}

// ---- plots ------------------------------------------------------------------------------------

/// `--plot` writes SVG; other names are refused before anything is counted.
pub fn check_plot_path(path: Option<&Path>) -> anyhow::Result<()> {
    let Some(path) = path else { return Ok(()) };
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).unwrap_or_default();
    match ext.as_str() {
        "svg" => Ok(()),
        "png" => bail!(
            "--plot {}: PNG output is not built into tally (it would need a font rasteriser); write an .svg file",
            path.display()
        ),
        _ => bail!("--plot {}: the plot is written as SVG; name the file .svg", path.display()),
    }
}

/// One axis of a plot. Plotting libraries search for tick positions in the data's own units,
/// which fails (or never ends) for huge, tiny or extremely narrow ranges; such an axis is drawn
/// in a unit coordinate t in [0, 1] and labelled with the values t stands for. Non-finite
/// values are clamped to the ends.
#[derive(Clone, Copy, Debug)]
pub struct Axis {
    lo: f64,
    hi: f64,
    unit: bool,
}

impl Axis {
    /// An axis over [lo, hi] (finite lo < hi; anything else becomes a unit axis over [0, 1]).
    pub fn new(lo: f64, hi: f64) -> Axis {
        let (lo, hi) = if lo.is_finite() && hi.is_finite() && lo < hi { (lo, hi) } else { (0.0, 1.0) };
        let m = lo.abs().max(hi.abs());
        let tame = m <= 1e15 && (hi - lo) >= m * 1e-9 && (hi - lo) >= 1e-200;
        Axis { lo, hi, unit: !tame }
    }

    pub fn range(&self) -> std::ops::Range<f64> {
        if self.unit {
            0.0..1.0
        } else {
            self.lo..self.hi
        }
    }

    /// Where `x` is drawn.
    pub fn at(&self, x: f64) -> f64 {
        let x = if x.is_nan() { self.lo } else { x.clamp(self.lo, self.hi) };
        if self.unit {
            // Halves first: hi - lo may overflow where hi / 2 - lo / 2 cannot.
            ((x * 0.5 - self.lo * 0.5) / (self.hi * 0.5 - self.lo * 0.5)).clamp(0.0, 1.0)
        } else {
            x
        }
    }

    /// The label of a tick at plot coordinate `t`.
    pub fn label(&self, t: f64) -> String {
        if self.unit {
            let x = 2.0 * (self.lo * 0.5 + t * (self.hi * 0.5 - self.lo * 0.5));
            format!("{x:.3e}")
        } else {
            format!("{t}")
        }
    }

    /// Sets the tick labels of a unit axis (a plain axis keeps the library's own).
    fn labels<'b, X: Ranged<ValueType = f64>, Y: Ranged<ValueType = f64>, DB: DrawingBackend>(
        mesh: &mut MeshStyle<'_, 'b, X, Y, DB>,
        x: (&Axis, &'b dyn Fn(&f64) -> String),
        y: (&Axis, &'b dyn Fn(&f64) -> String),
    ) {
        if x.0.unit {
            mesh.x_label_formatter(x.1);
        }
        if y.0.unit {
            mesh.y_label_formatter(y.1);
        }
    }
}

/// The range of finite `values` and 0, padded by 5% where that stays finite.
fn value_axis(values: impl Iterator<Item = f64>) -> Axis {
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    let pad = |x: f64| if (x * 1.05).is_finite() { x * 1.05 } else { x };
    let (lo, hi) = (pad(lo), pad(hi));
    if lo == hi {
        Axis::new(0.0, 1.0)
    } else {
        Axis::new(lo, hi)
    }
}

const COLOURS: [RGBColor; 5] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
];

/// Bars for one channel, one outline per channel for several; counts on a linear axis.
pub fn plot(r: &Report, path: &Path) -> anyhow::Result<()> {
    check_plot_path(Some(path))?;
    let edges = bin_edges(&r.spec.bins);
    let xa = Axis::new(edges[0], edges[edges.len() - 1]);
    let ya = value_axis(r.hist.counts.iter().flatten().map(|&c| c as f64));
    let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE).context("drawing")?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{} samples ({}), {} bins", r.n, r.dtype, r.spec.bins.count()), ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(xa.range(), ya.range())
        .context("drawing")?;
    let (xl, yl) = (|t: &f64| xa.label(*t), |t: &f64| ya.label(*t));
    let mut mesh = chart.configure_mesh();
    mesh.x_desc("value").y_desc("count");
    Axis::labels(&mut mesh, (&xa, &xl), (&ya, &yl));
    mesh.draw().context("drawing")?;
    for (k, counts) in r.hist.counts.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let label = r.labels.get(k).cloned().unwrap_or_default();
        if r.hist.counts.len() == 1 {
            chart
                .draw_series(counts.iter().enumerate().map(|(b, &c)| {
                    Rectangle::new(
                        [(xa.at(edges[b]), ya.at(0.0)), (xa.at(edges[b + 1]), ya.at(c as f64))],
                        colour.filled(),
                    )
                }))
                .context("drawing")?
                .label(label)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled()));
        } else {
            let steps = counts
                .iter()
                .enumerate()
                .flat_map(|(b, &c)| [(xa.at(edges[b]), ya.at(c as f64)), (xa.at(edges[b + 1]), ya.at(c as f64))]);
            chart
                .draw_series(LineSeries::new(steps, colour.stroke_width(2)))
                .context("drawing")?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], colour.stroke_width(2)));
        }
    }
    chart.configure_series_labels().border_style(BLACK).background_style(WHITE.mix(0.8)).draw().context("drawing")?;
    root.present().context("writing the SVG")?;
    Ok(())
}

// ---- weighted ---------------------------------------------------------------------------------

pub struct WeightedReport<'a> {
    pub spec: &'a HistogramSpec,
    pub hist: &'a WeightedHistogram,
    pub labels: &'a [String],
    pub dtype: DType,
    pub weight_dtype: DType,
    pub n: usize,
    pub seconds: f64,
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
             so the smallest weights may be lost from the sums",
            short(bound),
            short(smallest)
        )
    })
}

/// JSON: `sums` an array for one channel and an array of arrays for several; `below`, `above`,
/// `nan` (summed weights) and their `*_count`s follow the same shape; `weighting` says how the
/// sums were formed (fixed-point scale and error bound, or float atomics). Non-finite sums are
/// the strings "inf", "-inf", "nan", as in the table.
pub fn write_weighted_json(out: &mut impl Write, r: &WeightedReport) -> std::io::Result<()> {
    let h = r.hist;
    out.write_all(b"{\"sums\":")?;
    json_rows(out, &h.sums, write_f64)?;
    for (key, v) in [("below", &h.below), ("above", &h.above), ("nan", &h.nan)] {
        write!(out, ",\"{key}\":")?;
        json_per_channel(out, v, write_f64)?;
    }
    for (key, v) in [("below_count", &h.below_count), ("above_count", &h.above_count), ("nan_count", &h.nan_count)] {
        write!(out, ",\"{key}\":")?;
        json_per_channel(out, v, write_u64)?;
    }
    out.write_all(b",\"edges\":")?;
    json_edges(out, &r.spec.bins, r.dtype)?;
    out.write_all(b",\"channels\":")?;
    json_value(out, &r.labels)?;
    out.write_all(b",\"weighting\":")?;
    json_value(out, &h.weighting)?;
    write!(
        out,
        ",\"backend\":\"{}\",\"strategy\":\"{}\",\"dtype\":\"{}\"",
        h.backend,
        h.strategy.name(),
        r.dtype.name()
    )?;
    write!(out, ",\"weight_dtype\":\"{}\",\"samples\":{},\"seconds\":", r.weight_dtype.name(), r.n)?;
    json_f64(out, r.seconds)?;
    if let Some(w) = &r.warning {
        out.write_all(b",\"warning\":")?;
        json_value(out, w)?;
    }
    out.write_all(b"}\n")
}

fn weighting_line(w: &Weighting) -> String {
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

pub fn print_weighted(r: &WeightedReport, format: Format) -> anyhow::Result<()> {
    if let (Some(w), Format::Csv | Format::Json) = (&r.warning, format) {
        eprintln!("tally: warning: {w}");
    }
    to_stdout(|mut out| write_weighted(&mut out, r, format))
}

pub fn write_weighted(out: &mut impl Write, r: &WeightedReport, format: Format) -> std::io::Result<()> {
    let h = r.hist;
    let value = |k: usize, b: usize| short(h.sums[k][b]);
    match format {
        Format::Json => write_weighted_json(out, r),
        Format::Csv => write_csv(out, &r.spec.bins, r.dtype, r.labels, value),
        Format::Table => {
            writeln!(
                out,
                "# {} {} samples, {} weights, {} bins, backend {}, strategy {}, {:.3} ms",
                r.n,
                r.dtype,
                r.weight_dtype,
                r.spec.bins.count(),
                h.backend,
                h.strategy,
                r.seconds * 1e3
            )?;
            writeln!(out, "# {}", weighting_line(&h.weighting))?;
            if let Some(w) = &r.warning {
                writeln!(out, "# warning: {w}")?;
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
            write_table(out, &r.spec.bins, r.dtype, r.labels, value)
        }
    }
}

/// Bars of the summed weights (first channel; negative sums below the axis; infinite sums
/// clamped to the axis' end).
pub fn plot_weighted(r: &WeightedReport, path: &Path) -> anyhow::Result<()> {
    check_plot_path(Some(path))?;
    let edges = bin_edges(&r.spec.bins);
    let xa = Axis::new(edges[0], edges[edges.len() - 1]);
    let sums = &r.hist.sums[0];
    let ya = value_axis(sums.iter().copied());
    let clamped = if sums.iter().any(|s| !s.is_finite()) { " (infinite sums clamped)" } else { "" };
    let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE).context("drawing")?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{} samples ({}), {} weights, {} bins{clamped}", r.n, r.dtype, r.weight_dtype, r.spec.bins.count()),
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(xa.range(), ya.range())
        .context("drawing")?;
    let (xl, yl) = (|t: &f64| xa.label(*t), |t: &f64| ya.label(*t));
    let mut mesh = chart.configure_mesh();
    mesh.x_desc("value").y_desc("summed weight");
    Axis::labels(&mut mesh, (&xa, &xl), (&ya, &yl));
    mesh.draw().context("drawing")?;
    chart
        .draw_series(sums.iter().enumerate().map(|(b, &s)| {
            Rectangle::new([(xa.at(edges[b]), ya.at(0.0)), (xa.at(edges[b + 1]), ya.at(s))], COLOURS[0].filled())
        }))
        .context("drawing")?;
    root.present().context("writing the SVG")?;
    Ok(())
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
    fn value(&self, ix: usize, iy: usize) -> f64 {
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
    write!(
        out,
        ",\"backend\":\"{}\",\"strategy\":\"{}\",\"dtype\":\"{}\"",
        h.backend,
        h.strategy.name(),
        r.dtype.name()
    )?;
    write!(out, ",\"samples\":{},\"seconds\":", r.n)?;
    json_f64(out, r.seconds)?;
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

/// Viridis, by linear interpolation between five of its colours; t in [0, 1].
fn viridis(t: f64) -> RGBColor {
    const STOPS: [(f64, f64, f64); 5] =
        [(68.0, 1.0, 84.0), (59.0, 82.0, 139.0), (33.0, 145.0, 140.0), (94.0, 201.0, 98.0), (253.0, 231.0, 37.0)];
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 } * 4.0;
    let i = (t.floor() as usize).min(3);
    let f = t - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |x: f64, y: f64| (x + (y - x) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Largest number of cells drawn per axis: finer histograms are drawn with neighbouring bins
/// merged (summed), so that a 1024 x 1024 heat map stays a small SVG.
const MAX_CELLS: usize = 256;

/// A heat map of the matrix, with a colour scale legend and axis labels.
pub fn plot_heatmap(r: &Report2d, path: &Path) -> anyhow::Result<()> {
    check_plot_path(Some(path))?;
    let h = r.hist;
    let (ex, ey) = (bin_edges(&r.spec.x), bin_edges(&r.spec.y));
    let (fx, fy) = (h.bins_x.div_ceil(MAX_CELLS).max(1), h.bins_y.div_ceil(MAX_CELLS).max(1));
    let (cx, cy) = (h.bins_x.div_ceil(fx), h.bins_y.div_ceil(fy));
    let mut cells = vec![0.0f64; cx * cy];
    for ix in 0..h.bins_x {
        for iy in 0..h.bins_y {
            cells[(ix / fx) * cy + iy / fy] += r.value(ix, iy);
        }
    }
    // The colour scale over the finite cells; infinite ones take its ends.
    let finite = || cells.iter().copied().filter(|c| c.is_finite());
    let lo = finite().fold(f64::INFINITY, f64::min).min(0.0);
    let hi = finite().fold(f64::NEG_INFINITY, f64::max).max(lo);
    let scale = Axis::new(lo, if hi > lo { hi } else { lo + 1.0 });
    let (xa, ya) = (Axis::new(ex[0], ex[h.bins_x]), Axis::new(ey[0], ey[h.bins_y]));
    let root = SVGBackend::new(path, (900, 760)).into_drawing_area();
    root.fill(&WHITE).context("drawing")?;
    let (plot, legend) = root.split_horizontally(780);
    let merged = if fx > 1 || fy > 1 { format!(" (drawn {fx} x {fy} bins per cell)") } else { String::new() };
    let mut chart = ChartBuilder::on(&plot)
        .caption(format!("{} pairs, {} x {} bins{merged}", r.n, h.bins_x, h.bins_y), ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(xa.range(), ya.range())
        .context("drawing")?;
    let (xl, yl) = (|t: &f64| xa.label(*t), |t: &f64| ya.label(*t));
    let mut mesh = chart.configure_mesh();
    mesh.disable_mesh().x_desc(r.labels.0).y_desc(r.labels.1);
    Axis::labels(&mut mesh, (&xa, &xl), (&ya, &yl));
    mesh.draw().context("drawing")?;
    let range = scale.range();
    let colour = |v: f64| viridis((scale.at(v) - range.start) / (range.end - range.start));
    chart
        .draw_series((0..cx).flat_map(|i| (0..cy).map(move |j| (i, j))).filter(|&(i, j)| cells[i * cy + j] != 0.0).map(
            |(i, j)| {
                let (x0, x1) = (ex[i * fx], ex[((i + 1) * fx).min(h.bins_x)]);
                let (y0, y1) = (ey[j * fy], ey[((j + 1) * fy).min(h.bins_y)]);
                Rectangle::new([(xa.at(x0), ya.at(y0)), (xa.at(x1), ya.at(y1))], colour(cells[i * cy + j]).filled())
            },
        ))
        .context("drawing")?;
    // The colour scale: a bar from the smallest cell value to the largest, labelled.
    let what = if h.sums.is_empty() { "count per cell" } else { "summed weight per cell" };
    let mut bar = ChartBuilder::on(&legend)
        .margin_top(40)
        .margin_bottom(55)
        .margin_right(10)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..1.0, range.clone())
        .context("drawing")?;
    let sl = |t: &f64| scale.label(*t);
    let mut mesh = bar.configure_mesh();
    mesh.disable_mesh().disable_x_axis().y_desc(what);
    Axis::labels(&mut mesh, (&Axis::new(0.0, 1.0), &sl), (&scale, &sl));
    mesh.draw().context("drawing")?;
    let steps = 100;
    let span = range.end - range.start;
    bar.draw_series((0..steps).map(|s| {
        let (a, b) = (range.start + span * s as f64 / steps as f64, range.start + span * (s + 1) as f64 / steps as f64);
        Rectangle::new([(0.0, a), (1.0, b)], viridis((s as f64 + 0.5) / steps as f64).filled())
    }))
    .context("drawing")?;
    root.present().context("writing the SVG")?;
    Ok(())
}
