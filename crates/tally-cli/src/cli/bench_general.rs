//! `tally bench weighted`, `tally bench hist2d` and `tally bench image`: weighted, 2-D and image
//! brightness histograms on resident data, timed, checked against the CPU backend (fixed point
//! bit for bit), against the read bandwidth.

use super::bench::parse_strategy;
use super::bench_report::{
    device_and_bandwidth, gbs, host_median_ms, ok_cell, percent_cell, BenchOutputArgs, BenchReport, BenchRow, Column,
    Yardstick,
};
use anyhow::bail;
use serde::Serialize;
use std::sync::Arc;
use tally::data::{self, Distribution};
use tally::device::CudaDevice;
use tally::histogram::{GeneralInput, GeneralPlan};
use tally::{Accumulation, Backend, Histogram2dSpec, HistogramSpec, Pairs, SharedAtomics, Strategy, WeightedOptions};

#[derive(clap::Args, Debug)]
pub struct BenchWeightedArgs {
    /// Samples per case (default 2^28 on a GPU, 2^22 on the CPU).
    #[arg(long)]
    pub size: Option<usize>,
    /// Bin counts.
    #[arg(long, default_value = "256", value_delimiter = ',')]
    pub bins: Vec<u32>,
    /// Distributions of the samples: uniform, hot90, hot100, zipf.
    #[arg(long, default_value = "uniform,hot90", value_delimiter = ',')]
    pub distributions: Vec<Distribution>,
    /// Strategies (GPU only).
    #[arg(long, default_value = "auto,global-atomic", value_delimiter = ',', value_parser = parse_strategy)]
    pub strategies: Vec<Strategy>,
    /// Accumulations: halves and native64 (fixed point, the shared atomics of the block
    /// strategy), float (float atomics), exact (exact sums).
    #[arg(long, default_value = "halves,native64,float,exact", value_delimiter = ',')]
    pub accumulations: Vec<String>,
    #[arg(long, default_value_t = 20)]
    pub reps: usize,
    #[command(flatten)]
    pub out: BenchOutputArgs,
}

#[derive(clap::Args, Debug)]
pub struct BenchHist2dArgs {
    /// Pairs per case (default 2^28 on a GPU, 2^22 on the CPU).
    #[arg(long)]
    pub size: Option<usize>,
    /// Bins per axis.
    #[arg(long, default_value_t = 1024)]
    pub bins: u32,
    /// Distributions: uniform, blob (Gaussian, sigma 0.05 of the range).
    #[arg(long, default_value = "uniform,blob", value_delimiter = ',')]
    pub distributions: Vec<String>,
    /// Strategies (GPU only).
    #[arg(long, default_value = "auto,partition,global-atomic,global-l2", value_delimiter = ',', value_parser = parse_strategy)]
    pub strategies: Vec<Strategy>,
    /// Also time f32-weighted 2-D histograms (fixed point).
    #[arg(long)]
    pub weighted: bool,
    #[arg(long, default_value_t = 20)]
    pub reps: usize,
    #[command(flatten)]
    pub out: BenchOutputArgs,
}

/// One row of `bench weighted` or `bench hist2d`.
#[derive(Serialize, Debug, Clone)]
pub struct GeneralRow {
    pub case: &'static str,
    pub distribution: String,
    pub bins: String,
    pub strategy: Strategy,
    pub ran: Strategy,
    /// fixed-halves, fixed-native64, float or count.
    pub accumulation: String,
    pub ms: f64,
    /// Over every byte read: samples + weights, or the pairs (+ weights).
    pub gbs: f64,
    pub fraction_of_read_bandwidth: f64,
    /// Fixed point and counts: bit for bit equal to the CPU backend; float: within 1e-4 relative.
    pub verified: bool,
    pub passes: usize,
}

impl BenchRow for GeneralRow {
    const COLUMNS: &'static [Column] = &[
        Column::left("case", 9),
        Column::left("dist", 8),
        Column::right("bins", 10),
        Column::left("strategy", 17),
        Column::left("ran", 17),
        Column::left("accumulation", 15),
        Column::right("ms", 10),
        Column::right("GB/s", 9),
        Column::right("%read", 7),
        Column::right("ok", 3),
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.case.into(),
            self.distribution.clone(),
            self.bins.clone(),
            self.strategy.name().into(),
            self.ran.name().into(),
            self.accumulation.clone(),
            format!("{:.4}", self.ms),
            format!("{:.1}", self.gbs),
            percent_cell(self.fraction_of_read_bandwidth),
            ok_cell(self.verified),
        ]
    }

    fn verified(&self) -> bool {
        self.verified
    }
}

