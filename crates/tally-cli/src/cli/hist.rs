//! `tally hist`: one histogram of a file or of generated data.

use super::devices::{DevicesArg, Engine};
pub use super::hist_range::default_bins_of;
use super::input::{self, with_type, with_vec, with_weights, InputOptions, Loaded, Samples, Weights};
use super::output::{self, Format};
use super::{limits, parse_list, BackendArg};
use anyhow::{bail, Context};
use std::path::PathBuf;
use tally::data::Distribution;
use tally::{
    Accumulation, Bins, Brightness, Channels, DType, HistogramSpec, Image, SharedAtomics, Strategy, WeightedOptions,
};

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
    /// Sample type of raw files and --demo data (u8, u16, i32, u32, i64, f32, f64, f16, bf16); CSV columns parse as this.
    #[arg(long, value_parser = parse_dtype)]
    pub dtype: Option<DType>,
    /// CSV column, by header name or 0-based index.
    #[arg(long)]
    pub column: Option<String>,
    /// Images: one histogram per channel, e.g. r,g,b or rgb (default: brightness).
    #[arg(long, value_delimiter = ',')]
    pub channels: Option<Vec<String>>,
    /// Images: a pixel's brightness, by the library's f64 rule: mean (of r, g, b), rec709 (luma:
    /// 0.2126 r + 0.7152 g + 0.0722 b), or weights R,G,B (alpha is dropped; a gray image is its
    /// own brightness). On a GPU it is computed in the counting pass, with --weights on the host.
    /// Default: mean.
    #[arg(long, value_parser = parse_brightness, conflicts_with = "channels", allow_hyphen_values = true)]
    pub brightness: Option<Brightness>,
    /// Number of equal-width bins.
    #[arg(long, default_value_t = 256, conflicts_with = "edges")]
    pub bins: u32,
    /// Range LO,HI of the bins: [LO, HI). Default: [0, 256) for 8-bit data and --demo's [0, bins); else the data's min and max.
    #[arg(long, value_parser = parse_range, allow_hyphen_values = true, conflicts_with = "edges")]
    pub range: Option<(f64, f64)>,
    /// Custom bin edges a,b,c,... (strictly increasing).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub edges: Option<Vec<f64>>,
    /// How to count (GPU; the CPU backend always runs thread-private):
    ///   auto               choose from the bins, the device and a skew probe
    ///   global-atomic      one global atomic per sample (the naive kernel)
    ///   block-shared       a private histogram per block in shared memory
    ///   warp-private       a private histogram per warp in shared memory
    ///   warp-aggregated    lanes hitting one bin combine first (__match_any_sync)
    ///   block-shared-16    16-bit shared counters that spill before they wrap: twice the bins
    ///   cluster-shared     one histogram over a thread-block cluster's shared memory (sm_90)
    ///   cluster-shared-16  cluster-shared with 16-bit counters
    ///   global-l2          global atomics behind a hot-bin cache, in L2-sized passes
    ///   partition          bin indices scattered into chunks of bins, one shared histogram each
    ///   thread-private     the CPU backend's private histogram per worker
    #[arg(long, default_value = "auto", value_parser = parse_strategy, verbatim_doc_comment)]
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
    #[command(flatten)]
    pub devices: DevicesArg,
    /// Print JSON instead of a table.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV (one row per bin) instead of a table.
    #[arg(long)]
    pub csv: bool,
    /// Also draw the histogram to FILE.svg (SVG) or FILE.png (PNG) (a heat map for hist2d).
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
    /// Type of a raw binary weights file (default: the samples' --dtype).
    #[arg(long, value_parser = parse_dtype, requires = "weights")]
    pub weights_dtype: Option<DType>,
    /// CSV column of the weights, by header name or 0-based index.
    #[arg(long, requires = "weights")]
    pub weights_column: Option<String>,
    /// Add weights with plain float atomics instead of fixed point (not deterministic).
    #[arg(long, requires = "weights", conflicts_with = "exact")]
    pub float_atomics: bool,
    /// Sum each bin's weights exactly, rounded once (NaN and infinite weights as IEEE says);
    /// slower than fixed point, the same bits everywhere.
    #[arg(long, requires = "weights")]
    pub exact: bool,
    /// GPU block strategy, fixed point: halves (32-bit halves with a carry) or native64.
    #[arg(long, default_value = "halves", value_parser = parse_shared_atomics, requires = "weights")]
    pub shared_atomics: SharedAtomics,
}

