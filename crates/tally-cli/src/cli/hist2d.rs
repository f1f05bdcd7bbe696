//! `tally hist2d`: a two-dimensional histogram of (x, y) pairs from two CSV columns, two `.npy`
//! files, one `(n, 2)` `.npy` file, or --demo data.

use super::devices::Engine;
use super::hist::{default_bins_of, parse_range, parse_strategy, OutputArgs, WeightArgs};
use super::input::{self, with_vec, with_weights, InputOptions, Samples, Weights};
use super::{limits, output};
use anyhow::{bail, Context};
use std::path::{Path, PathBuf};
use tally::{Backend, Bins, DType, Histogram2dSpec, Sample, Strategy};

#[derive(clap::Args, Debug)]
pub struct Hist2dArgs {
    /// A .csv file (two columns, see --columns), an (n, 2) .npy file, or two .npy (or raw) files: x, then y.
    #[arg(required_unless_present = "demo", conflicts_with = "demo", num_args = 1..=2)]
    pub files: Vec<PathBuf>,
    /// Count generated pairs instead of files.
    #[arg(long)]
    pub demo: bool,
    /// Distribution of --demo pairs: uniform (over [0, 1)^2) or blob (a Gaussian at (0.5, 0.5), sigma 0.1).
    #[arg(long, default_value = "blob", requires = "demo")]
    pub distribution: String,
    /// Pairs of --demo data.
    #[arg(long, default_value_t = 1 << 20, requires = "demo")]
    pub size: usize,
    /// Seed of --demo data.
    #[arg(long, default_value_t = 1, requires = "demo")]
    pub seed: u64,
    /// CSV: the x and y columns, by header name or 0-based index (default 0,1).
    #[arg(long, value_delimiter = ',')]
    pub columns: Option<Vec<String>>,
    /// Type of raw files (as for `tally hist`).
    #[arg(long, value_parser = super::hist::parse_dtype)]
    pub dtype: Option<DType>,
    /// Equal-width bins on x.
    #[arg(long, default_value_t = 64, conflicts_with = "edges_x")]
    pub bins_x: u32,
    /// Equal-width bins on y.
    #[arg(long, default_value_t = 64, conflicts_with = "edges_y")]
    pub bins_y: u32,
    /// Range LO,HI of x: [LO, HI). Default: the data's min and max ([0, 1) for --demo).
    #[arg(long, value_parser = parse_range, allow_hyphen_values = true, conflicts_with = "edges_x")]
    pub range_x: Option<(f64, f64)>,
    /// Range LO,HI of y.
    #[arg(long, value_parser = parse_range, allow_hyphen_values = true, conflicts_with = "edges_y")]
    pub range_y: Option<(f64, f64)>,
    /// Custom bin edges on x, a,b,c,...
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub edges_x: Option<Vec<f64>>,
    /// Custom bin edges on y.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub edges_y: Option<Vec<f64>>,
    /// auto, global-atomic, block-shared or global-l2 (others map onto these).
    #[arg(long, default_value = "auto", value_parser = parse_strategy)]
    pub strategy: Strategy,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub weights: WeightArgs,
}

/// Coordinates as the library takes them: both f32, both integers (as i64, binned by the exact
/// integer rule), else both f64.
enum Coords {
    F32(Vec<f32>, Vec<f32>),
    F64(Vec<f64>, Vec<f64>),
    I64(Vec<i64>, Vec<i64>),
}

/// Integers beyond 2^53 are not all f64 values: converting them would move them between bins.
const EXACT_F64: i64 = 1 << 53;

fn to_f64(s: Samples, axis: &str) -> anyhow::Result<Vec<f64>> {
    Ok(match s {
        Samples::F64(v) => v,
        Samples::I64(v) => {
            if let Some(x) = v.iter().find(|x| x.unsigned_abs() > EXACT_F64 as u64) {
                bail!("{axis} holds the integer {x}, beyond 2^53, and the other coordinate is float: give both as integers");
            }
            v.iter().map(|&x| x as f64).collect()
        }
        other => with_vec!(other, v => v.iter().map(|x| x.to_f64()).collect()),
    })
}