fn accumulation_of(name: &str) -> anyhow::Result<(Accumulation, SharedAtomics)> {
    Ok(match name {
        "halves" => (Accumulation::FixedPoint, SharedAtomics::Halves),
        "native64" => (Accumulation::FixedPoint, SharedAtomics::Native64),
        "float" => (Accumulation::FloatAtomics, SharedAtomics::Halves),
        "exact" => (Accumulation::Exact, SharedAtomics::Halves),
        _ => bail!("unknown accumulation '{name}' (expected halves, native64, float or exact)"),
    })
}

fn accumulation_name(a: Accumulation, s: SharedAtomics, ran: Strategy) -> String {
    match a {
        Accumulation::FloatAtomics => "float".into(),
        Accumulation::Exact => "exact".into(),
        // Only the block strategy has shared-memory bins; elsewhere the flavours are one kernel.
        Accumulation::FixedPoint if ran == Strategy::BlockShared => format!("fixed-{}", s.name()),
        Accumulation::FixedPoint => "fixed".into(),
    }
}

/// Median milliseconds of a plan's launch (zeroing included), CUDA events.
fn time_general(
    dev: &Arc<CudaDevice>,
    plan: &mut GeneralPlan<f32, f32>,
    input: &GeneralInput<'_, f32, f32>,
    reps: usize,
) -> anyhow::Result<f64> {
    let stream = dev.stream();
    let timer = stream.timer()?;
    let once = timer.time_ms(|| plan.launch(stream, input))?;
    let reps = if once > 20.0 { reps.min(5) } else { reps };
    Ok(timer.median_ms(reps, || plan.launch(stream, input))?)
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-4 * y.abs().max(1.0))
}

/// What both benches open first: the backend, the samples per case, the read bandwidth.
struct Setup {
    backend: Backend,
    n: usize,
    device: String,
    read_gbs: f64,
}

impl Setup {
    /// `size` samples per case (default 2^28 on a GPU, 2^22 on the CPU).
    fn open(out: &BenchOutputArgs, size: Option<usize>) -> anyhow::Result<Setup> {
        let backend = out.backend.open()?;
        let gpu = matches!(backend, Backend::Cuda(_));
        let n = size.unwrap_or(if gpu { 1 << 28 } else { 1 << 22 });
        let (device, read_gbs) = device_and_bandwidth(&backend)?;
        Ok(Setup { backend, n, device, read_gbs })
    }

    /// Prints the rows of `tally bench NAME`.
    fn report(&self, name: &'static str, rows: &[GeneralRow], json: bool) -> anyhow::Result<()> {
        let report = BenchReport {
            name,
            backend: self.backend.name(),
            device: &self.device,
            samples: Some(self.n),
            yardstick: Yardstick::Read(self.read_gbs),
            rows,
        };
        report.print(json)
    }
}

/// What the rows of one case share: its name, data and bins, and the bytes each run reads.
struct GeneralCase {
    case: &'static str,
    distribution: String,
    bins: String,
    bytes: f64,
    read_gbs: f64,
}

impl GeneralCase {
    /// The row of one timed run.
    fn row(
        &self,
        (strategy, ran): (Strategy, Strategy),
        accumulation: String,
        ms: f64,
        verified: bool,
        passes: usize,
    ) -> GeneralRow {
        let gbs = gbs(self.bytes, ms);
        GeneralRow {
            case: self.case,
            distribution: self.distribution.clone(),
            bins: self.bins.clone(),
            strategy,
            ran,
            accumulation,
            ms,
            gbs,
            fraction_of_read_bandwidth: gbs / self.read_gbs,
            verified,
            passes,
        }
    }
}

