//! The lab's charts (SVG or PNG): log-log lines of the global and shared labs, and the histogram lab's
//! throughput panels.

use super::lab::{pow2, same_hot};
use super::lab_histogram::HistogramReport;
use super::plot::{render, PALETTE};
use anyhow::Context;
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use tally::lab::{self, GlobalMode, GlobalReport, SharedOp, SharedReport};
use tally::Strategy;

/// A log range around the positive values in `v`, widened by `pad` on each side.
fn log_bounds(v: impl Iterator<Item = f64>, pad: f64) -> (f64, f64) {
    let (lo, hi) = v.filter(|x| x.is_finite() && *x > 0.0).fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    if lo > hi {
        (1.0, 10.0)
    } else {
        (lo / pad, hi * pad)
    }
}

#[derive(Clone, Copy)]
enum Stroke {
    Solid,
    Dashed,
    Dotted,
}

/// One line with round markers and a legend entry, in a chart over any coordinates.
fn draw_line<'a, DB: DrawingBackend, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    points: Vec<(f64, f64)>,
    colour: RGBColor,
    stroke: Stroke,
    label: String,
) -> anyhow::Result<()>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    DB::ErrorType: 'static,
{
    if points.is_empty() {
        return Ok(());
    }
    let style = colour.stroke_width(2);
    let anno = match stroke {
        Stroke::Solid => chart.draw_series(LineSeries::new(points.clone(), style)).context("drawing")?,
        Stroke::Dashed => chart.draw_series(DashedLineSeries::new(points.clone(), 8, 5, style)).context("drawing")?,
        Stroke::Dotted => chart.draw_series(DashedLineSeries::new(points.clone(), 2, 4, style)).context("drawing")?,
    };
    anno.label(label).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
    chart.draw_series(points.into_iter().map(|p| Circle::new(p, 3, colour.filled()))).context("drawing")?;
    Ok(())
}

type LogLog = Cartesian2d<LogCoord<f64>, LogCoord<f64>>;

fn log_log_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
    x: (f64, f64),
    y: (f64, f64),
    x_desc: &str,
    y_desc: &str,
) -> anyhow::Result<ChartContext<'a, DB, LogLog>>
where
    DB::ErrorType: 'static,
{
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(72)
        .build_cartesian_2d((x.0..x.1).log_scale(), (y.0..y.1).log_scale())
        .context("drawing")?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&|v| short(*v))
        .y_label_formatter(&|v| short(*v))
        .draw()
        .context("drawing")?;
    Ok(chart)
}

/// 1.5G, 20M, 66k, 3, 0.25: tick labels that fit.
fn short(v: f64) -> String {
    let a = v.abs();
    let (x, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let s = if x.fract().abs() < 1e-9 || x.abs() >= 10.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}").trim_end_matches('0').trim_end_matches('.').to_string()
    };
    format!("{s}{suffix}")
}

fn legend<'a, DB: DrawingBackend + 'a, C: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, C>,
    pos: SeriesLabelPosition,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(pos)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.85))
        .label_font(("sans-serif", 12))
        .draw()
        .context("drawing")
}

pub(super) fn plot_global(r: &GlobalReport, path: &Path) -> anyhow::Result<()> {
    let panels = r.config.ops.len().max(1);
    render!(path, (560 * panels as u32, 520), |root| draw_global(r, root))
}

fn draw_global<DB: DrawingBackend>(r: &GlobalReport, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let panels = r.config.ops.len().max(1);
    let areas = root.split_evenly((1, panels));
    let x = log_bounds(r.rows.iter().map(|x| x.addresses as f64), 1.6);
    let y = log_bounds(r.rows.iter().filter_map(|x| x.ops_per_second), 2.0);
    for (area, &ops) in areas.iter().zip(&r.config.ops) {
        let caption = format!("atomicAdd, {} operations ({}, {})", pow2(ops), r.device, r.backend);
        let mut chart = log_log_chart(area, &caption, x, y, "distinct addresses", "atomic operations per second")?;
        for (ti, &t) in r.config.types.iter().enumerate() {
            for &mode in &r.config.modes {
                let mut pts: Vec<(f64, f64)> = r
                    .rows
                    .iter()
                    .filter(|x| x.counter_type == t && x.mode == mode && x.ops == ops)
                    .filter_map(|x| x.ops_per_second.map(|o| (x.addresses as f64, o)))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                let stroke = match mode {
                    GlobalMode::Plain => Stroke::Solid,
                    GlobalMode::WarpAggregated => Stroke::Dashed,
                    GlobalMode::Compiler => Stroke::Dotted,
                };
                draw_line(
                    &mut chart,
                    pts,
                    PALETTE[ti % PALETTE.len()],
                    stroke,
                    format!("{} {}", t.name(), mode.name()),
                )?;
            }
        }
        legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    }
    Ok(())
}

