//! `tally bench multi --devices all`: each case on one GPU and on the device set, timed end to
//! end in the same run (the set's time includes the combine), with the scaling; for the 16M-bin
//! histogram, whose counts stay on the devices, also the set's counting alone, the combine (the
//! difference) and the NCCL all-reduce of its counters alone; the 256-bin histogram also through
//! the all-reduce (beside the NCCL all-reduce of its counters alone); the 256-bin histogram and
//! the sum also with the plans kept from call to call on both sides.

use super::bench_report::{host_median_ms, ok_cell, BenchOutputArgs, BenchReport, BenchRow, Column, Yardstick};
use super::devices::{open_set, DeviceList, DevicesArg};
use rayon::prelude::*;
use serde::Serialize;
use std::sync::Arc;
use tally::data::splitmix64 as mix;
use tally::device::{CudaDevice, DeviceBuffer, Input};
use tally::histogram::HistogramPlan;
use tally::multi::{shard::split_points, DeviceSet, Shards};
use tally::reduce::{ReduceOp, ReduceOptions};
use tally::{Backend, HistogramSpec, ScanOp, ScanOptions, ScanPlan, Strategy};

/// Arguments of `tally bench multi`.
#[derive(clap::Args, Debug)]
pub struct BenchMultiArgs {
    /// log2 of the elements per case.
    #[arg(long, default_value_t = 30)]
    pub log2_size: u32,
    /// Timed repetitions per case.
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    #[command(flatten)]
    pub devices: DevicesArg,
    #[command(flatten)]
    pub out: BenchOutputArgs,
}

/// One case, on one GPU and on the set.
#[derive(Serialize, Debug)]
pub struct MultiRow {
    pub case: &'static str,
    pub n: usize,
    pub devices: usize,
    /// One GPU, end to end (median).
    pub one_ms: f64,
    /// The device set, end to end with the combine (median).
    pub set_ms: f64,
    /// `one_ms / set_ms`.
    pub scaling: f64,
    /// The set's counting alone, without the combine (large-bin rows).
    pub compute_ms: Option<f64>,
    /// The combine: `set_ms - compute_ms` (large-bin rows).
    pub combine_ms: Option<f64>,
    /// The NCCL all-reduce of the histogram's counters alone (the 16M-bin and all-reduce rows).
    pub all_reduce_ms: Option<f64>,
    /// The set's result equals one GPU's (counts exactly; float sums and scans to 1e-5).
    pub verified: bool,
}

impl BenchRow for MultiRow {
    const COLUMNS: &'static [Column] = &[
        Column::left("case", 22),
        Column::right("n", 11),
        Column::right("GPUs", 4),
        Column::right("one ms", 9),
        Column::right("set ms", 9),
        Column::right("scaling", 7),
        Column::right("combine ms", 10),
        Column::right("allreduce ms", 12),
        Column::right("ok", 3),
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.case.into(),
            self.n.to_string(),
            self.devices.to_string(),
            format!("{:.3}", self.one_ms),
            format!("{:.3}", self.set_ms),
            format!("{:.2}x", self.scaling),
            self.combine_ms.map_or("-".into(), |t| format!("{t:.3}")),
            self.all_reduce_ms.map_or("-".into(), |t| format!("{t:.3}")),
            ok_cell(self.verified),
        ]
    }

    fn verified(&self) -> bool {
        self.verified
    }
}

/// `host` on the first device whole, and split evenly over every device of the set.
struct Resident<T> {
    whole: DeviceBuffer<T>,
    shards: Vec<DeviceBuffer<T>>,
}

impl<T: tally::device::PlainData> Resident<T> {
    fn new(set: &DeviceSet, host: &[T]) -> anyhow::Result<Self> {
        let devs: Vec<&Arc<CudaDevice>> = set.devices();
        let whole = devs[0].stream().upload(host, "benchmark input")?;
        let points = split_points(host.len(), devs.len());
        let shards = devs
            .iter()
            .enumerate()
            .map(|(i, d)| d.stream().upload(&host[points[i]..points[i + 1]], "benchmark shard"))
            .collect::<tally::Result<Vec<_>>>()?;
        set.synchronize()?;
        Ok(Resident { whole, shards })
    }

    fn shards(&self) -> Shards<'_, T> {
        Shards::Local(self.shards.iter().map(|b| Input::Device(b.view())).collect())
    }
}

/// Whether two float results agree to a relative 1e-5.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-5 * a.abs().max(b.abs()).max(1.0)
}

