//! `tally hist`: one histogram of a file or of generated data.

use super::input::{self, with_type, with_vec, with_weights, InputOptions, Loaded, Samples, Weights};
use super::output::{self, Format};
use super::{parse_list, BackendArg};
use anyhow::{bail, Context};
use std::path::PathBuf;
use tally::data::Distribution;
use tally::{Accumulation, Bins, Channels, DType, HistogramSpec, Sample, SharedAtomics, Strategy, WeightedOptions};

#[derive(clap::Args, Debug)]
pub struct HistArgs {
    /// Input file: raw binary (needs --dtype), .npy, .csv or an image (.png, .jpg).
    #[arg(required_unless_present = "demo", conflicts_with = "demo")]
    pub file: Option<PathBuf>,
    /// Count generated data instead of a file.
    #[arg(long)]
    pub demo: bool,
    /// Distribution of --demo data.
    #[arg(long, default_value = "zipf", requires = "demo")]
    pub distribution: Distribution,
    /// Samples of --demo data.
    #[arg(long, default_value_t = 1 << 20, requires = "demo")]
    pub size: usize,
    /// Seed of --demo data.
    #[arg(long, default_value_t = 1, requires = "demo")]
    pub seed: u64,
    /// Sample type of raw files and --demo data (u8, u16, i32, u32, i64, f32, f64); CSV columns parse as this.
    #[arg(long, value_parser = parse_dtype)]
    pub dtype: Option<DType>,
    /// CSV column, by header name or 0-based index.
    #[arg(long)]
    pub column: Option<String>,
    /// Images: one histogram per channel, e.g. r,g,b (default: brightness).
    #[arg(long, value_delimiter = ',')]
    pub channels: Option<Vec<char>>,
    /// Number of equal-width bins.
    #[arg(long, default_value_t = 256, conflicts_with = "edges")]
    pub bins: u32,
    /// Range LO,HI of the bins: [LO, HI). Default: [0, 256) for 8-bit data and --demo's [0, bins); else the data's min and max.
    #[arg(long, value_parser = parse_range, allow_hyphen_values = true)]
    pub range: Option<(f64, f64)>,
    /// Custom bin edges a,b,c,... (strictly increasing).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub edges: Option<Vec<f64>>,
    /// auto, global-atomic, block-shared, warp-private, warp-aggregated.
    #[arg(long, default_value = "auto", value_parser = parse_strategy)]
    pub strategy: Strategy,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub weights: WeightArgs,
}

/// Backend and output options, shared by `hist` and `hist2d`.
#[derive(clap::Args, Debug, Clone)]
pub struct OutputArgs {
    #[command(flatten)]
    pub backend: BackendArg,
    /// Print JSON instead of a table.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV (one row per bin) instead of a table.
    #[arg(long)]
    pub csv: bool,
    /// Also draw the histogram to this SVG file (a heat map for hist2d).
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

impl OutputArgs {
    pub fn format(&self) -> Format {
        if self.json {
            Format::Json
        } else if self.csv {
            Format::Csv
        } else {
            Format::Table
        }
    }
}

/// Weights, shared by `hist` and `hist2d`.
#[derive(clap::Args, Debug, Clone)]
pub struct WeightArgs {
    /// Sum a weight per sample instead of counting: a file of the same formats (f32 weights stay
    /// f32, anything else is read as f64). Sums are 64-bit fixed point: bitwise deterministic.
    #[arg(long)]
    pub weights: Option<PathBuf>,
    /// CSV column of the weights, by header name or 0-based index.
    #[arg(long, requires = "weights")]
    pub weights_column: Option<String>,
    /// Add weights with plain float atomics instead of fixed point (not deterministic).
    #[arg(long, requires = "weights")]
    pub float_atomics: bool,
    /// GPU block strategy, fixed point: halves (32-bit halves with a carry) or native64.
    #[arg(long, default_value = "halves", value_parser = parse_shared_atomics, requires = "weights")]
    pub shared_atomics: SharedAtomics,
}

impl WeightArgs {
    pub fn load(&self) -> anyhow::Result<Option<Weights>> {
        let Some(path) = &self.weights else { return Ok(None) };
        let loaded =
            input::load(path, &InputOptions { dtype: None, column: self.weights_column.clone(), channels: None })?;
        Ok(Some(Weights::from_samples(loaded.samples)))
    }