pub(crate) fn weighted(a: BenchWeightedArgs) -> anyhow::Result<()> {
    let setup = Setup::open(&a.out, a.size)?;
    let (backend, n, read_gbs) = (&setup.backend, setup.n, setup.read_gbs);
    let accs: Vec<(Accumulation, SharedAtomics)> =
        a.accumulations.iter().map(|s| accumulation_of(s)).collect::<anyhow::Result<_>>()?;
    let mut rows = Vec::new();
    for &bins in &a.bins {
        if bins == 0 {
            bail!("invalid argument: the bin count must be at least 1");
        }
        for &dist in &a.distributions {
            let xs: Vec<f32> = data::samples(dist, bins, n, data::HIST_SEED ^ bins as u64);
            let ws: Vec<f32> = data::unit_weights(n, 0x3e1 ^ bins as u64);
            let spec = HistogramSpec::even(bins, 0.0, bins as f64);
            let reference =
                tally::histogram::weighted::cpu_histogram_weighted(&xs, &ws, &spec, Accumulation::FixedPoint)?;
            // Fixed point and exact sums: the CPU backend's bits; float atomics: close to them.
            let exact = std::cell::OnceCell::new();
            let verify = |acc: Accumulation, h: &tally::WeightedHistogram| -> anyhow::Result<bool> {
                Ok(match acc {
                    Accumulation::FixedPoint => h.same_bits(&reference),
                    Accumulation::Exact => h.same_bits(
                        exact
                            .get_or_init(|| {
                                tally::histogram::weighted::cpu_histogram_weighted(&xs, &ws, &spec, Accumulation::Exact)
                            })
                            .as_ref()
                            .map_err(|e| anyhow::anyhow!("{e}"))?,
                    ),
                    Accumulation::FloatAtomics => close(&h.sums[0], &reference.sums[0]),
                })
            };
            let case = GeneralCase {
                case: "weighted",
                distribution: dist.name().into(),
                bins: bins.to_string(),
                bytes: (n * 8) as f64,
                read_gbs,
            };
            match backend {
                Backend::Cpu => {
                    // The CPU has one fixed-point flavour.
                    let mut cpu_accs: Vec<Accumulation> = accs.iter().map(|a| a.0).collect();
                    cpu_accs.dedup();
                    for acc in cpu_accs {
                        let opts = WeightedOptions { accumulation: acc, ..Default::default() };
                        let (ms, h) = host_median_ms(a.reps.min(5), || {
                            Ok(Backend::Cpu.histogram_weighted(&xs, &ws, &spec, opts)?)
                        })?;
                        let ok = verify(acc, &h)?;
                        let cpu = Strategy::ThreadPrivate;
                        let name = accumulation_name(acc, SharedAtomics::Halves, cpu);
                        rows.push(case.row((cpu, cpu), name, ms, ok, 1));
                    }
                }
                Backend::Cuda(dev) => {
                    let bx = dev.stream().upload(&xs, "benchmark samples")?;
                    let bw = dev.stream().upload(&ws, "benchmark weights")?;
                    let input = GeneralInput { x: bx.view(), y: None, interleaved: false, weights: Some(bw.view()) };
                    for &s in &a.strategies {
                        for &(acc, flavour) in &accs {
                            let options = WeightedOptions { strategy: s, accumulation: acc, shared_atomics: flavour };
                            let mut plan = GeneralPlan::weighted(dev, &input, &spec, options)?;
                            if acc == Accumulation::FixedPoint
                                && flavour == SharedAtomics::Native64
                                && plan.strategy() != Strategy::BlockShared
                            {
                                continue; // the same kernel as halves there
                            }
                            let ms = time_general(dev, &mut plan, &input, a.reps)?;
                            let h = plan.read_weighted(dev.stream(), &spec)?;
                            let ok = verify(acc, &h)?;
                            let name = accumulation_name(acc, flavour, plan.strategy());
                            rows.push(case.row((s, plan.strategy()), name, ms, ok, plan.passes()));
                        }
                    }
                }
            }
        }
    }
    setup.report("weighted", &rows, a.out.json)
}

