//! `--devices all|0,1`: `hist`, `hist2d`, `reduce`, `scan` and `select` on a device set (several
//! GPUs of this host, combined through NCCL) instead of one backend, with the one-device output.

use super::{device_options, BackendArg};
use anyhow::{anyhow, bail};
use tally::histogram::{Histogram2d, Histogram2dSpec, Pairs, Weight, WeightedHistogram};
use tally::multi::{device_count, DeviceSet, Shards};
use tally::reduce::{ReduceElement, ReduceOp, ReduceOptions, Reduction};
use tally::{
    Backend, Histogram, HistogramSpec, Image, Predicate, Sample, ScanInto, ScanOp, ScanOptions, ScanValue,
    SelectElement, SelectOptions, Strategy, WeightedOptions,
};

/// The GPUs of `--devices`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceList {
    /// Every device of this host.
    All,
    /// These ordinals, in rank order.
    Ordinals(Vec<usize>),
}

fn parse_devices(s: &str) -> Result<DeviceList, String> {
    if s == "all" {
        return Ok(DeviceList::All);
    }
    let ordinals: Vec<usize> = super::parse_list(s)?;
    if ordinals.is_empty() {
        return Err(format!("expected all or device ordinals such as 0,1, got '{s}'"));
    }
    Ok(DeviceList::Ordinals(ordinals))
}

/// `--devices`, shared by the subcommands that run on a device set.
#[derive(clap::Args, Debug, Clone)]
pub struct DevicesArg {
    /// Run on several GPUs of this host, combined through NCCL (libnccl.so.2 on the library
    /// path): `all`, or ordinals such as `0,1`. The input is split evenly over them; the output
    /// is the one-GPU output (counts and exact sums bit for bit).
    #[arg(long, value_parser = parse_devices)]
    pub devices: Option<DeviceList>,
}

/// What a subcommand runs on: one backend, or a device set.
pub enum Engine {
    /// The backend of `--backend`.
    One(Backend),
    /// The GPUs of `--devices`.
    Set(DeviceSet),
}

/// The device set of `list` (which takes no `--backend` but cuda), each ordinal checked against
/// the devices of this host.
pub fn open_set(backend: &BackendArg, list: &DeviceList) -> anyhow::Result<DeviceSet> {
    if backend.backend == tally::BackendKind::Cpu {
        bail!("--devices runs on GPUs: it does not go with --backend cpu");
    }
    let count = device_count().map_err(|e| anyhow!("--devices: no GPU can be used ({e})"))?;
    let ordinals = match list {
        DeviceList::All => (0..count).collect(),
        DeviceList::Ordinals(v) => v.clone(),
    };
    if count == 0 {
        bail!("--devices: this host has no CUDA device");
    }
    if let Some(missing) = ordinals.iter().find(|&&o| o >= count) {
        bail!("--devices: there is no device {missing} (this host has {count}: 0 to {})", count - 1);
    }
    DeviceSet::with_options(&ordinals, &device_options()).map_err(|e| anyhow!("--devices {ordinals:?}: {e}"))
}

impl Engine {
    /// The device set of `devices` where one is asked for (it takes no `--backend` but cuda),
    /// else the backend.
    pub fn open(backend: &BackendArg, devices: &DevicesArg) -> anyhow::Result<Engine> {
        match &devices.devices {
            Some(list) => Ok(Engine::Set(open_set(backend, list)?)),
            None => Ok(Engine::One(backend.open()?)),
        }
    }

    /// The backend's name ("cuda" for a device set).
    pub fn name(&self) -> &'static str {
        match self {
            Engine::One(b) => b.name(),
            Engine::Set(_) => "cuda",
        }
    }

    /// The single backend, where it is one.
    pub fn backend(&self) -> Option<&Backend> {
        match self {
            Engine::One(b) => Some(b),
            Engine::Set(_) => None,
        }
    }

    /// [`Backend::image_histogram`]; on a device set, the brightness computed on the host by the
    /// same rule and counted as f64 samples (the same bins).
    pub fn image_histogram<T: Sample>(
        &self,
        pixels: &[T],
        image: &Image,
        spec: &HistogramSpec,
        strategy: Strategy,
    ) -> tally::Result<Histogram> {
        match self {
            Engine::One(b) => b.image_histogram(pixels, image, spec, strategy),
            Engine::Set(s) => {
                image.validate(pixels.len(), T::DTYPE, spec)?;
                s.histogram(&tally::histogram::image::cpu::brightness_values(pixels, image), spec, strategy)
            }
        }
    }

    /// [`Backend::histogram`] or [`DeviceSet::histogram`].
    pub fn histogram<T: Sample>(&self, v: &[T], spec: &HistogramSpec, strategy: Strategy) -> tally::Result<Histogram> {
        match self {
            Engine::One(b) => b.histogram(v, spec, strategy),
            Engine::Set(s) => s.histogram(v, spec, strategy),
        }
    }

    /// [`Backend::histogram_weighted`] or [`DeviceSet::histogram_weighted`].
    pub fn histogram_weighted<T: Sample, W: Weight>(
        &self,
        v: &[T],
        w: &[W],
        spec: &HistogramSpec,
        options: WeightedOptions,
    ) -> tally::Result<WeightedHistogram> {
        match self {
            Engine::One(b) => b.histogram_weighted(v, w, spec, options),
            Engine::Set(s) => s.histogram_weighted(v, w, spec, options),
        }
    }

    /// [`Backend::histogram_2d`] (weighted or not) or [`DeviceSet::histogram_2d`].
    pub fn histogram_2d<T: Sample, W: Weight>(
        &self,
        (x, y): (&[T], &[T]),
        w: Option<&[W]>,
        spec: &Histogram2dSpec,
        options: WeightedOptions,
    ) -> tally::Result<Histogram2d> {
        match (self, w) {
            (Engine::One(b), None) => b.histogram_2d(Pairs::Split(x, y), spec, options.strategy),
            (Engine::One(b), Some(w)) => b.histogram_2d_weighted(Pairs::Split(x, y), w, spec, options),
            (Engine::Set(s), w) => s.histogram_2d(x, y, w.map(Shards::from), spec, options),
        }
    }

    /// [`Backend::reduce`] or [`DeviceSet::reduce`].
    pub fn reduce<T: ReduceElement>(&self, v: &[T], op: ReduceOp, options: ReduceOptions) -> tally::Result<Reduction> {
        match self {
            Engine::One(b) => b.reduce(v, op, options),
            Engine::Set(s) => s.reduce(v, op, options),
        }
    }

    /// [`Backend::scan_vec`] or [`DeviceSet::scan`].
    pub fn scan_vec<T: ScanInto<O>, O: ScanValue>(
        &self,
        v: &[T],
        op: ScanOp,
        options: ScanOptions,
    ) -> tally::Result<Vec<O>> {
        match self {
            Engine::One(b) => b.scan_vec(v, op, options),
            Engine::Set(s) => s.scan(v, op, options),
        }
    }

    /// [`Backend::select_vec`] or [`DeviceSet::select`] (stable, which an unordered selection
    /// may also be).
    pub fn select_vec<T: SelectElement>(
        &self,
        v: &[T],
        p: &Predicate,
        options: SelectOptions,
    ) -> tally::Result<Vec<T>> {
        match self {
            Engine::One(b) => b.select_vec(v, p, options),
            Engine::Set(s) => s.select(v, p),
        }
    }

    /// The single backend, or an error naming `what` a device set does not run.
    pub fn one(&self, what: &str) -> anyhow::Result<&Backend> {
        self.backend().ok_or_else(|| anyhow!("{what} does not run over several devices; leave out --devices"))
    }
}
