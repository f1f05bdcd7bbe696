//! `tally bench select`: stream compaction on resident f32 data, the cases the CUB and torch
//! peers run (scripts/peers: `DeviceSelect::If`, `DevicePartition::If`, `DeviceSelect::Flagged`,
//! `masked_select`): values uniform in [-0.5, 0.5) (the peers' hash) kept by `x < t` at 1%, 50%
//! and 99%, and the same shares in long runs (kept values in runs of 2^16); stable, unordered,
//! in-order and reversed-rest partitions, by flags, indices and count_if. Each case is timed
//! (median of CUDA events around the launch; and the whole call, launch to the count read back,
//! on the host clock), checked against the CPU backend, and set against the device-to-device
//! copy bandwidth measured in the same run.

use super::bench_report::{host_median_ms, median};
use super::bench_scan::{CopySweep, ScanRow};
use anyhow::bail;
use std::time::Instant;
use tally::select::reference;
use tally::{Backend, Predicate, SelectMode, SelectOptions, SelectPlan};

/// `tally bench select` takes what `tally bench scan` takes.
pub use super::bench_scan::BenchScanArgs as BenchSelectArgs;

/// A checksum of a multiset of floats: count, and the wrapping sum of their bits.
fn checksum(v: &[f32]) -> (usize, u64) {
    (v.len(), v.iter().fold(0u64, |s, x| s.wrapping_add(x.to_bits() as u64)))
}

fn same(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

struct Case<'a> {
    name: String,
    xs: &'a [f32],
    predicate: Predicate,
    mode: SelectMode,
}

/// Times one case; returns (ms, the whole call's ms where it differs, kept, verified).
fn run_case(backend: &Backend, c: &Case, flags: &[u8], reps: usize) -> anyhow::Result<(f64, Option<f64>, u64, bool)> {
    let p = &c.predicate;
    let (want, want_kept) = match c.mode {
        SelectMode::Partition | SelectMode::PartitionReversed => {
            let (mut v, k) = reference::partition(c.xs, p);
            if c.mode == SelectMode::PartitionReversed {
                v[k as usize..].reverse();
            }
            (v, k)
        }
        SelectMode::Flagged => {
            let v = reference::select_flagged(c.xs, flags);
            let k = v.len() as u64;
            (v, k)
        }
        _ => {
            let v = reference::select(c.xs, p);
            let k = v.len() as u64;
            (v, k)
        }
    };
    // The CPU's indices themselves, not only the values they point at, against the reference.
    let mut indices_exact = true;
    let (ms, e2e, kept, got) = match backend {
        Backend::Cpu => {
            // Each call is timed alone: the previous result is dropped, and the indices mapped
            // to their values for the check, outside the clock.
            let mut t = Vec::new();
            let mut last = (0, Vec::new());
            for _ in 0..reps.clamp(1, 10) {
                drop(std::mem::take(&mut last.1));
                let s = Instant::now();
                let (kept, values, indices) = match c.mode {
                    SelectMode::Partition | SelectMode::PartitionReversed => {
                        let reversed = c.mode == SelectMode::PartitionReversed;
                        let o = SelectOptions { rejected_reversed: reversed, ..SelectOptions::default() };
                        let (b, k) = backend.partition_with(c.xs, p, o)?;
                        let tally::Buffer::Host(v) = b else { bail!("a CPU result on the device") };
                        (k, v, Vec::new())
                    }
                    SelectMode::Flagged => {
                        let v = backend.select_flagged_vec(c.xs, flags)?;
                        (v.len() as u64, v, Vec::new())
                    }
                    SelectMode::Indices => {
                        let idx = backend.select_indices_vec(c.xs, p)?;
                        (idx.len() as u64, Vec::new(), idx)
                    }
                    SelectMode::Count => (backend.count_if(c.xs, p)?, Vec::new(), Vec::new()),
                    _ => {
                        let v = backend.select_vec(c.xs, p, SelectOptions::default())?;
                        (v.len() as u64, v, Vec::new())
                    }
                };
                t.push(s.elapsed().as_secs_f64() * 1e3);
                if c.mode == SelectMode::Indices {
                    indices_exact = indices == reference::select_indices(c.xs, p);
                }
                last = match c.mode {
                    SelectMode::Indices => (kept, indices.iter().map(|&i| c.xs[i as usize]).collect()),
                    // A count has no items: it is checked by the count alone.
                    SelectMode::Count => (kept, want.clone()),
                    _ => (kept, values),
                };
            }
            (median(t), None, last.0, last.1)
        }
        Backend::Cuda(dev) => {
            let stream = dev.stream();
            let n = c.xs.len();
            let input = stream.upload(c.xs, "benchmark values")?;
            let mut plan = match c.mode {
                SelectMode::Flagged => SelectPlan::<f32>::flagged(dev, n)?,
                mode => SelectPlan::<f32>::new(dev, p, mode, n)?,
            };
            let (ms, e2e, kept, got) = match c.mode {
                SelectMode::Indices => {
                    let mut out = stream.alloc::<u64>(n, "benchmark indices")?;
                    let ms = stream
                        .timer()?
                        .median_ms(reps, || plan.launch_indices(stream, &input.view(), &mut out.view_mut()))?;
                    let (e2e, _) = host_median_ms(reps.max(3), || {
                        plan.launch_indices(stream, &input.view(), &mut out.view_mut())?;
                        Ok(plan.read(stream)?)
                    })?;
                    let kept = plan.read(stream)?;
                    let idx = stream.download(&out.view())?;
                    let got: Vec<f32> = idx[..kept as usize].iter().map(|&i| c.xs[i as usize]).collect();
                    (ms, Some(e2e), kept, got)
                }
                SelectMode::Count => {
                    let ms = stream.timer()?.median_ms(reps, || plan.launch_count(stream, &input.view()))?;
                    let (e2e, _) = host_median_ms(reps.max(3), || {
                        plan.launch_count(stream, &input.view())?;
                        Ok(plan.read(stream)?)
                    })?;
                    (ms, Some(e2e), plan.read(stream)?, want.clone())
                }
                mode => {
                    let fl = stream.upload(flags, "benchmark flags")?;
                    let mut out = stream.alloc::<f32>(n, "benchmark output")?;
                    let mut launch = |plan: &mut SelectPlan<f32>| {
                        if mode == SelectMode::Flagged {
                            plan.launch_flagged(stream, &input.view(), &fl.view(), &mut out.view_mut())
                        } else {
                            plan.launch(stream, &input.view(), &mut out.view_mut())
                        }
                    };
                    let ms = stream.timer()?.median_ms(reps, || launch(&mut plan))?;
                    let (e2e, _) = host_median_ms(reps.max(3), || {
                        launch(&mut plan)?;
                        Ok(plan.read(stream)?)
                    })?;
                    let kept = plan.read(stream)?;
                    let mut got = stream.download(&out.view())?;
                    if !mode.is_partition() {
                        got.truncate(kept as usize);
                    }
                    (ms, Some(e2e), kept, got)
                }
            };
            (ms, e2e, kept, got)
        }
    };
    let verified = indices_exact
        && kept == want_kept
        && if c.mode == SelectMode::Unordered { checksum(&got) == checksum(&want) } else { same(&got, &want) };
    Ok((ms, e2e, kept, verified))
}