fn to_i64(s: Samples) -> Vec<i64> {
    with_vec!(s, v => v.iter().map(|x| x.to_i64().unwrap_or(0)).collect())
}

fn coords(x: Samples, y: Samples) -> anyhow::Result<Coords> {
    Ok(match (x, y) {
        (Samples::F32(x), Samples::F32(y)) => Coords::F32(x, y),
        (x, y) if !x.dtype().is_float() && !y.dtype().is_float() => Coords::I64(to_i64(x), to_i64(y)),
        (x, y) => Coords::F64(to_f64(x, "x")?, to_f64(y, "y")?),
    })
}

fn ext(p: &Path) -> String {
    p.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).unwrap_or_default()
}

fn load(a: &Hist2dArgs) -> anyhow::Result<(Coords, (String, String))> {
    if a.demo {
        let need = (a.size as u128).checked_mul(16);
        limits::check_memory(need, &format!("--demo with {} pairs", a.size))?;
        let pairs = match a.distribution.as_str() {
            "uniform" => tally::data::uniform_pairs(a.size, a.seed),
            "blob" => tally::data::gaussian_pairs(a.size, 0.5, 0.1, a.seed),
            d => bail!("unknown --distribution '{d}' for hist2d (expected uniform or blob)"),
        };
        let (x, y) = pairs.chunks_exact(2).map(|p| (p[0], p[1])).unzip();
        return Ok((Coords::F32(x, y), ("x".into(), "y".into())));
    }
    let opts = |column: Option<String>| InputOptions { dtype: a.dtype, column, ..Default::default() };
    match &a.files[..] {
        [f] if ext(f) == "csv" => {
            let cols = a.columns.clone().unwrap_or_else(|| vec!["0".into(), "1".into()]);
            if cols.len() != 2 {
                bail!("--columns takes two columns, X,Y (names or 0-based indexes), got {}", cols.len());
            }
            let x = input::load(f, &opts(Some(cols[0].clone())))?.samples;
            let y = input::load(f, &opts(Some(cols[1].clone())))?.samples;
            Ok((coords(x, y)?, (cols[0].clone(), cols[1].clone())))
        }
        [f] if ext(f) == "npy" => {
            if a.columns.is_some() {
                bail!("--columns applies only to .csv files");
            }
            let shape = input::npy_shape(f)?;
            if shape.len() != 2 || shape[1] != 2 {
                bail!("{}: expected an (n, 2) array of pairs, got shape {shape:?}", f.display());
            }
            let v = input::load(f, &opts(None))?.samples;
            let (x, y) = with_vec!(v, v => {
                let (x, y): (Vec<_>, Vec<_>) = v.chunks_exact(2).map(|p| (p[0], p[1])).unzip();
                (Samples::from(x), Samples::from(y))
            });
            Ok((coords(x, y)?, ("x".into(), "y".into())))
        }
        [f] => bail!(
            "{}: one file must be a .csv (two columns) or an (n, 2) .npy; or give two files, x and y",
            f.display()
        ),
        [fx, fy] => {
            if a.columns.is_some() {
                bail!("--columns applies to one .csv file, not two files");
            }
            let x = input::load(fx, &opts(None))?.samples;
            let y = input::load(fy, &opts(None))?.samples;
            if x.len() != y.len() {
                bail!(
                    "{} has {} values but {} has {}: the coordinates must pair up",
                    fx.display(),
                    x.len(),
                    fy.display(),
                    y.len()
                );
            }
            Ok((coords(x, y)?, ("x".into(), "y".into())))
        }
        _ => bail!("give one or two input files"),
    }
}