pub(crate) fn hist2d(a: BenchHist2dArgs) -> anyhow::Result<()> {
    let setup = Setup::open(&a.out, a.size)?;
    let (backend, n, read_gbs) = (&setup.backend, setup.n, setup.read_gbs);
    let spec = Histogram2dSpec::even(a.bins, (0.0, 1.0), a.bins, (0.0, 1.0));
    let label = format!("{}x{}", a.bins, a.bins);
    let mut rows = Vec::new();
    for dist in &a.distributions {
        let xy = match dist.as_str() {
            "uniform" => data::uniform_pairs(n, 0x2d),
            "blob" => data::gaussian_pairs(n, 0.5, 0.05, 0x2d),
            d => bail!("unknown distribution '{d}' (expected uniform or blob)"),
        };
        let ws = if a.weighted { Some(data::unit_weights(n, 0x77)) } else { None };
        let pairs = Pairs::Interleaved(&xy);
        let reference = match &ws {
            Some(w) => {
                tally::histogram::hist2d::cpu_histogram_2d(pairs, Some(w.as_slice()), &spec, Accumulation::FixedPoint)?
            }
            None => {
                tally::histogram::hist2d::cpu_histogram_2d::<f32, f32>(pairs, None, &spec, Accumulation::FixedPoint)?
            }
        };
        for weighted in [false, true].into_iter().filter(|&w| !w || a.weighted) {
            let acc = if weighted { "fixed" } else { "count" };
            let reference = if weighted {
                reference.clone()
            } else {
                tally::histogram::hist2d::cpu_histogram_2d::<f32, f32>(pairs, None, &spec, Accumulation::FixedPoint)?
            };
            let w = if weighted { ws.as_deref() } else { None };
            let case = GeneralCase {
                case: "hist2d",
                distribution: dist.clone(),
                bins: label.clone(),
                bytes: (n * if weighted { 12 } else { 8 }) as f64,
                read_gbs,
            };
            match backend {
                Backend::Cpu => {
                    let (ms, h) = host_median_ms(a.reps.min(5), || {
                        Ok(tally::histogram::hist2d::cpu_histogram_2d(pairs, w, &spec, Accumulation::FixedPoint)?)
                    })?;
                    let cpu = Strategy::ThreadPrivate;
                    rows.push(case.row((cpu, cpu), acc.into(), ms, h.same_bits(&reference), 1));
                }
                Backend::Cuda(dev) => {
                    let coords = dev.stream().upload(&xy, "benchmark pairs")?;
                    let bw = w.map(|w| dev.stream().upload(w, "benchmark weights")).transpose()?;
                    let input = GeneralInput {
                        x: coords.view(),
                        y: None,
                        interleaved: true,
                        weights: bw.as_ref().map(|b| b.view()),
                    };
                    for &s in &a.strategies {
                        let mut plan =
                            GeneralPlan::two_d(dev, &input, &spec, WeightedOptions::default().with_strategy(s))?;
                        let ms = time_general(dev, &mut plan, &input, a.reps)?;
                        let h = plan.read_2d(dev.stream(), &spec)?;
                        rows.push(case.row(
                            (s, plan.strategy()),
                            acc.into(),
                            ms,
                            h.same_bits(&reference),
                            plan.passes(),
                        ));
                    }
                }
            }
        }
    }
    setup.report("hist2d", &rows, a.out.json)
}

#[derive(clap::Args, Debug)]
pub struct BenchImageArgs {
    /// Channel values per case (default 2^28 on a GPU, 2^22 on the CPU), in square-ish images.
    #[arg(long)]
    pub size: Option<usize>,
    /// Bins over the channel type's range ([0, 256) for u8, [0, 1) for f32).
    #[arg(long, default_value_t = 256)]
    pub bins: u32,
    /// Channel types: u8, u16, f32.
    #[arg(long, default_value = "u8,f32", value_delimiter = ',')]
    pub dtypes: Vec<String>,
    /// Channels per pixel (3: RGB, 4: RGBA).
    #[arg(long, default_value = "3,4", value_delimiter = ',')]
    pub channels: Vec<u32>,
    /// Strategies (GPU only).
    #[arg(long, default_value = "auto,global-atomic", value_delimiter = ',', value_parser = parse_strategy)]
    pub strategies: Vec<Strategy>,
    #[arg(long, default_value_t = 20)]
    pub reps: usize,
    #[command(flatten)]
    pub out: BenchOutputArgs,
}