/// Runs `tally bench multi`.
pub fn run(a: BenchMultiArgs) -> anyhow::Result<()> {
    let set = open_set(&a.out.backend, a.devices.devices.as_ref().unwrap_or(&DeviceList::All))?;
    let dev0 = set.devices()[0].clone();
    let one = Backend::Cuda(dev0.clone());
    let k = set.devices().len();
    let n = 1usize << a.log2_size;
    let reps = a.reps;
    let mut rows = Vec::new();
    let row = |case, one_ms: f64, set_ms: f64, verified| MultiRow {
        case,
        n,
        devices: k,
        one_ms,
        set_ms,
        scaling: one_ms / set_ms,
        compute_ms: None,
        combine_ms: None,
        all_reduce_ms: None,
        verified,
    };
    // 256 bins: the counts read back to the host (1 KiB), end to end.
    let host: Vec<i32> = (0..n as u64).into_par_iter().map(|i| (mix(i) % 256) as i32).collect();
    let spec = HistogramSpec::even(256, 0.0, 256.0);
    {
        let data = Resident::new(&set, &host)?;
        let (one_ms, h1) = host_median_ms(reps, || Ok(one.histogram(data.whole.view(), &spec, Strategy::Auto)?))?;
        let (set_ms, hk) = host_median_ms(reps, || Ok(set.histogram(data.shards(), &spec, Strategy::Auto)?))?;
        rows.push(row("hist256 i32 resident", one_ms, set_ms, h1.counts == hk.counts));
        // The same with the plans kept from call to call (one GPU's `HistogramPlan`, the set's
        // `SetHistogramPlan`), each run once before the timing: a call is a launch per device
        // and the combine.
        let whole = data.whole.view();
        let mut one_plan = HistogramPlan::<i32>::new(&dev0, &whole, &spec, Strategy::Auto, dev0.tuning())?;
        let mut set_plan = set.histogram_plan(data.shards(), &spec, Strategy::Auto)?;
        one_plan.run(&whole)?;
        set_plan.run(data.shards())?;
        let (one_ms, h1k) = host_median_ms(reps, || Ok(one_plan.run(&whole)?))?;
        let (set_ms, hk) = host_median_ms(reps, || Ok(set_plan.run(data.shards())?))?;
        rows.push(row("hist256 i32 plans kept", one_ms, set_ms, h1k.counts == h1.counts && hk.counts == h1.counts));
        // The same counted and combined by the NCCL all-reduce on the devices, then read: what
        // `histogram` does where it cannot read each device's posted counts (and did before).
        let (set_ms, hk) =
            host_median_ms(reps, || Ok(set.histogram_on_devices(data.shards(), &spec, Strategy::Auto)?.read()?))?;
        rows.push(MultiRow {
            all_reduce_ms: Some(set.time_counter_all_reduce(256, reps)?),
            ..row("hist256 i32 all-reduce", one_ms, set_ms, h1.counts == hk.counts)
        });
    }
    // 16M bins: the counts (64 MiB) stay on the devices; checked once, on the host.
    {
        let bins = 1u32 << 24;
        let host: Vec<i32> = (0..n as u64).into_par_iter().map(|i| (mix(i) % bins as u64) as i32).collect();
        let spec = HistogramSpec::even(bins, 0.0, bins as f64);
        let data = Resident::new(&set, &host)?;
        drop(host);
        let (one_ms, _) = host_median_ms(reps, || {
            let view = data.whole.view();
            let mut plan = HistogramPlan::<i32>::new(&dev0, &view, &spec, Strategy::Auto, dev0.tuning())?;
            plan.launch(dev0.stream(), &view)?;
            dev0.stream().synchronize("the histogram")?;
            Ok(())
        })?;
        let (compute_ms, _) = host_median_ms(reps, || {
            let plans = set
                .devices()
                .into_iter()
                .zip(&data.shards)
                .map(|(dev, shard)| {
                    let view = shard.view();
                    let mut plan = HistogramPlan::<i32>::new(dev, &view, &spec, Strategy::Auto, dev.tuning())?;
                    plan.launch(dev.stream(), &view)?;
                    Ok(plan)
                })
                .collect::<tally::Result<Vec<_>>>()?;
            set.synchronize()?;
            Ok(plans.len())
        })?;
        let (set_ms, _) = host_median_ms(reps, || {
            let h = set.histogram_on_devices(data.shards(), &spec, Strategy::Auto)?;
            h.synchronize()?;
            Ok(())
        })?;
        let h1 = one.histogram(data.whole.view(), &spec, Strategy::Auto)?;
        let hk = set.histogram(data.shards(), &spec, Strategy::Auto)?;
        let all_reduce = set.time_counter_all_reduce(bins as usize, reps)?;
        rows.push(MultiRow {
            compute_ms: Some(compute_ms),
            combine_ms: Some(set_ms - compute_ms),
            all_reduce_ms: Some(all_reduce),
            ..row("hist16M i32 resident", one_ms, set_ms, h1.counts == hk.counts)
        });
    }
    let floats: Vec<f32> = (0..n as u64).into_par_iter().map(|i| (mix(i) >> 40) as f32 / (1u64 << 24) as f32).collect();
    {
        let data = Resident::new(&set, &floats)?;
        let sum = (ReduceOp::Sum, ReduceOptions::default());
        let (one_ms, r1) = host_median_ms(reps, || Ok(one.reduce(data.whole.view(), sum.0, sum.1)?))?;
        let (set_ms, rk) = host_median_ms(reps, || Ok(set.reduce(data.shards(), sum.0, sum.1)?))?;
        rows.push(row("sum f32 resident", one_ms, set_ms, close(r1.value, rk.value)));
        // The same with the plans kept (one GPU's `ReducePlan`, the set's `SetReducePlan`), each
        // run once before the timing.
        let whole = data.whole.view();
        let mut one_plan = tally::reduce::ReducePlan::<f32>::new(&dev0, sum.0, sum.1, n)?;
        let mut set_plan = set.reduce_plan(data.shards(), sum.0, sum.1)?;
        one_plan.launch(dev0.stream(), &whole)?;
        one_plan.read(dev0.stream())?;
        set_plan.run(data.shards())?;
        let (one_ms, r1k) = host_median_ms(reps, || {
            one_plan.launch(dev0.stream(), &whole)?;
            Ok(one_plan.read(dev0.stream())?)
        })?;
        let (set_ms, rkk) = host_median_ms(reps, || Ok(set_plan.run(data.shards())?))?;
        rows.push(row("sum f32 plans kept", one_ms, set_ms, close(r1.value, r1k.value) && close(r1.value, rkk.value)));
        // The scan's output stays on the devices too (4 GiB at 2^30).
        let opts = ScanOptions::default();
        let mut whole_out = dev0.stream().alloc::<f32>(n, "scan output")?;
        let (one_ms, _) = host_median_ms(reps, || {
            let mut plan = ScanPlan::<f32, f32>::new(&dev0, ScanOp::Sum, opts, n)?;
            plan.launch(dev0.stream(), &data.whole.view(), &mut whole_out.view_mut())?;
            plan.read(dev0.stream())?;
            Ok(())
        })?;
        let mut outs = set
            .devices()
            .into_iter()
            .zip(&data.shards)
            .map(|(d, s)| d.stream().alloc::<f32>(s.len(), "scan output"))
            .collect::<tally::Result<Vec<_>>>()?;
        let (set_ms, _) = host_median_ms(reps, || {
            let mut views: Vec<_> = outs.iter_mut().map(|b| b.view_mut()).collect();
            set.scan_into::<f32, f32>(data.shards(), &mut views, ScanOp::Sum, opts)?;
            Ok(())
        })?;
        // Checked on a sample of positions, on the host.
        let s1 = dev0.stream().download(&whole_out.view())?;
        let sk: Vec<f32> = outs
            .iter()
            .zip(set.devices())
            .map(|(b, d)| d.stream().download(&b.view()))
            .collect::<tally::Result<Vec<_>>>()?
            .concat();
        let same = s1.len() == sk.len() && s1.iter().zip(&sk).step_by(4099).all(|(&x, &y)| close(x as f64, y as f64));
        rows.push(row("scan f32 resident", one_ms, set_ms, same));
    }
    drop(floats);
    let (one_ms, h1) = host_median_ms(reps, || Ok(one.histogram(host.as_slice(), &spec, Strategy::Auto)?))?;
    let (set_ms, hk) = host_median_ms(reps, || Ok(set.histogram(host.as_slice(), &spec, Strategy::Auto)?))?;
    rows.push(row("hist256 i32 from host", one_ms, set_ms, h1.counts == hk.counts));
    let device = format!("{} x {k}", set.devices()[0].info().name);
    let report = BenchReport {
        name: "multi",
        backend: "cuda",
        device: &device,
        samples: Some(n),
        yardstick: Yardstick::Devices(k),
        rows: &rows,
    };
    report.print(a.out.json)
}