impl WeightArgs {
    /// The weights; a raw file is read as `--weights-dtype`, else as `samples_dtype`.
    pub fn load(&self, samples_dtype: Option<DType>) -> anyhow::Result<Option<Weights>> {
        let Some(path) = &self.weights else { return Ok(None) };
        let opts = InputOptions {
            raw_dtype: self.weights_dtype.or(samples_dtype),
            raw_flag: Some("--weights-dtype"),
            column: self.weights_column.clone(),
            ..Default::default()
        };
        let loaded = input::load(path, &opts)?;
        Ok(Some(Weights::from_samples(loaded.samples)))
    }

    pub fn options(&self, strategy: Strategy) -> WeightedOptions {
        WeightedOptions {
            strategy,
            accumulation: match (self.float_atomics, self.exact) {
                (true, _) => Accumulation::FloatAtomics,
                (_, true) => Accumulation::Exact,
                _ => Accumulation::FixedPoint,
            },
            shared_atomics: self.shared_atomics,
        }
    }
}

/// `--brightness`: mean, rec709, or weights W,W,W.
fn parse_brightness(s: &str) -> Result<Brightness, String> {
    match s {
        "mean" => Ok(Brightness::Mean),
        "rec709" => Ok(Brightness::rec709()),
        _ => s
            .split(',')
            .map(|w| w.trim().parse::<f64>().map_err(|_| format!("'{w}' is not a weight")))
            .collect::<Result<Vec<f64>, String>>()
            .map(Brightness::Weighted)
            .map_err(|e| format!("{e}: --brightness takes mean, rec709, or one weight per channel (R,G,B)")),
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
    DType::parse(s)
        .ok_or_else(|| format!("unknown dtype '{s}' (expected u8, u16, i32, u32, i64, f32, f64, f16 or bf16)"))
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
    if a.file.as_deref().is_some_and(|f| f.as_os_str() == "-")
        && a.weights.weights.as_deref().is_some_and(|f| f.as_os_str() == "-")
    {
        bail!("the samples and the weights cannot both come from standard input ('-')");
    }
    if let Some(files) = super::hist_stream::streamed(&a)? {
        return super::hist_stream::run(&a, &files);
    }
    let loaded = if a.demo {
        demo(&a)?
    } else {
        let path = a.file.as_ref().expect("clap requires FILE without --demo");
        let channels = a.channels.as_deref().map(input::parse_channels).transpose()?;
        let image_pixels = channels.is_none();
        let opts =
            InputOptions { dtype: a.dtype, column: a.column.clone(), channels, image_pixels, ..Default::default() };
        input::load(path, &opts)?
    };
    let image = match (loaded.image.clone(), &a.brightness) {
        // A gray image is its own brightness, whatever the rule.
        (Some(image), Some(_)) if image.channels == 1 => Some(image),
        (Some(image), Some(b)) => Some(image.with_brightness(b.clone())),
        (image, None) => image,
        (None, Some(_)) => bail!("--brightness applies only to images (.png, .jpg, .jpeg)"),
    };
    if let Some(d) = a.dtype.filter(|d| image.is_some() && !tally::histogram::image::IMAGE_DTYPES.contains(d)) {
        bail!("--dtype {d} does not apply to an image's brightness: its channels are read as u8, u16, f32 or f64");
    }
    // Image pixels, not samples: how many there are. The brightness is an f64 sample: its bins'
    // edges are printed by the f64 rule.
    let n = image.as_ref().map_or(loaded.samples.len(), Image::pixels);
    let (dtype, rule) = (loaded.samples.dtype(), if image.is_some() { DType::F64 } else { loaded.samples.dtype() });
    if let Some(note) = &loaded.note {
        eprintln!("tally: note: {note}");
    }
    let channels = Channels { interleave: loaded.interleave, selected: loaded.selected.clone() };
    let weights = a.weights.load(a.dtype.or(Some(loaded.samples.dtype())))?;
    // Every image pixel's brightness, computed once on the host where its values are needed:
    // for weighted counts, and for the default range of weighted brightness (the mean lies within
    // the channels' range, which their type's default covers; weights may take the brightness
    // anywhere, so its own extent is the default there).
    let weighted_default =
        |image: &Image| a.range.is_none() && a.edges.is_none() && image.brightness != Brightness::Mean;
    let mut brightness = match &image {
        Some(image) if weights.is_some() || weighted_default(image) => {
            Some(Samples::F64(with_vec!(&loaded.samples, v => {
                image.validate(v.len(), loaded.samples.dtype(), &HistogramSpec::even(1, 0.0, 1.0))?;
                tally::histogram::image::cpu::brightness_values(v.as_slice(), image)
            })))
        }
        _ => None,
    };
    let spec = spec_for(&a, channels, || match &brightness {
        _ if a.demo => Ok(Bins::even(a.bins, 0.0, a.bins as f64)),
        Some(values) if image.as_ref().is_some_and(weighted_default) => default_bins(values, a.bins),
        _ => default_bins(&loaded.samples, a.bins),
    })?;
    // Weighted images: the brightness values themselves (the library's rule, on the host),
    // weighted as f64 samples.
    let (loaded, image) = match (image, brightness.take().filter(|_| weights.is_some())) {
        (Some(_), Some(values)) => (Loaded { samples: values, image: None, ..loaded }, None),
        (image, _) => (loaded, image),
    };
    let weights = match weights {
        Some(w) => Some(weights_per_sample(w, &loaded, a.weights.weights.as_deref())?),
        None => None,
    };
    let opened = std::time::Instant::now();
    let backend = Engine::open(&a.out.backend, &a.out.devices)?;
    output::check_plot_path(a.out.plot.as_deref())?;
    if let Some(weights) = weights {
        let start = std::time::Instant::now();
        let opts = a.weights.options(a.strategy);
        let h = with_vec!(&loaded.samples, v => with_weights!(&weights, w => backend.histogram_weighted(v.as_slice(), w, &spec, opts)))?;
        let seconds = start.elapsed().as_secs_f64();
        let smallest = with_weights!(&weights, w => smallest_nonzero(w));
        let report = output::Report { spec: &spec, hist: &h, labels: &loaded.labels, dtype, rule, n, seconds };
        return show_weighted(&a, report, weights.dtype(), smallest);
    }
    let start = std::time::Instant::now();
    let h = match &image {
        Some(image) => {
            with_vec!(&loaded.samples, v => backend.image_histogram(v.as_slice(), image, &spec, a.strategy))?
        }
        None => with_vec!(&loaded.samples, v => backend.histogram(v.as_slice(), &spec, a.strategy))?,
    };
    let elapsed = start.elapsed();
    if super::trace() {
        eprintln!(
            "tally: backend {} opened in {:.1} ms; histogram (compile or cache, upload, count, read back) {:.1} ms",
            backend.name(),
            (start - opened).as_secs_f64() * 1e3,
            elapsed.as_secs_f64() * 1e3
        );
    }
    let report = output::Report {
        spec: &spec,
        hist: &h,
        labels: &loaded.labels,
        dtype,
        rule,
        n,
        seconds: elapsed.as_secs_f64(),
    };
    show(&a, &report)
}

/// The spec of `a`'s bins (its edges, its range, else `default`: from the data's extent) over
/// `channels`, checked, with the memory of its counters.
pub(super) fn spec_for(
    a: &HistArgs,
    channels: Channels,
    default: impl FnOnce() -> anyhow::Result<Bins>,
) -> anyhow::Result<HistogramSpec> {
    let bins = match (&a.edges, a.range) {
        (Some(e), _) => Bins::Edges(e.clone()),
        (None, Some((lo, hi))) => Bins::even(a.bins, lo, hi),
        (None, None) => default()?,
    };
    let spec = HistogramSpec { bins, channels };
    spec.validate()?;
    let counters = spec.bins.count() as u128 * spec.channels.selected.len() as u128;
    limits::check_memory(Some(limits::counting_bytes(counters)), &format!("a histogram of {counters} counters"))?;
    Ok(spec)
}

/// Prints `report` as `a` asks and draws it where `--plot` says.
pub(super) fn show(a: &HistArgs, report: &output::Report) -> anyhow::Result<()> {
    output::print(report, a.out.format())?;
    plot_where_asked(a, |path| output::plot(report, path))
}

/// Shows the weighted `report` as [`show`] does, with the warning where weights as small as
/// `smallest` (the least nonzero |weight|) may vanish from its sums.
pub(super) fn show_weighted(
    a: &HistArgs,
    report: output::Report<'_, tally::WeightedHistogram>,
    weight_dtype: DType,
    smallest: Option<f64>,
) -> anyhow::Result<()> {
    let warning = output::dynamic_range_warning(&report.hist.weighting, smallest);
    let report = output::WeightedReport { report, weight_dtype, warning };
    output::print_weighted(&report, a.out.format())?;
    plot_where_asked(a, |path| output::plot_weighted(&report, path))
}

/// `draw(path)` where `--plot` names a file.
fn plot_where_asked(a: &HistArgs, draw: impl FnOnce(&std::path::Path) -> anyhow::Result<()>) -> anyhow::Result<()> {
    match &a.out.plot {
        Some(path) => draw(path).with_context(|| format!("cannot write the plot {}", path.display())),
        None => Ok(()),
    }
}

/// The smallest nonzero weight magnitude (None: every weight is 0).
pub(super) fn smallest_nonzero<W: tally::histogram::Weight>(w: &[W]) -> Option<f64> {
    w.iter().map(|x| x.to_f64().abs()).filter(|&x| x > 0.0).min_by(f64::total_cmp)
}

/// One weight per sample: an image counted by channel takes one weight per pixel, applied to
/// each of its channels (the RGBA samples, alpha included, whatever channels are selected).
fn weights_per_sample(w: Weights, loaded: &Loaded, path: Option<&std::path::Path>) -> anyhow::Result<Weights> {
    let (n, k) = (loaded.samples.len(), loaded.interleave as usize);
    let name = path.map(|p| p.display().to_string()).unwrap_or_default();
    if w.len() == n {
        return Ok(w);
    }
    if k > 1 && w.len() * k == n {
        return Ok(w.repeat_each(k));
    }
    if k > 1 {
        bail!(
            "{name} has {} weights but the image has {} pixels ({n} samples of {k} channels): give one weight per pixel",
            w.len(),
            n / k
        );
    }
    Ok(w) // the library names the mismatch
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
    // Every limit before anything is allocated: the bins, then the memory of the whole run.
    match (&a.edges, a.range) {
        (Some(e), _) => HistogramSpec::edges(e.clone()).validate()?,
        (None, Some((lo, hi))) => HistogramSpec::even(a.bins, lo, hi).validate()?,
        (None, None) => HistogramSpec::even(a.bins, 0.0, a.bins as f64).validate()?,
    }
    let (d, b, n, s) = (a.distribution, a.bins, a.size, a.seed);
    let table = if d == Distribution::Zipf { b as u128 * 12 } else { 0 };
    let need = (n as u128).checked_mul(dtype.size() as u128 + 4).map(|x| x + table + limits::counting_bytes(b as u128));
    limits::check_memory(need, &format!("--demo with {n} samples and {b} bins"))?;
    let samples = with_type!(dtype, T => Samples::from(tally::data::samples::<T>(d, b, n, s)));
    Ok(Loaded {
        samples,
        interleave: 1,
        selected: vec![0],
        labels: vec![format!("{}", d.name())],
        note: None,
        image: None,
    })
}

/// Even bins over the data's default range, or an error that says the range came from the data.
fn default_bins(s: &Samples, bins: u32) -> anyhow::Result<Bins> {
    with_vec!(s, v => default_bins_of(v.as_slice(), bins))
}