/// The bins of one axis: custom edges, the given range, or the data's default range.
fn axis(
    name: &str,
    bins: u32,
    range: Option<(f64, f64)>,
    edges: &Option<Vec<f64>>,
    data: impl FnOnce() -> anyhow::Result<Bins>,
) -> anyhow::Result<Bins> {
    Ok(match (edges, range) {
        (Some(e), _) => Bins::Edges(e.clone()),
        (None, Some((lo, hi))) => Bins::even(bins, lo, hi),
        (None, None) => data().map_err(|e| anyhow::anyhow!("{name} axis: {e}"))?,
    })
}

pub fn run(a: Hist2dArgs) -> anyhow::Result<()> {
    output::check_plot_path(a.out.plot.as_deref())?;
    let (coords, labels) = load(&a)?;
    let demo_range = a.demo.then_some((0.0, 1.0));
    let (bx, by) = (a.bins_x, a.bins_y);
    let spec = match &coords {
        Coords::F32(x, y) => Histogram2dSpec {
            x: axis("x", bx, a.range_x.or(demo_range), &a.edges_x, || default_bins_of(x, bx))?,
            y: axis("y", by, a.range_y.or(demo_range), &a.edges_y, || default_bins_of(y, by))?,
        },
        Coords::F64(x, y) => Histogram2dSpec {
            x: axis("x", bx, a.range_x, &a.edges_x, || default_bins_of(x, bx))?,
            y: axis("y", by, a.range_y, &a.edges_y, || default_bins_of(y, by))?,
        },
        Coords::I64(x, y) => Histogram2dSpec {
            x: axis("x", bx, a.range_x, &a.edges_x, || default_bins_of(x, bx))?,
            y: axis("y", by, a.range_y, &a.edges_y, || default_bins_of(y, by))?,
        },
    };
    spec.validate()?;
    let counters = spec.x.count() as u128 * spec.y.count() as u128;
    limits::check_memory(Some(limits::counting_bytes(counters)), &format!("a histogram of {counters} bins"))?;
    let weights = a.weights.load(a.dtype)?;
    let backend = Engine::open(&a.out.backend, &a.out.devices)?;
    let on_gpu = !matches!(backend.backend(), Some(Backend::Cpu));
    // The GPU takes f32 or f64 coordinates: integers go there as f64 where every one is exact
    // (the f64 rule then bins them); beyond 2^53 only the CPU's exact integer rule is right.
    let coords = match (coords, on_gpu) {
        (Coords::I64(x, y), true) => {
            if x.iter().chain(&y).any(|v| v.unsigned_abs() > EXACT_F64 as u64) {
                bail!("integer coordinates beyond 2^53 are binned exactly only by the CPU backend: add --backend cpu");
            }
            Coords::F64(x.iter().map(|&v| v as f64).collect(), y.iter().map(|&v| v as f64).collect())
        }
        (c, _) => c,
    };
    let start = std::time::Instant::now();
    let opts = a.weights.options(a.strategy);
    macro_rules! run2d {
        ($x:expr, $y:expr, $dtype:expr) => {
            match &weights {
                None => (backend.histogram_2d::<_, f32>(($x, $y), None, &spec, opts)?, $dtype, $x.len()),
                Some(w) => (
                    with_weights!(w, w => backend.histogram_2d(($x, $y), Some(w), &spec, opts))?,
                    $dtype,
                    $x.len(),
                ),
            }
        };
    }
    let (h, dtype, n) = match &coords {
        Coords::F32(x, y) => run2d!(x, y, DType::F32),
        Coords::F64(x, y) => run2d!(x, y, DType::F64),
        Coords::I64(x, y) => run2d!(x, y, DType::I64),
    };
    let seconds = start.elapsed().as_secs_f64();
    let format = a.out.format();
    let report = output::Report2d { spec: &spec, hist: &h, labels: (&labels.0, &labels.1), dtype, n, seconds };
    output::print_2d(&report, format)?;
    if let Some(path) = &a.out.plot {
        output::plot_heatmap(&report, path).with_context(|| format!("cannot write the plot {}", path.display()))?;
    }
    Ok(())
}