/// Runs `tally bench select`.
pub fn run(a: BenchSelectArgs) -> anyhow::Result<()> {
    let sweep = CopySweep::open(&a.out, a.reps, &a.log2_sizes, (&[20, 24, 28], &[22]), 30)?;
    let mut rows = Vec::new();
    for &log2 in &sweep.sizes {
        let n = 1usize << log2;
        // Uniform in [-0.5, 0.5) as the peers fill it; in runs of 2^16 equal values.
        let uniform = tally::data::peer_values(n, 1);
        let runs = tally::data::peer_values(n, 1 << 16);
        let flags: Vec<u8> = uniform.iter().map(|&x| (x > 0.0) as u8).collect();
        let mut cases = Vec::new();
        let below = |frac: f64| Predicate::parse(&format!("x < {}", (frac - 0.5) as f32)).expect("parses");
        for frac in [0.01, 0.5, 0.99] {
            let pct = 100.0 * frac;
            let modes = [
                ("select", &uniform, SelectMode::Stable),
                ("select runs", &runs, SelectMode::Stable),
                ("unordered", &uniform, SelectMode::Unordered),
                ("partition", &uniform, SelectMode::Partition),
                ("partition rev", &uniform, SelectMode::PartitionReversed),
            ];
            for (what, xs, mode) in modes {
                cases.push(Case { name: format!("{what} {pct}%"), xs, predicate: below(frac), mode });
            }
        }
        cases.push(Case { name: "flagged 50%".into(), xs: &uniform, predicate: below(0.5), mode: SelectMode::Flagged });
        cases.push(Case { name: "indices 50%".into(), xs: &uniform, predicate: below(0.5), mode: SelectMode::Indices });
        cases.push(Case { name: "count_if 50%".into(), xs: &uniform, predicate: below(0.5), mode: SelectMode::Count });
        for c in cases.iter().filter(|c| a.chooses(&c.name)) {
            let (ms, e2e, kept, verified) = run_case(&sweep.backend, c, &flags, a.reps)?;
            let bytes = match c.mode {
                SelectMode::Partition | SelectMode::PartitionReversed => 8 * n as u64,
                SelectMode::Flagged => 5 * n as u64 + 4 * kept,
                SelectMode::Indices => 4 * n as u64 + 8 * kept,
                SelectMode::Count => 4 * n as u64,
                _ => 4 * n as u64 + 4 * kept,
            };
            rows.push(ScanRow { e2e_ms: e2e, ..sweep.row(c.name.clone(), n, Some(kept), ms, bytes as f64, verified) });
        }
    }
    sweep.print("select", &rows, a.out.json)
}