    pub fn options(&self, strategy: Strategy) -> WeightedOptions {
        WeightedOptions {
            strategy,
            accumulation: if self.float_atomics { Accumulation::FloatAtomics } else { Accumulation::FixedPoint },
            shared_atomics: self.shared_atomics,
        }
    }
}

fn parse_shared_atomics(s: &str) -> Result<SharedAtomics, String> {
    match s {
        "halves" => Ok(SharedAtomics::Halves),
        "native64" => Ok(SharedAtomics::Native64),
        _ => Err(format!("unknown shared atomics '{s}' (expected halves or native64)")),
    }
}

pub fn parse_dtype(s: &str) -> Result<DType, String> {
    DType::parse(s).ok_or_else(|| format!("unknown dtype '{s}' (expected u8, u16, i32, u32, i64, f32 or f64)"))
}

pub fn parse_strategy(s: &str) -> Result<Strategy, String> {
    s.parse().map_err(|e: tally::Error| e.to_string())
}

pub fn parse_range(s: &str) -> Result<(f64, f64), String> {
    let v: Vec<f64> = parse_list(s)?;
    match v[..] {
        [lo, hi] => Ok((lo, hi)),
        _ => Err(format!("expected LO,HI, got '{s}'")),
    }
}

pub fn run(a: HistArgs) -> anyhow::Result<()> {
    let loaded = if a.demo {
        demo(&a)?
    } else {
        let path = a.file.as_ref().expect("clap requires FILE without --demo");
        input::load(path, &InputOptions { dtype: a.dtype, column: a.column.clone(), channels: a.channels.clone() })?
    };
    let bins = match (&a.edges, a.range) {
        (Some(e), _) => Bins::Edges(e.clone()),
        (None, Some((lo, hi))) => Bins::even(a.bins, lo, hi),
        (None, None) => {
            let (lo, hi) = if a.demo { (0.0, a.bins as f64) } else { default_range(&loaded.samples) };
            Bins::even(a.bins, lo, hi)
        }
    };
    let spec =
        HistogramSpec { bins, channels: Channels { interleave: loaded.interleave, selected: loaded.selected.clone() } };
    spec.validate()?;
    let weights = a.weights.load()?;
    let opened = std::time::Instant::now();
    let backend = a.out.backend.open()?;
    if let Some(weights) = weights {
        let start = std::time::Instant::now();
        let opts = a.weights.options(a.strategy);
        let h = with_vec!(&loaded.samples, v => with_weights!(&weights, w => backend.histogram_weighted(v.as_slice(), w, &spec, opts)))?;
        let seconds = start.elapsed().as_secs_f64();
        let format = a.out.format();
        let report = output::WeightedReport {
            spec: &spec,
            hist: &h,
            labels: &loaded.labels,
            dtype: loaded.samples.dtype(),
            weight_dtype: weights.dtype(),
            n: loaded.samples.len(),
            seconds,
        };
        output::print_weighted(&report, format)?;
        if let Some(path) = &a.out.plot {
            output::plot_weighted_svg(&report, path)
                .with_context(|| format!("cannot write the plot {}", path.display()))?;
        }
        return Ok(());
    }
    let start = std::time::Instant::now();
    let h = with_vec!(&loaded.samples, v => backend.histogram(v.as_slice(), &spec, a.strategy))?;
    let elapsed = start.elapsed();
    if std::env::var_os("TALLY_TRACE").is_some() {
        eprintln!(
            "tally: backend {} opened in {:.1} ms; histogram (compile or cache, upload, count, read back) {:.1} ms",
            backend.name(),
            (start - opened).as_secs_f64() * 1e3,
            elapsed.as_secs_f64() * 1e3
        );
    }
    let format = a.out.format();
    let report = output::Report {
        spec: &spec,
        hist: &h,
        labels: &loaded.labels,
        dtype: loaded.samples.dtype(),
        n: loaded.samples.len(),
        seconds: elapsed.as_secs_f64(),
    };
    output::print(&report, format)?;
    if let Some(path) = &a.out.plot {
        output::plot_svg(&report, path).with_context(|| format!("cannot write the plot {}", path.display()))?;
    }
    Ok(())
}

fn demo(a: &HistArgs) -> anyhow::Result<Loaded> {
    if a.bins == 0 {
        bail!("invalid argument: the bin count must be at least 1");
    }
    let dtype = a.dtype.unwrap_or(DType::I32);
    // Demo samples are bin indices: the type must hold every one.
    let most = match dtype {
        DType::U8 => 256,
        DType::U16 => 65536,
        _ => u32::MAX,
    };
    if a.bins > most {
        bail!("--demo with --dtype {dtype} takes at most {most} bins");
    }
    let (d, b, n, s) = (a.distribution, a.bins, a.size, a.seed);
    let samples = with_type!(dtype, T => Samples::from(tally::data::samples::<T>(d, b, n, s)));
    Ok(Loaded { samples, interleave: 1, selected: vec![0], labels: vec![format!("{}", d.name())] })
}

/// [min, max] of the data as a half-open range that still holds the maximum.
pub fn default_range(s: &Samples) -> (f64, f64) {
    fn span<T: Sample>(v: &[T]) -> Option<(f64, f64)> {
        let mut it = v.iter().map(|x| x.to_f64()).filter(|x| x.is_finite());
        let first = it.next()?;
        Some(it.fold((first, first), |(lo, hi), x| (lo.min(x), hi.max(x))))
    }
    if s.dtype() == DType::U8 {
        return (0.0, 256.0);
    }
    let Some((lo, hi)) = with_vec!(s, v => span(v.as_slice())) else { return (0.0, 1.0) };
    if s.dtype().is_float() {
        (lo, hi.next_up())
    } else {
        (lo, hi + 1.0)
    }
}
