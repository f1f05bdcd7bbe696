//! Printing a histogram: an aligned table, JSON, CSV, or an SVG chart.

use anyhow::Context;
use plotters::prelude::*;
use serde_json::json;
use std::io::Write;
use std::path::Path;
use tally::histogram::{bin_edges, Weighting};
use tally::{DType, Histogram, Histogram2d, Histogram2dSpec, HistogramSpec, WeightedHistogram};

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

/// One value per selected channel: the value itself for one channel, an array for several.
fn per_channel<T: serde::Serialize>(v: &[T]) -> serde_json::Value {
    if v.len() == 1 {
        json!(v[0])
    } else {
        json!(v)
    }
}

/// JSON: `counts` is an array for one channel and an array of arrays for several; `below`,
/// `above` and `nan` follow the same shape.
pub fn to_json(r: &Report) -> serde_json::Value {
    let h = r.hist;
    json!({
        "counts": per_channel(&h.counts),
        "below": per_channel(&h.below),
        "above": per_channel(&h.above),
        "nan": per_channel(&h.nan),
        "edges": bin_edges(&r.spec.bins),
        "channels": r.labels,
        "backend": h.backend,
        "strategy": h.strategy.name(),
        "dtype": r.dtype.name(),
        "samples": r.n,
        "seconds": r.seconds,
    })
}

pub fn print(r: &Report, format: Format) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let edges = bin_edges(&r.spec.bins);
    let h = r.hist;
    match format {
        Format::Json => writeln!(out, "{}", serde_json::to_string(&to_json(r))?)?,
        Format::Csv => {
            write!(out, "bin,lower,upper")?;
            for l in r.labels {
                write!(out, ",{l}")?;
            }
            writeln!(out)?;
            for b in 0..r.spec.bins.count() {
                write!(out, "{b},{},{}", edges[b], edges[b + 1])?;
                for c in &h.counts {
                    write!(out, ",{}", c[b])?;
                }
                writeln!(out)?;
            }
        }
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
            let fmt_edge = |x: f64| format!("{x}");
            let wl = edges.iter().map(|&e| fmt_edge(e).len()).max().unwrap_or(1).max(5);
            let wb = r.spec.bins.count().to_string().len().max(3);
            let wc: Vec<usize> = h
                .counts
                .iter()
                .zip(r.labels)
                .map(|(c, l)| c.iter().max().copied().unwrap_or(0).to_string().len().max(l.len()))
                .collect();
            write!(out, "{:>wb$}  {:>wl$}  {:>wl$}", "bin", "lower", "upper")?;
            for (l, w) in r.labels.iter().zip(&wc) {
                write!(out, "  {l:>w$}")?;
            }
            writeln!(out)?;
            for b in 0..r.spec.bins.count() {
                write!(out, "{b:>wb$}  {:>wl$}  {:>wl$}", fmt_edge(edges[b]), fmt_edge(edges[b + 1]))?;
                for (c, w) in h.counts.iter().zip(&wc) {
                    write!(out, "  {:>w$}", c[b])?;
                }
                writeln!(out)?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

const COLOURS: [RGBColor; 5] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
];

/// Bars for one channel, one outline per channel for several; counts on a linear axis.
pub fn plot_svg(r: &Report, path: &Path) -> anyhow::Result<()> {
    let edges = bin_edges(&r.spec.bins);
    let (x0, x1) = (edges[0], edges[edges.len() - 1]);
    let ymax = r.hist.counts.iter().flatten().copied().max().unwrap_or(0).max(1) as f64 * 1.05;
    let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE).context("drawing")?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{} samples ({}), {} bins", r.n, r.dtype, r.spec.bins.count()), ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, 0f64..ymax)
        .context("drawing")?;
    chart.configure_mesh().x_desc("value").y_desc("count").draw().context("drawing")?;
    for (k, counts) in r.hist.counts.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let label = r.labels.get(k).cloned().unwrap_or_default();
        if r.hist.counts.len() == 1 {
            chart
                .draw_series(
                    counts
                        .iter()
                        .enumerate()
                        .map(|(b, &c)| Rectangle::new([(edges[b], 0.0), (edges[b + 1], c as f64)], colour.filled())),
                )
                .context("drawing")?
                .label(label)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled()));
        } else {
            let steps = counts.iter().enumerate().flat_map(|(b, &c)| [(edges[b], c as f64), (edges[b + 1], c as f64)]);
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
}

