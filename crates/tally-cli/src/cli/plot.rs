//! Charts of histograms (`--plot FILE.svg` or `FILE.png`): bars or outlines per channel, summed
//! weights, and 2-D heat maps; and the one place that turns a drawing into an SVG or PNG file.

use super::output::{Report, Report2d, WeightedReport};
use anyhow::{bail, Context};
use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::Ranged;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::OnceLock;
use tally::histogram::bin_edges;

/// The file formats `--plot` writes, chosen by the file name's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlotFormat {
    /// `.svg`: text and shapes, for any size.
    Svg,
    /// `.png`: pixels, drawn with the font compiled into tally.
    Png,
}

/// The format of a `--plot` file, or a one-line error naming the accepted extensions.
pub fn plot_format(path: &Path) -> anyhow::Result<PlotFormat> {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).unwrap_or_default();
    match ext.as_str() {
        "svg" => Ok(PlotFormat::Svg),
        "png" => Ok(PlotFormat::Png),
        _ => bail!("--plot {}: plots are written as .svg (SVG) or .png (PNG); name the file so", path.display()),
    }
}

/// Checks a `--plot` file name before anything is counted.
pub fn check_plot_path(path: Option<&Path>) -> anyhow::Result<()> {
    path.map_or(Ok(()), |p| plot_format(p).map(|_| ()))
}

/// DejaVu Sans, cut down to Latin-1 and a few symbols (crates/tally-cli/fonts/README.md): PNG
/// text needs a font rasteriser and a font, and machines without fonts installed (CI, servers)
/// must draw the same pictures.
static FONT: &[u8] = include_bytes!("../../fonts/DejaVuSans-subset.ttf");

/// Registers the built-in font as "sans-serif", once. Both backends need it: the SVG one to
/// measure text for the layout.
fn register_font() -> anyhow::Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok());
    if !ok {
        bail!("the font built into tally cannot be read");
    }
    Ok(())
}

/// Draws a chart of `size` pixels into `path`, as SVG or PNG by its extension. `svg` and `png`
/// are the same drawing code for the two backends; [`render!`] writes it once.
pub fn render_with(
    path: &Path,
    size: (u32, u32),
    svg: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> anyhow::Result<()>,
    png: impl FnOnce(&DrawingArea<BitMapBackend<'_>, Shift>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let format = plot_format(path)?;
    register_font()?;
    match format {
        PlotFormat::Svg => {
            let root = SVGBackend::new(path, size).into_drawing_area();
            root.fill(&WHITE).context("drawing")?;
            svg(&root)?;
            root.present().context("writing the SVG")?;
        }
        PlotFormat::Png => {
            let (w, h) = size;
            let mut pixels = vec![0u8; w as usize * h as usize * 3];
            {
                let root = BitMapBackend::with_buffer(&mut pixels, size).into_drawing_area();
                root.fill(&WHITE).context("drawing")?;
                png(&root)?;
                root.present().context("drawing")?;
            }
            image::save_buffer_with_format(
                path,
                &pixels,
                w,
                h,
                image::ExtendedColorType::Rgb8,
                image::ImageFormat::Png,
            )
            .context("writing the PNG")?;
        }
    }
    Ok(())
}

/// `render!(path, (width, height), |root| draw(root))`: [`render_with`] with one drawing
/// expression, generic over the backend, instantiated for SVG and for PNG.
macro_rules! render {
    ($path:expr, $size:expr, |$root:ident| $draw:expr) => {
        $crate::cli::plot::render_with($path, $size, |$root| $draw, |$root| $draw)
    };
}
pub(super) use render;

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

/// The colours of lines and bars, in order (matplotlib's tab10).
pub(super) const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// Bars for one channel, one outline per channel for several; counts on a linear axis.
pub fn plot(r: &Report, path: &Path) -> anyhow::Result<()> {
    render!(path, (900, 500), |root| draw_counts(r, root))
}

fn draw_counts<DB: DrawingBackend>(r: &Report, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let edges = bin_edges(&r.spec.bins);
    let xa = Axis::new(edges[0], edges[edges.len() - 1]);
    let ya = value_axis(r.hist.counts.iter().flatten().map(|&c| c as f64));
    let mut chart = ChartBuilder::on(root)
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
        let colour = PALETTE[k % PALETTE.len()];
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
    Ok(())
}

/// Bars of the summed weights (first channel; negative sums below the axis; infinite sums
/// clamped to the axis' end).
pub fn plot_weighted(w: &WeightedReport, path: &Path) -> anyhow::Result<()> {
    render!(path, (900, 500), |root| draw_sums(w, root))
}

fn draw_sums<DB: DrawingBackend>(w: &WeightedReport, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let r = &w.report;
    let edges = bin_edges(&r.spec.bins);
    let xa = Axis::new(edges[0], edges[edges.len() - 1]);
    let sums = &r.hist.sums[0];
    let ya = value_axis(sums.iter().copied());
    let clamped = if sums.iter().any(|s| !s.is_finite()) { " (infinite sums clamped)" } else { "" };
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!("{} samples ({}), {} weights, {} bins{clamped}", r.n, r.dtype, w.weight_dtype, r.spec.bins.count()),
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
            Rectangle::new([(xa.at(edges[b]), ya.at(0.0)), (xa.at(edges[b + 1]), ya.at(s))], PALETTE[0].filled())
        }))
        .context("drawing")?;
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
    render!(path, (900, 760), |root| draw_heatmap(r, root))
}

fn draw_heatmap<DB: DrawingBackend>(r: &Report2d, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
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
    Ok(())
}
