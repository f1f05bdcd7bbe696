//! Printing a histogram: an aligned table, JSON, CSV, or an SVG chart.

use anyhow::Context;
use plotters::prelude::*;
use serde_json::json;
use std::io::Write;
use std::path::Path;
use tally::histogram::bin_edges;
use tally::{DType, Histogram, HistogramSpec};

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

/// JSON: `counts` is an array for one channel and an array of arrays for several; `below`,
/// `above` and `nan` follow the same shape.
pub fn to_json(r: &Report) -> serde_json::Value {
    let h = r.hist;
    let one = h.counts.len() == 1;
    let pick = |v: &Vec<u64>| if one { json!(v[0]) } else { json!(v) };
    json!({
        "counts": if one { json!(h.counts[0]) } else { json!(h.counts) },
        "below": pick(&h.below),
        "above": pick(&h.above),
        "nan": pick(&h.nan),
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

const COLOURS: [RGBColor; 5] = [RGBColor(31, 119, 180), RGBColor(214, 39, 40), RGBColor(44, 160, 44), RGBColor(255, 127, 14), RGBColor(148, 103, 189)];

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
                .draw_series(counts.iter().enumerate().map(|(b, &c)| {
                    Rectangle::new([(edges[b], 0.0), (edges[b + 1], c as f64)], colour.filled())
                }))
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