pub(super) fn plot_shared(r: &SharedReport, path: &Path) -> anyhow::Result<()> {
    render!(path, (900, 560), |root| draw_shared(r, root))
}

fn draw_shared<DB: DrawingBackend>(r: &SharedReport, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let x = log_bounds(r.rows.iter().map(|x| x.threads_per_address as f64), 1.4);
    let y = log_bounds(r.rows.iter().filter_map(|x| x.cycles_per_op), 1.6);
    let caption = format!("shared-memory atomics ({}, {} threads per block)", r.device, r.block_threads);
    let mut chart = log_log_chart(root, &caption, x, y, "threads per address", "cycles per warp-wide atomic")?;
    for (i, &op) in r.config.ops.iter().enumerate() {
        let pts: Vec<(f64, f64)> = r
            .rows
            .iter()
            .filter(|x| x.op == op)
            .filter_map(|x| x.cycles_per_op.map(|c| (x.threads_per_address as f64, c)))
            .collect();
        let stroke = if op.value_type() == lab::SharedType::F32 && op != SharedOp::AddF32 && op != SharedOp::AddF32Inf {
            Stroke::Dashed
        } else {
            Stroke::Solid
        };
        draw_line(&mut chart, pts, PALETTE[i % PALETTE.len()], stroke, op.description().to_string())?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    Ok(())
}

/// One line per strategy (a colour each) and CUB's (`None`: black, dashed), with the legend.
fn draw_strategies<'a, DB: DrawingBackend + 'a, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    series: &[(Option<Strategy>, String)],
    points: impl Fn(Option<Strategy>) -> Vec<(f64, f64)>,
) -> anyhow::Result<()>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    DB::ErrorType: 'static,
{
    for (i, (s, name)) in series.iter().cloned().enumerate() {
        let (colour, stroke) = match s {
            Some(_) => (PALETTE[i % PALETTE.len()], Stroke::Solid),
            None => (RGBColor(0, 0, 0), Stroke::Dashed),
        };
        draw_line(chart, points(s), colour, stroke, name)?;
    }
    legend(chart, SeriesLabelPosition::LowerLeft)
}

pub(super) fn plot_histogram(r: &HistogramReport, path: &Path) -> anyhow::Result<()> {
    render!(path, (1200, 540), |root| draw_histogram_lab(r, root))
}

