//! `tally lab histogram`: the strategy table (one input size, 256 bins, from uniform to one hot
//! bin) and the sweeps over bin count and skew, every strategy timed on resident i32 samples and
//! checked against the CPU backend, with CUB's `HistogramEven` on identical inputs beside them
//! where nvcc can build the harness.

use super::cub;
use rayon::prelude::*;
use serde::Serialize;
use std::sync::Arc;
use tally::data::splitmix64;
use tally::device::cache::fnv1a;
use tally::device::CudaDevice;
use tally::error::{Error, Result};
use tally::histogram::cpu;
use tally::lab::Progress;
use tally::{HistogramSpec, Strategy};

const SEED: u64 = 0x7a11_1ab5;

#[derive(Clone, Debug, Serialize)]
pub struct HistogramConfig {
    /// i32 samples per case.
    pub samples: usize,
    /// The table: this bin count at each of `table_hot`.
    pub table_bins: u32,
    pub table_hot: Vec<f64>,
    /// The bin-count sweep, on uniform samples.
    pub sweep_bins: Vec<u32>,
    /// The skew sweep at `table_bins`: the share of samples that fall in bin 0 (the rest uniform).
    pub sweep_hot: Vec<f64>,
    pub strategies: Vec<Strategy>,
    pub reps: usize,
    /// Build and run the CUB harness where nvcc is found.
    pub cub: bool,
}

impl Default for HistogramConfig {
    fn default() -> Self {
        HistogramConfig {
            samples: 10_000_000,
            table_bins: 256,
            table_hot: vec![0.0, 0.5, 0.9, 1.0],
            sweep_bins: vec![16, 64, 256, 1024, 4096, 16384, 65536],
            sweep_hot: vec![0.0, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0],
            strategies: Strategy::GPU.to_vec(),
            reps: 20,
            cub: true,
        }
    }
}

impl HistogramConfig {
    pub fn validate(&self) -> Result<()> {
        if self.samples == 0 || self.samples > i32::MAX as usize {
            return Err(Error::invalid("samples must be from 1 to 2^31-1"));
        }
        if self.table_bins == 0 || self.sweep_bins.contains(&0) {
            return Err(Error::invalid("the bin count must be at least 1"));
        }
        if self.table_hot.iter().chain(&self.sweep_hot).any(|h| !(0.0..=1.0).contains(h)) {
            return Err(Error::invalid("hot fractions lie in [0, 1]"));
        }
        if self.strategies.contains(&Strategy::ThreadPrivate) {
            return Err(Error::invalid("thread-private is the CPU's strategy, not a GPU one"));
        }
        Ok(())
    }

    /// Every distinct (bins, hot fraction) the table and the sweeps need, each measured once.
    pub fn cases(&self) -> Vec<(u32, f64)> {
        let mut v: Vec<(u32, f64)> = Vec::new();
        let all = self
            .table_hot
            .iter()
            .map(|&h| (self.table_bins, h))
            .chain(self.sweep_bins.iter().map(|&b| (b, 0.0)))
            .chain(self.sweep_hot.iter().map(|&h| (self.table_bins, h)));
        for c in all {
            if !v.iter().any(|&(b, h)| b == c.0 && hot_threshold(h) == hot_threshold(c.1)) {
                v.push(c);
            }
        }
        v
    }
}

/// The hot fraction as the harness and the generator test it: a threshold on 24 random bits.
pub fn hot_threshold(hot: f64) -> u64 {
    (hot.clamp(0.0, 1.0) * (1u64 << 24) as f64).round() as u64
}