/// JSON: `sums` an array for one channel and an array of arrays for several; `below`, `above`,
/// `nan` (summed weights) and their `*_count`s follow the same shape; `weighting` says how the
/// sums were formed (fixed-point scale and error bound, or float atomics).
pub fn weighted_json(r: &WeightedReport) -> serde_json::Value {
    let h = r.hist;
    json!({
        "sums": per_channel(&h.sums),
        "below": per_channel(&h.below),
        "above": per_channel(&h.above),
        "nan": per_channel(&h.nan),
        "below_count": per_channel(&h.below_count),
        "above_count": per_channel(&h.above_count),
        "nan_count": per_channel(&h.nan_count),
        "edges": bin_edges(&r.spec.bins),
        "channels": r.labels,
        "weighting": h.weighting,
        "backend": h.backend,
        "strategy": h.strategy.name(),
        "dtype": r.dtype.name(),
        "weight_dtype": r.weight_dtype.name(),
        "samples": r.n,
        "seconds": r.seconds,
    })
}

fn weighting_line(w: &Weighting) -> String {
    match (w.fixed, w.error_bound) {
        (Some(f), Some(b)) => format!(
            "fixed point 2^{} (deterministic), per-bin error at most {b:e} + 2^-53 relative{}",
            f.log2,
            w.shared_atomics.map(|s| format!(", shared atomics {}", s.name())).unwrap_or_default()
        ),
        _ => "float atomics (not deterministic)".to_string(),
    }
}