fn draw_histogram_lab<DB: DrawingBackend>(r: &HistogramReport, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let c = &r.config;
    let (left, right) = root.split_horizontally(600);
    let y = log_bounds(r.rows.iter().filter_map(|x| x.gbs).chain(r.cub.iter().filter_map(|x| x.gbs)), 1.8);
    // One line per strategy, and CUB's (black, dashed) where it ran.
    let series: Vec<(Option<Strategy>, String)> = c
        .strategies
        .iter()
        .map(|&s| (Some(s), s.name().to_string()))
        .chain(std::iter::once((None, "CUB HistogramEven".to_string())))
        .collect();
    let gbs = |s: Option<Strategy>, bins: u32, hot: f64| -> Option<f64> {
        match s {
            Some(s) => r
                .rows
                .iter()
                .find(|x| x.strategy == s && x.bins == bins && same_hot(x.hot_fraction, hot))
                .and_then(|x| x.gbs),
            None => r.cub.iter().find(|x| x.bins == bins && same_hot(x.hot_fraction, hot)).and_then(|x| x.gbs),
        }
    };
    // Left: GB/s against the bin count, uniform samples, log-log.
    let x = log_bounds(c.sweep_bins.iter().map(|&b| b as f64), 1.4);
    let caption = format!("{} i32 samples, uniform ({})", short(c.samples as f64), r.device);
    let mut chart = log_log_chart(&left, &caption, x, y, "bins", "GB/s")?;
    draw_strategies(&mut chart, &series, |s| {
        c.sweep_bins.iter().filter_map(|&b| gbs(s, b, 0.0).map(|g| (b as f64, g))).collect()
    })?;
    // Right: GB/s against the share of samples in one bin; a linear x, a log y.
    let caption = format!("{} bins, skewed", c.table_bins);
    let mut chart = ChartBuilder::on(&right)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(72)
        .build_cartesian_2d(-0.02f64..1.02f64, (y.0..y.1).log_scale())
        .context("drawing")?;
    chart
        .configure_mesh()
        .x_desc("share of samples in bin 0")
        .y_desc("GB/s")
        .y_label_formatter(&|v| short(*v))
        .draw()
        .context("drawing")?;
    draw_strategies(&mut chart, &series, |s| {
        c.sweep_hot.iter().filter_map(|&h| gbs(s, c.table_bins, h).map(|g| (h, g))).collect()
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The charts of the GPU-only labs, drawn from reports built here (their figures are test
    //! input, not measurements): the CPU has no version of these labs to run end to end.
    use super::super::lab_histogram::{CubRow, HistogramConfig, HistogramRow};
    use super::*;
    use tally::lab::{SharedConfig, SharedRow};

    fn svg_text(name: &str, draw: impl FnOnce(&Path) -> anyhow::Result<()>) -> String {
        let path = std::env::temp_dir().join(format!("tally-lab-plot-{}-{name}.svg", std::process::id()));
        draw(&path).unwrap();
        let s = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert!(s.contains("<svg") && s.len() > 2000, "{name}: not a chart");
        s
    }

    #[test]
    fn shared_chart_has_its_axes_and_one_line_per_op() {
        let config = SharedConfig::default();
        let rows = config
            .ops
            .iter()
            .flat_map(|&op| {
                config.threads_per_address.iter().map(move |&t| SharedRow {
                    op,
                    description: op.description(),
                    threads_per_address: t,
                    targets: 256 / t,
                    cycles_per_op: Some(4.0 * t as f64),
                    cycles_per_op_max: Some(5.0 * t as f64),
                    verified: true,
                    error: None,
                })
            })
            .collect();
        let r = SharedReport {
            lab: "shared",
            backend: "cuda",
            device: "test device".into(),
            blocks: 2,
            block_threads: 256,
            config,
            rows,
            notes: vec![],
        };
        let s = svg_text("shared", |p| plot_shared(&r, p));
        for label in [
            "threads per address",
            "cycles per warp-wide atomic",
            "f32 max, CAS loop",
            "f32 max, int max / uint min",
            "u32 atomicAdd",
        ] {
            assert!(s.contains(label), "lacks '{label}'");
        }
        assert!(s.matches("<polyline").count() >= SharedOp::ALL.len(), "one line per operation");
    }

    #[test]
    fn histogram_chart_has_both_panels_and_cub() {
        let config = HistogramConfig::default();
        let mut rows = Vec::new();
        for (bins, hot) in config.cases() {
            for &s in &config.strategies {
                let g = 100.0 + bins as f64 / 10.0 + hot * 50.0;
                rows.push(HistogramRow {
                    bins,
                    hot_fraction: hot,
                    strategy: s,
                    ran: Some(s),
                    ms: Some(1.0),
                    gbs: Some(g),
                    verified: true,
                    error: None,
                });
            }
        }
        let cub = config
            .cases()
            .into_iter()
            .map(|(bins, hot)| CubRow {
                bins,
                hot_fraction: hot,
                ms: Some(1.0),
                gbs: Some(500.0),
                verified: true,
                error: None,
            })
            .collect();
        let r = HistogramReport {
            lab: "histogram",
            backend: "cuda",
            device: "test device".into(),
            dtype: "i32",
            config,
            rows,
            cub,
            cub_note: None,
            notes: vec![],
        };
        let s = svg_text("histogram", |p| plot_histogram(&r, p));
        for label in
            ["bins", "GB/s", "share of samples in bin 0", "CUB HistogramEven", "block-shared", "warp-aggregated"]
        {
            assert!(s.contains(label), "lacks '{label}'");
        }
        // A CUB-less report (no nvcc) still draws.
        let r = HistogramReport { cub: vec![], cub_note: Some("no nvcc".into()), ..r };
        svg_text("histogram-nocub", |p| plot_histogram(&r, p));
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(short(1.5e9), "1.5G");
        assert_eq!(short(2e7), "20M");
        assert_eq!(short(65536.0), "66k");
        assert_eq!(short(3.0), "3");
        assert_eq!(short(0.25), "0.25");
        assert_eq!(pow2(1 << 20), "2^20");
        assert_eq!(pow2(256), "256");
    }
}