/// The lab's samples: sample i lands in bin 0 with probability `hot`, else uniformly in
/// [0, bins). Integer arithmetic only, so that `cub_peer.cu` generates the very same samples.
pub fn lab_samples(bins: u32, hot: f64, n: usize, seed: u64) -> Vec<i32> {
    let threshold = hot_threshold(hot);
    (0..n)
        .into_par_iter()
        .map(|i| {
            let r = splitmix64(seed ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
            if (r >> 40) < threshold {
                0
            } else {
                ((r & 0xffff_ffff) % bins as u64) as i32
            }
        })
        .collect()
}

#[derive(Clone, Debug, Serialize)]
pub struct HistogramRow {
    pub bins: u32,
    pub hot_fraction: f64,
    pub strategy: Strategy,
    /// What `auto` resolved to, or the fall-back a strategy took.
    pub ran: Option<Strategy>,
    pub ms: Option<f64>,
    /// Sample bytes read per second, in GB/s.
    pub gbs: Option<f64>,
    pub verified: bool,
    pub error: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CubRow {
    pub bins: u32,
    pub hot_fraction: f64,
    pub ms: Option<f64>,
    pub gbs: Option<f64>,
    pub verified: bool,
    pub error: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct HistogramReport {
    pub lab: &'static str,
    pub backend: &'static str,
    pub device: String,
    pub dtype: &'static str,
    pub config: HistogramConfig,
    pub rows: Vec<HistogramRow>,
    /// Empty where CUB was not run; `cub_note` says why.
    pub cub: Vec<CubRow>,
    pub cub_note: Option<String>,
    pub notes: Vec<String>,
}

/// FNV-1a over counts as little-endian u32s: what the CUB harness prints.
fn counts_fnv(counts: &[u64]) -> u64 {
    let bytes: Vec<u8> = counts.iter().flat_map(|&c| (c as u32).to_le_bytes()).collect();
    fnv1a(&bytes)
}

pub fn run(dev: &Arc<CudaDevice>, config: &HistogramConfig, progress: Progress) -> Result<HistogramReport> {
    config.validate()?;
    let cases = config.cases();
    // nvcc takes its time over CUB: build while tally measures.
    let cc = dev.info().compute_capability;
    let cub_build = config.cub.then(|| std::thread::spawn(move || cub::build(cc)));
    let total = cases.len() * config.strategies.len() + usize::from(config.cub);
    let n = config.samples;
    let bytes = (n * 4) as f64;
    let mut rows = Vec::new();
    let mut fnvs = Vec::new();
    let mut done = 0;
    for &(bins, hot) in &cases {
        progress(done, total, &format!("{bins} bins, {:.0}% hot: generating", hot * 100.0));
        let host = lab_samples(bins, hot, n, SEED);
        let spec = HistogramSpec::even(bins, 0.0, bins as f64);
        let reference = cpu::histogram(&host, &spec)?;
        fnvs.push(counts_fnv(&reference.counts[0]));
        let buf = dev.stream().upload(&host, "lab samples")?;
        drop(host);
        for &s in &config.strategies {
            progress(done, total, &format!("{bins} bins, {:.0}% hot: {s}", hot * 100.0));
            let mut row = HistogramRow {
                bins,
                hot_fraction: hot,
                strategy: s,
                ran: None,
                ms: None,
                gbs: None,
                verified: false,
                error: None,
            };
            match super::bench::time_plan::<i32>(dev, &buf.view(), &spec, s, config.reps) {
                Ok(super::bench::Timed { ms, ran, histogram: h, .. }) => {
                    row.ran = Some(ran);
                    if h.same_counts(&reference) {
                        row.verified = true;
                        row.ms = Some(ms);
                        row.gbs = Some(bytes / (ms * 1e6));
                    } else {
                        row.error = Some("counts differ from the CPU backend's".into());
                    }
                }
                Err(e @ Error::Compile { .. }) | Err(e @ Error::OutOfMemory { .. }) => row.error = Some(e.to_string()),
                Err(e) => return Err(e),
            }
            rows.push(row);
            done += 1;
        }
    }
    let mut cub_rows = Vec::new();
    let mut cub_note = None;
    if let Some(handle) = cub_build {
        progress(done, total, "CUB: building the harness (nvcc) and running it");
        let built = handle.join().unwrap_or_else(|_| Err("the nvcc build thread panicked".into()));
        let thresholds: Vec<(u32, u64)> = cases.iter().map(|&(b, h)| (b, hot_threshold(h))).collect();
        match built.and_then(|exe| cub::run(&exe, n, SEED, config.reps, &thresholds)) {
            Ok(measured) => {
                for ((&(bins, hot), (_, _, ms, fnv)), want) in cases.iter().zip(measured).zip(&fnvs) {
                    let ok = fnv == *want;
                    cub_rows.push(CubRow {
                        bins,
                        hot_fraction: hot,
                        ms: ok.then_some(ms),
                        gbs: ok.then_some(bytes / (ms * 1e6)),
                        verified: ok,
                        error: (!ok).then(|| "CUB's counts differ from the CPU backend's".to_string()),
                    });
                }
            }
            Err(e) => cub_note = Some(e),
        }
        done += 1;
    } else {
        cub_note = Some("CUB was not asked for (--no-cub)".into());
    }
    progress(done, total, "done");
    Ok(HistogramReport {
        lab: "histogram",
        backend: "cuda",
        device: dev.info().name.clone(),
        dtype: "i32",
        config: config.clone(),
        rows,
        cub: cub_rows,
        cub_note,
        notes: vec![format!(
            "{n} i32 samples resident on the device, even bins over [0, bins); hot fraction h: a share h of the samples in bin 0, the rest uniform; GB/s counts the sample bytes read once; a time includes zeroing the counters (tally) or CUB's own initialisation"
        )],
    })
}