pub fn print_weighted(r: &WeightedReport, format: Format) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let edges = bin_edges(&r.spec.bins);
    let h = r.hist;
    match format {
        Format::Json => writeln!(out, "{}", serde_json::to_string(&weighted_json(r))?)?,
        Format::Csv => {
            write!(out, "bin,lower,upper")?;
            for l in r.labels {
                write!(out, ",{l}")?;
            }
            writeln!(out)?;
            for b in 0..r.spec.bins.count() {
                write!(out, "{b},{},{}", edges[b], edges[b + 1])?;
                for c in &h.sums {
                    write!(out, ",{}", c[b])?;
                }
                writeln!(out)?;
            }
        }
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
            for (k, l) in r.labels.iter().enumerate() {
                writeln!(
                    out,
                    "# {l}: below {} ({} samples), above {} ({}), nan {} ({})",
                    h.below[k], h.below_count[k], h.above[k], h.above_count[k], h.nan[k], h.nan_count[k]
                )?;
            }
            write!(out, "bin\tlower\tupper")?;
            for l in r.labels {
                write!(out, "\t{l}")?;
            }
            writeln!(out)?;
            for b in 0..r.spec.bins.count() {
                write!(out, "{b}\t{}\t{}", edges[b], edges[b + 1])?;
                for c in &h.sums {
                    write!(out, "\t{}", c[b])?;
                }
                writeln!(out)?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// Bars of the summed weights (first channel; negative sums below the axis).
pub fn plot_weighted_svg(r: &WeightedReport, path: &Path) -> anyhow::Result<()> {
    let edges = bin_edges(&r.spec.bins);
    let (x0, x1) = (edges[0], edges[edges.len() - 1]);
    let sums = &r.hist.sums[0];
    let lo = sums.iter().copied().fold(0.0f64, f64::min) * 1.05;
    let hi = sums.iter().copied().fold(0.0f64, f64::max) * 1.05;
    let (lo, hi) = if lo == hi { (0.0, 1.0) } else { (lo, hi) };
    let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE).context("drawing")?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{} samples ({}), {} weights, {} bins", r.n, r.dtype, r.weight_dtype, r.spec.bins.count()),
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(x0..x1, lo..hi)
        .context("drawing")?;
    chart.configure_mesh().x_desc("value").y_desc("summed weight").draw().context("drawing")?;
    chart
        .draw_series(
            sums.iter()
                .enumerate()
                .map(|(b, &s)| Rectangle::new([(edges[b], 0.0), (edges[b + 1], s)], COLOURS[0].filled())),
        )
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
pub fn json_2d(r: &Report2d) -> serde_json::Value {
    let h = r.hist;
    let rows = |v: &[u64]| v.chunks(h.bins_y.max(1)).map(|c| c.to_vec()).collect::<Vec<_>>();
    let rows_f = |v: &[f64]| v.chunks(h.bins_y.max(1)).map(|c| c.to_vec()).collect::<Vec<_>>();
    let mut j = json!({
        "bins_x": h.bins_x,
        "bins_y": h.bins_y,
        "edges_x": bin_edges(&r.spec.x),
        "edges_y": bin_edges(&r.spec.y),
        "outliers": h.outliers,
        "columns": [r.labels.0, r.labels.1],
        "backend": h.backend,
        "strategy": h.strategy.name(),
        "dtype": r.dtype.name(),
        "samples": r.n,
        "seconds": r.seconds,
    });
    if h.sums.is_empty() {
        j["counts"] = json!(rows(&h.counts));
    } else {
        j["sums"] = json!(rows_f(&h.sums));
        j["outlier_sums"] = json!(h.outlier_sums);
        j["weighting"] = json!(h.weighting);
    }
    j
}

pub fn print_2d(r: &Report2d, format: Format) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let (ex, ey) = (bin_edges(&r.spec.x), bin_edges(&r.spec.y));
    let h = r.hist;
    let what = if h.sums.is_empty() { "count" } else { "sum" };
    match format {
        Format::Json => writeln!(out, "{}", serde_json::to_string(&json_2d(r))?)?,
        Format::Csv => {
            writeln!(out, "ix,iy,x_lower,x_upper,y_lower,y_upper,{what}")?;
            for ix in 0..h.bins_x {
                for iy in 0..h.bins_y {
                    writeln!(out, "{ix},{iy},{},{},{},{},{}", ex[ix], ex[ix + 1], ey[iy], ey[iy + 1], r.value(ix, iy))?;
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
                    s.x_below, s.x_above, s.y_below, s.y_above, s.nan
                )?;
            }
            writeln!(out, "# non-empty bins only")?;
            writeln!(out, "ix\tiy\tx_lower\tx_upper\ty_lower\ty_upper\t{what}")?;
            for ix in 0..h.bins_x {
                for iy in 0..h.bins_y {
                    let v = r.value(ix, iy);
                    if v != 0.0 {
                        writeln!(out, "{ix}\t{iy}\t{}\t{}\t{}\t{}\t{v}", ex[ix], ex[ix + 1], ey[iy], ey[iy + 1])?;
                    }
                }
            }
        }
    }
    out.flush()?;
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
pub fn plot_heatmap_svg(r: &Report2d, path: &Path) -> anyhow::Result<()> {
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
    let lo = cells.iter().copied().fold(f64::INFINITY, f64::min).min(0.0);
    let hi = cells.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let span = if hi > lo { hi - lo } else { 1.0 };
    let root = SVGBackend::new(path, (900, 760)).into_drawing_area();
    root.fill(&WHITE).context("drawing")?;
    let (plot, legend) = root.split_horizontally(780);
    let merged = if fx > 1 || fy > 1 { format!(" (drawn {fx} x {fy} bins per cell)") } else { String::new() };
    let mut chart = ChartBuilder::on(&plot)
        .caption(format!("{} pairs, {} x {} bins{merged}", r.n, h.bins_x, h.bins_y), ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(ex[0]..ex[h.bins_x], ey[0]..ey[h.bins_y])
        .context("drawing")?;
    chart.configure_mesh().disable_mesh().x_desc(r.labels.0).y_desc(r.labels.1).draw().context("drawing")?;
    chart
        .draw_series((0..cx).flat_map(|i| (0..cy).map(move |j| (i, j))).filter(|&(i, j)| cells[i * cy + j] != 0.0).map(
            |(i, j)| {
                let (x0, x1) = (ex[i * fx], ex[((i + 1) * fx).min(h.bins_x)]);
                let (y0, y1) = (ey[j * fy], ey[((j + 1) * fy).min(h.bins_y)]);
                Rectangle::new([(x0, y0), (x1, y1)], viridis((cells[i * cy + j] - lo) / span).filled())
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
        .build_cartesian_2d(0.0..1.0, lo..lo + span)
        .context("drawing")?;
    bar.configure_mesh().disable_mesh().disable_x_axis().y_desc(what).draw().context("drawing")?;
    let steps = 100;
    bar.draw_series((0..steps).map(|s| {
        let (a, b) = (lo + span * s as f64 / steps as f64, lo + span * (s + 1) as f64 / steps as f64);
        Rectangle::new([(0.0, a), (1.0, b)], viridis((s as f64 + 0.5) / steps as f64).filled())
    }))
    .context("drawing")?;
    root.present().context("writing the SVG")?;
    Ok(())
}