/// `tally bench image`: brightness histograms of uniform images, interleaved and planar, the
/// mean and Rec. 709 luma, against the read bandwidth over every channel value.
pub(crate) fn image(a: BenchImageArgs) -> anyhow::Result<()> {
    let setup = Setup::open(&a.out, a.size)?;
    let mut rows = Vec::new();
    for dtype in &a.dtypes {
        for &channels in &a.channels {
            let pixels = setup.n / channels as usize;
            let height = (pixels as f64).sqrt() as usize;
            let width = pixels / height.max(1);
            let len = height * width * channels as usize;
            match dtype.trim() {
                "u8" => image_rows::<u8>(&setup, &a, (height, width, channels), len, &mut rows)?,
                "u16" => image_rows::<u16>(&setup, &a, (height, width, channels), len, &mut rows)?,
                "f32" => image_rows::<f32>(&setup, &a, (height, width, channels), len, &mut rows)?,
                d => bail!("image histograms take u8, u16 or f32 channels here, not '{d}'"),
            }
        }
    }
    setup.report("image", &rows, a.out.json)
}

/// The rows of one channel type and image shape: each layout, brightness and strategy.
fn image_rows<T: tally::Sample + BenchChannel>(
    setup: &Setup,
    a: &BenchImageArgs,
    (height, width, channels): (usize, usize, u32),
    len: usize,
    rows: &mut Vec<GeneralRow>,
) -> anyhow::Result<()> {
    use tally::{Brightness, Image, ImageLayout};
    let unit = |i: usize| (data::splitmix64(i as u64 ^ 0x1a6e) >> 11) as f64 / (1u64 << 53) as f64;
    let values: Vec<T> = (0..len).map(|i| T::from_unit(unit(i))).collect();
    let spec = HistogramSpec::even(a.bins, 0.0, T::TOP);
    let rec709 = if channels == 4 { Brightness::rec709_alpha() } else { Brightness::rec709() };
    for layout in [ImageLayout::Hwc, ImageLayout::Chw] {
        for (name, brightness) in [("mean", Brightness::Mean), ("rec709", rec709.clone())] {
            let image = Image { height, width, channels, layout, brightness };
            // The sequential statement of the rule, so that the CPU backend's rows check it too.
            let reference = tally::histogram::image::reference::image_histogram(&values, &image, &spec);
            let lay = if layout == ImageLayout::Hwc { "hwc" } else { "chw" };
            let case = GeneralCase {
                case: "image",
                distribution: format!("{} {lay} x{channels}", T::DTYPE),
                bins: a.bins.to_string(),
                bytes: (len * std::mem::size_of::<T>()) as f64,
                read_gbs: setup.read_gbs,
            };
            match &setup.backend {
                Backend::Cpu => {
                    let (ms, h) = host_median_ms(a.reps.min(5), || {
                        Ok(tally::histogram::image::cpu::image_histogram(&values, &image, &spec))
                    })?;
                    let cpu = Strategy::ThreadPrivate;
                    rows.push(case.row((cpu, cpu), name.into(), ms, h.same_counts(&reference), 1));
                }
                Backend::Cuda(dev) => {
                    let stream = dev.stream();
                    let buf = stream.upload(&values, "benchmark image")?;
                    let view = buf.view();
                    for &s in &a.strategies {
                        let mut plan = tally::histogram::ImagePlan::<T>::new(dev, &image, &spec, s)?;
                        let timer = stream.timer()?;
                        let ms = timer.median_ms(a.reps, || plan.launch(stream, &view))?;
                        let h = plan.read(stream)?;
                        rows.push(case.row((s, plan.strategy()), name.into(), ms, h.same_counts(&reference), 1));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Channel values from a uniform number in [0, 1), over the type's range.
trait BenchChannel {
    const TOP: f64;
    fn from_unit(u: f64) -> Self;
}
impl BenchChannel for u8 {
    const TOP: f64 = 256.0;
    fn from_unit(u: f64) -> Self {
        (u * 256.0) as u8
    }
}
impl BenchChannel for u16 {
    const TOP: f64 = 65536.0;
    fn from_unit(u: f64) -> Self {
        (u * 65536.0) as u16
    }
}
impl BenchChannel for f32 {
    const TOP: f64 = 1.0;
    fn from_unit(u: f64) -> Self {
        u as f32
    }
}
