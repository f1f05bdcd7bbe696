//! Device sets: every sharded primitive against the one-device result and the sequential
//! reference, exactly (integers, exact sums, histogram counts), with uneven shards and an empty
//! one. The two-device tests skip unless two GPUs are present (TALLY_REQUIRE_GPU=2 makes that a
//! failure); the one-device set runs on any GPU; the multi-process test spawns this binary
//! twice as ranks 0 and 1.

mod common;

use common::draw;
use tally::device::DeviceBuffer;
use tally::multi::{DeviceSet, Shards};
use tally::{
    Backend, Histogram2dSpec, HistogramSpec, Input, Predicate, ReduceOp, ReduceOptions, ScanOp, ScanOptions, Strategy,
    WeightedOptions,
};

/// The set of `devices` GPUs, or None with a line on stderr. TALLY_REQUIRE_GPU=2 (or 1, for a
/// one-device set) makes a missing GPU or NCCL a failure.
fn set_of(devices: usize) -> Option<DeviceSet> {
    let required = common::required_gpus();
    let fail_or_skip = |why: String| {
        if required >= devices {
            panic!("TALLY_REQUIRE_GPU={required} but no set of {devices} devices: {why}");
        }
        eprintln!("skipping test of {devices} devices: {why}");
        None
    };
    let count = match cudarc_device_count() {
        Ok(c) => c,
        Err(e) => return fail_or_skip(e),
    };
    if count < devices {
        return fail_or_skip(format!("{count} GPU(s) present"));
    }
    match DeviceSet::new(&(0..devices).collect::<Vec<_>>()) {
        Ok(s) => Some(s),
        Err(e) => fail_or_skip(e.to_string()),
    }
}

fn cudarc_device_count() -> Result<usize, String> {
    match Backend::cuda() {
        Ok(_) => tally::multi::device_count().map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// Shard sizes that are uneven, with an empty one: (first, second) of `n`.
fn uneven(n: usize) -> Vec<(usize, usize)> {
    vec![(n / 3, n - n / 3), (0, n), (n, 0), (n / 2 + 1, n - n / 2 - 1)].into_iter().filter(|(a, _)| *a <= n).collect()
}

fn check_every_primitive(set: &DeviceSet, n: usize, seed: u64) {
    let one = Backend::cuda().unwrap();
    let bytes: Vec<u8> = draw(n, seed, |r| r.next() as u8);
    let ints: Vec<i32> = draw(n, seed + 1, |r| (r.next() % 2001) as i32 - 1000);
    let floats: Vec<f64> = draw(n, seed + 2, |r| ((r.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 1e6);
    let spec = HistogramSpec::even(256, 0.0, 256.0);
    let pred = Predicate::parse("x > 100").unwrap();
    let whole = |s: &DeviceSet| s.histogram(&bytes, &spec, Strategy::Auto).unwrap();
    let want = tally::histogram::reference::histogram(&bytes, &spec);
    assert!(whole(set).same_counts(&want), "histogram n={n}");
    assert!(one.histogram(&bytes, &spec, Strategy::Auto).unwrap().same_counts(&want));
    let sum = set.reduce(&ints, ReduceOp::Sum, ReduceOptions::default()).unwrap();
    assert_eq!(sum.exact, Some(ints.iter().map(|&x| x as i128).sum::<i128>()), "sum n={n}");
    let exact = set.reduce(&floats, ReduceOp::Sum, ReduceOptions::exact()).unwrap();
    let exact_one = one.reduce(&floats, ReduceOp::Sum, ReduceOptions::exact()).unwrap();
    assert_eq!(exact.value.to_bits(), exact_one.value.to_bits(), "exact sum n={n}");
    if n > 0 {
        for op in [ReduceOp::ArgMin, ReduceOp::ArgMax, ReduceOp::Min, ReduceOp::Max] {
            let got = set.reduce(&ints, op, ReduceOptions::default()).unwrap();
            let want = one.reduce(&ints, op, ReduceOptions::default()).unwrap();
            assert!(got.same_result(&want), "{op:?} n={n}: {got:?} vs {want:?}");
        }
    }
    let scan: Vec<i64> = set.scan(&ints, ScanOp::Sum, ScanOptions::inclusive()).unwrap();
    let mut run = 0i64;
    let want_scan: Vec<i64> = ints
        .iter()
        .map(|&x| {
            run += x as i64;
            run
        })
        .collect();
    assert_eq!(scan, want_scan, "inclusive scan n={n}");
    let excl: Vec<i64> = set.scan(&ints, ScanOp::Sum, ScanOptions::exclusive()).unwrap();
    let want_excl: Vec<i64> = want_scan.iter().zip(&ints).map(|(&s, &x)| s - x as i64).collect();
    assert_eq!(excl, want_excl, "exclusive scan n={n}");
    let mx: Vec<i32> = set.scan(&ints, ScanOp::Max, ScanOptions::inclusive()).unwrap();
    let want_mx: Vec<i32> = one.scan_vec(&ints, ScanOp::Max, ScanOptions::inclusive()).unwrap();
    assert_eq!(mx, want_mx, "max scan n={n}");
    let sel = set.select(&ints, &pred).unwrap();
    let want_sel: Vec<i32> = ints.iter().copied().filter(|&x| x > 100).collect();
    assert_eq!(sel, want_sel, "select n={n}");
}

fn check_uneven_local_shards(set: &DeviceSet, n: usize, seed: u64) {
    let ints: Vec<u32> = draw(n, seed, |r| (r.next() % 1000) as u32);
    // 1,000 bins: each device's counts posted to the host and added there; 5,000 (some values
    // below and above): too many to post, combined by the all-reduce.
    let specs = [HistogramSpec::even(1000, 0.0, 1000.0), HistogramSpec::even(5000, 100.0, 900.0)];
    let wants: Vec<_> = specs.iter().map(|spec| tally::histogram::reference::histogram(&ints, spec)).collect();
    let sum: i128 = ints.iter().map(|&x| x as i128).sum();
    for (a, _) in uneven(n) {
        let dev = set.devices()[1].clone();
        let second = dev.stream().upload(&ints[a..], "second shard").unwrap();
        let shards = || Shards::Local(vec![Input::Host(&ints[..a]), Input::Device(second.view())]);
        let lengths = [a as u64, (n - a) as u64];
        // By the devices' tuning (TALLY_POSTED_COUNTS may hold the post back).
        let limit = set.devices()[0].tuning().posted_counts_max_bytes();
        assert_eq!(set.histogram_combines_on_host(&lengths, &specs[0]), 4000 <= limit, "1,000 counters: posted, added");
        assert!(!set.histogram_combines_on_host(&lengths, &specs[1]), "5,000 counters are all-reduced");
        for (spec, want) in specs.iter().zip(&wants) {
            let h = set.histogram(shards(), spec, Strategy::Auto).unwrap();
            assert!(h.same_counts(want), "histogram of {} bins split at {a} of {n}", spec.bins.count());
        }
        let r = set.reduce(shards(), ReduceOp::Sum, ReduceOptions::default()).unwrap();
        assert_eq!(r.exact, Some(sum), "sum split at {a} of {n}");
        let s: Vec<u64> = set.scan(shards(), ScanOp::Sum, ScanOptions::inclusive()).unwrap();
        let mut run = 0u64;
        assert!(
            s.iter().zip(&ints).all(|(&got, &x)| {
                run += x as u64;
                got == run
            }),
            "scan split at {a} of {n}"
        );
        let pred = Predicate::parse("x < 10").unwrap();
        let sel = set.select(shards(), &pred).unwrap();
        assert_eq!(sel, ints.iter().copied().filter(|&x| x < 10).collect::<Vec<_>>(), "select split at {a} of {n}");
    }
}

#[test]
fn two_devices_equal_one_device() {
    let Some(set) = set_of(2) else { return };
    // 0, 1, tile-sized and odd sizes, and one large enough for every device to run many tiles.
    for (i, n) in [0usize, 1, 2, 4095, 4096, 4097, 1 << 20, (1 << 22) + 3].into_iter().enumerate() {
        check_every_primitive(&set, n, 100 + i as u64);
    }
}

#[test]
fn two_devices_take_uneven_and_empty_shards() {
    let Some(set) = set_of(2) else { return };
    for (i, n) in [1usize, 7, 5000, 1 << 20].into_iter().enumerate() {
        check_uneven_local_shards(&set, n, 200 + i as u64);
    }
}

/// Shards already on their devices (nothing to upload, so the devices' work is queued from one
/// thread): the histogram's combined counters read in place on every device, and the scan
/// written into device outputs poisoned first, against the sequential reference, with uneven
/// and empty shards.
#[test]
fn resident_shards_leave_results_on_the_devices() {
    let Some(set) = set_of(2) else { return };
    let devs = set.devices();
    for (i, n) in [0usize, 5, 4097, (1 << 21) + 11].into_iter().enumerate() {
        let ints: Vec<i32> = draw(n, 400 + i as u64, |r| (r.next() % 5000) as i32 - 2500);
        // Narrower than the values: some fall below and above.
        let spec = HistogramSpec::even(4000, -2000.0, 2000.0);
        let want = tally::histogram::reference::histogram(&ints, &spec);
        for (a, _) in uneven(n) {
            let parts = [&ints[..a], &ints[a..]];
            let resident: Vec<DeviceBuffer<i32>> =
                parts.iter().zip(&devs).map(|(p, d)| d.stream().upload(p, "shard").unwrap()).collect();
            let shards = || Shards::Local(resident.iter().map(|b| Input::Device(b.view())).collect());
            let h = set.histogram_on_devices(shards(), &spec, Strategy::Auto).unwrap();
            h.synchronize().unwrap();
            assert_eq!(h.counter_bytes(), 4);
            for (k, dev) in devs.iter().enumerate() {
                let (counters, outliers) = h.counters(k).expect("combined in place");
                let raw = dev.stream().download(&counters).unwrap();
                let counts: Vec<u64> =
                    raw.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()) as u64).collect();
                assert_eq!(counts, want.counts[0], "device {k}'s counters, split at {a} of {n}");
                let outside = dev.stream().download(&outliers).unwrap();
                assert_eq!(outside, vec![want.below[0], want.above[0], want.nan[0]], "device {k}, split at {a}");
            }
            assert!(h.read().unwrap().same_counts(&want), "read, split at {a} of {n}");

            let mut outs: Vec<DeviceBuffer<i64>> = parts
                .iter()
                .zip(&devs)
                .map(|(p, d)| d.stream().upload(&vec![i64::MIN + 7; p.len()], "poisoned output").unwrap())
                .collect();
            let mut views: Vec<_> = outs.iter_mut().map(|b| b.view_mut()).collect();
            set.scan_into(shards(), &mut views, ScanOp::Sum, ScanOptions::exclusive()).unwrap();
            let got: Vec<i64> =
                outs.iter().zip(&devs).flat_map(|(b, d)| d.stream().download(&b.view()).unwrap()).collect();
            let mut run = 0i64;
            let want_scan: Vec<i64> = ints
                .iter()
                .map(|&x| {
                    let before = run;
                    run += x as i64;
                    before
                })
                .collect();
            assert_eq!(got, want_scan, "exclusive scan into device outputs, split at {a} of {n}");
            // Outputs that do not match the shards are refused.
            let mut short: Vec<DeviceBuffer<i64>> =
                devs.iter().map(|d| d.stream().alloc::<i64>(0, "short output").unwrap()).collect();
            let mut short_views: Vec<_> = short.iter_mut().map(|b| b.view_mut()).collect();
            if n > 0 {
                let err = set.scan_into(shards(), &mut short_views, ScanOp::Sum, ScanOptions::inclusive()).unwrap_err();
                assert!(err.to_string().contains("output holds 0"), "{err}");
            }

            if n > 0 {
                let got = set.reduce(shards(), ReduceOp::ArgMax, ReduceOptions::default()).unwrap();
                let want = Backend::Cpu.reduce(&ints, ReduceOp::ArgMax, ReduceOptions::default()).unwrap();
                assert!(got.same_result(&want), "argmax split at {a} of {n}: {got:?} vs {want:?}");
            }
        }
    }
}

/// Host shards above the streaming threshold (set low here) stream through each device's
/// pinned pipeline, in small chunks, and the counts add on the host: the reference's counts,
/// for an even split and for a host shard beside a device one.
#[test]
fn streamed_host_shards_count_as_one_device() {
    if set_of(2).is_none() {
        return;
    }
    let mut options = tally::DeviceOptions::from_env();
    options.tuning.stream_threshold = Some(4096);
    options.tuning.stream_chunk_bytes = Some(64 * 1024);
    let set = DeviceSet::with_options(&[0, 1], &options).unwrap();
    for (i, n) in [1usize, 4097, 1_000_003].into_iter().enumerate() {
        let ints: Vec<i32> = draw(n, 500 + i as u64, |r| (r.next() % 3000) as i32 - 1000);
        let spec = HistogramSpec::even(1000, 0.0, 1000.0);
        let want = tally::histogram::reference::histogram(&ints, &spec);
        let h = set.histogram(&ints, &spec, Strategy::Auto).unwrap();
        assert!(h.same_counts(&want), "even split of {n}");
        let a = n / 3;
        let second = set.devices()[1].stream().upload(&ints[a..], "second shard").unwrap();
        let shards = Shards::Local(vec![Input::Host(&ints[..a]), Input::Device(second.view())]);
        let on = set.histogram_on_devices(shards, &spec, Strategy::Auto).unwrap();
        assert!(on.read().unwrap().same_counts(&want), "host and device shards of {n}");
    }
}

/// With the counters' post held back (a tuning of 0 bytes, `TALLY_POSTED_COUNTS=0`), a set
/// chooses the all-reduce even for 256 counters, and counts the same.
#[test]
fn a_set_that_posts_no_counters_all_reduces_them() {
    if set_of(2).is_none() {
        return;
    }
    let env = tally::device::DeviceOptions::from_env();
    let tuning = tally::histogram::Tuning { posted_counts_max_bytes: Some(0), ..env.tuning.clone() };
    let set = DeviceSet::with_options(&[0, 1], &tally::device::DeviceOptions { tuning, ..env }).unwrap();
    let n = (1 << 20) + 3;
    let ints: Vec<i32> = draw(n, 900, |r| (r.next() % 300) as i32 - 20);
    let spec = HistogramSpec::even(256, 0.0, 256.0);
    let half = (n / 2) as u64;
    assert!(!set.histogram_combines_on_host(&[half, n as u64 - half], &spec), "the tuning holds the post back");
    let want = tally::histogram::reference::histogram(&ints, &spec);
    assert!(set.histogram(&ints, &spec, Strategy::Auto).unwrap().same_counts(&want));
}

/// A set's plan, kept: run on the shards it was made from, on other data of the same lengths
/// (stale counts would show), on the first again, and refused on other lengths; for 256 bins
/// (the posted counts added on the host, or all-reduced where the tuning holds the post
/// back) and 4,096 (all-reduced), shards resident on the devices and on the host, uneven and
/// (two devices) one of them empty.
fn check_kept_set_plans(set: &DeviceSet, posts: bool) {
    let n = (1 << 20) + 5;
    let inputs: Vec<Vec<i32>> =
        vec![draw(n, 1000, |r| (r.next() % 5000) as i32 - 300), draw(n, 1001, |r| (r.next() % 300) as i32)];
    let devs = set.devices();
    let k = devs.len();
    // Each device's part of `data`: up to `cut` on the first, the rest on the second.
    fn parts(data: &[i32], cut: usize, k: usize) -> Vec<&[i32]> {
        if k == 1 {
            vec![data]
        } else {
            vec![&data[..cut], &data[cut..]]
        }
    }
    // The same parts as host shards.
    fn host(data: &[i32], cut: usize, k: usize) -> Vec<Input<'_, i32>> {
        parts(data, cut, k).into_iter().map(Input::Host).collect()
    }
    let cuts = if k == 1 { vec![n] } else { vec![n / 3, 0] };
    for cut in cuts {
        for bins in [256u32, 4096] {
            let spec = HistogramSpec::even(bins, 0.0, bins as f64);
            let mut plan = set.histogram_plan(Shards::Local(host(&inputs[0], cut, k)), &spec, Strategy::Auto).unwrap();
            assert_eq!(plan.combines_posted_counts(), posts && bins == 256, "{bins} bins");
            for (round, data) in [&inputs[0], &inputs[1], &inputs[0]].into_iter().enumerate() {
                let want = tally::histogram::reference::histogram(data, &spec);
                let what = format!("{bins} bins, cut {cut}, round {round}");
                let got = plan.run(Shards::Local(host(data, cut, k))).unwrap();
                assert!(got.same_counts(&want), "{what}, host shards");
                // The same shards resident, each on its device.
                let resident: Vec<_> = parts(data, cut, k)
                    .into_iter()
                    .zip(&devs)
                    .map(|(part, dev)| dev.stream().upload(part, "shard").unwrap())
                    .collect();
                let shards = Shards::Local(resident.iter().map(|b| Input::Device(b.view())).collect());
                assert!(plan.run(shards).unwrap().same_counts(&want), "{what}, resident shards");
                // An even split: the plan's one shard, or (two devices) halves it was not made for.
                match plan.run(Shards::Split(data)) {
                    Ok(got) if k == 1 => assert!(got.same_counts(&want), "{what}, one shard"),
                    Ok(_) => panic!("{what}: shards of other lengths were counted"),
                    Err(e) if k > 1 => assert!(e.to_string().contains("this plan counts shards of"), "{what}: {e}"),
                    Err(e) => panic!("{what}, one shard: {e}"),
                }
            }
        }
    }
}

/// A set's reduction plan, kept: the exact f64 sum bit for bit and argmin (ties across the
/// shards' boundary go to the first index) equal one GPU's, run after run on new data, with an
/// empty shard on two devices; other lengths refused.
fn check_kept_reduce_plans(set: &DeviceSet) {
    let one = Backend::cuda().unwrap();
    let n = (1 << 20) + 7;
    let k = set.devices().len();
    let cuts: Vec<usize> = if k == 1 { vec![n] } else { vec![n / 3, 0] };
    for cut in cuts {
        fn cut_at(data: &[f64], cut: usize, k: usize) -> Shards<'_, f64> {
            Shards::Local(if k == 1 {
                vec![Input::Host(data)]
            } else {
                vec![Input::Host(&data[..cut]), Input::Host(&data[cut..])]
            })
        }
        let inputs: Vec<Vec<f64>> = (0..3u64)
            .map(|seed| draw(n, 1100 + seed, |r| ((r.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 1e6))
            .collect();
        let mut sum = set.reduce_plan(cut_at(&inputs[0], cut, k), ReduceOp::Sum, ReduceOptions::exact()).unwrap();
        let mut argmin =
            set.reduce_plan(cut_at(&inputs[0], cut, k), ReduceOp::ArgMin, ReduceOptions::default()).unwrap();
        for (round, data) in inputs.iter().chain([&inputs[0]]).enumerate() {
            // The least value twice, either side of the cut: the first index wins.
            let mut data = data.clone();
            let at = cut.saturating_sub(2).min(n - 3);
            data[at] = -1e9;
            data[at + 2] = -1e9;
            let want = one.reduce(&data, ReduceOp::Sum, ReduceOptions::exact()).unwrap();
            let got = sum.run(cut_at(&data, cut, k)).unwrap();
            assert_eq!(got.value.to_bits(), want.value.to_bits(), "exact sum, cut {cut}, round {round}");
            let want = one.reduce(&data, ReduceOp::ArgMin, ReduceOptions::default()).unwrap();
            let got = argmin.run(cut_at(&data, cut, k)).unwrap();
            assert!(got.same_result(&want), "argmin, cut {cut}, round {round}: {got:?} vs {want:?}");
            assert_eq!(got.index, Some(at as u64), "argmin, cut {cut}, round {round}");
        }
        if k > 1 {
            let wrong = Shards::Local(vec![Input::Host(&inputs[0][..cut + 1]), Input::Host(&inputs[0][cut + 1..])]);
            let err = sum.run(wrong).unwrap_err();
            assert!(err.to_string().contains("this plan reduces shards of"), "{err}");
        }
    }
}

#[test]
fn kept_set_plans_count_again() {
    for devices in [1, 2] {
        let Some(set) = set_of(devices) else { continue };
        check_kept_set_plans(&set, true);
        check_kept_reduce_plans(&set);
        if devices == 2 {
            let env = tally::device::DeviceOptions::from_env();
            let tuning = tally::histogram::Tuning { posted_counts_max_bytes: Some(0), ..env.tuning.clone() };
            let held = DeviceSet::with_options(&[0, 1], &tally::device::DeviceOptions { tuning, ..env }).unwrap();
            check_kept_set_plans(&held, false);
        }
    }
}

/// A set's plans detached (as a caller keeps them beside their set) run again once attached to
/// the set that made them, on new data; another set of the same device refuses them.
#[test]
fn detached_set_plans_attach_to_their_set_alone() {
    let Some(set) = set_of(1) else { return };
    let other = DeviceSet::new(&[0]).unwrap();
    let spec = HistogramSpec::even(100, -1000.0, 1000.0);
    let first: Vec<i32> = draw(100_003, 7, |r| (r.next() % 2101) as i32 - 1050);
    let hist = set.histogram_plan(&first[..], &spec, Strategy::Auto).unwrap().detach();
    let sum = set.reduce_plan(&first[..], ReduceOp::Sum, ReduceOptions::default()).unwrap().detach();
    let (mut hist, mut sum) = (hist.attach(&set).unwrap(), sum.attach(&set).unwrap());
    for seed in [8, 9] {
        let data: Vec<i32> = draw(100_003, seed, |r| (r.next() % 2101) as i32 - 1050);
        let want = tally::histogram::reference::histogram(&data, &spec);
        assert!(hist.run(&data[..]).unwrap().same_counts(&want), "seed {seed}");
        let total: i64 = data.iter().map(|&x| x as i64).sum();
        assert_eq!(sum.run(&data[..]).unwrap().value, total as f64, "seed {seed}");
        (hist, sum) = (hist.detach().attach(&set).unwrap(), sum.detach().attach(&set).unwrap());
    }
    let err = hist.detach().attach(&other).err().expect("another set refuses the plan");
    assert!(err.to_string().contains("another device set"), "{err}");
    let err = sum.detach().attach(&other).err().expect("another set refuses the plan");
    assert!(err.to_string().contains("another device set"), "{err}");
}

#[test]
fn a_set_of_one_device_equals_the_device() {
    let Some(set) = set_of(1) else { return };
    for (i, n) in [0usize, 1, 4097, 1 << 20].into_iter().enumerate() {
        check_every_primitive(&set, n, 300 + i as u64);
    }
}

/// Exact sums keep 128-bit digit sums as pairs of u64 words, which an all-reduce would add
/// without their carry (-1 and +1 on two devices would sum to -2^64): a set refuses them, 1-D
/// and 2-D, before it runs anything, and still takes fixed point on the same input.
#[test]
fn device_sets_refuse_exact_weighted_sums() {
    for devices in [1, 2] {
        let Some(set) = set_of(devices) else { continue };
        let xs = vec![0.5f64, 1.5, 0.5, 1.5];
        let ws = vec![-1.0f64, 1.0, 1.0, -1.0];
        let spec = HistogramSpec::even(2, 0.0, 2.0);
        let exact = WeightedOptions::exact();
        let err = set.histogram_weighted(&xs, &ws, &spec, exact).unwrap_err();
        assert!(matches!(err, tally::Error::Unsupported { .. }), "{devices} devices: {err}");
        assert!(err.to_string().contains("one device"), "{err}");
        let spec2 = Histogram2dSpec::even(2, (0.0, 2.0), 2, (0.0, 2.0));
        let err = set.histogram_2d(&xs, &xs, Some(Shards::from(&ws)), &spec2, exact).unwrap_err();
        assert!(matches!(err, tally::Error::Unsupported { .. }), "{devices} devices, 2-D: {err}");
        let fixed = set.histogram_weighted(&xs, &ws, &spec, WeightedOptions::default()).unwrap();
        assert_eq!(fixed.sums, vec![vec![0.0, 0.0]], "{devices} devices, fixed point");
    }
}

/// Run as a rank (TALLY_MULTI_RANK_CHILD set): the sharded results of one fixed input, printed
/// for the parent to compare, and calls that fail on rank 1 alone (each rank checks that both
/// stop, and that the set works after). Without it: spawns this test twice as ranks 0 and 1.
#[test]
fn two_processes_agree_with_one() {
    const CHILD: &str = "TALLY_MULTI_RANK_CHILD";
    let ints: Vec<i32> = draw(300_001, 7, |r| (r.next() % 2001) as i32 - 1000);
    let spec = HistogramSpec::even(64, -1000.0, 1001.0);
    let summary = |set: &DeviceSet| {
        let h = set.histogram(&ints, &spec, Strategy::Auto).unwrap();
        let s = set.reduce(&ints, ReduceOp::Sum, ReduceOptions::default()).unwrap();
        let sel = set.select(&ints, &Predicate::parse("x > 990").unwrap()).unwrap();
        format!("counts {:?} sum {:?} selected {:?}", h.counts, s.exact, sel)
    };
    // What kept plans give: the counts and the sum of the whole input.
    let kept_summary =
        |h: &tally::Histogram, s: &tally::Reduction| format!("kept counts {:?} sum {:?}", h.counts, s.exact);
    if std::env::var(CHILD).is_ok() {
        let set = DeviceSet::from_env().unwrap();
        let scan: Vec<i64> = set.scan(&ints, ScanOp::Sum, ScanOptions::inclusive()).unwrap();
        let rank = set.ranks()[0];
        let start = tally::multi::shard::split_points(ints.len(), 2)[rank];
        let mut run: i64 = ints[..start].iter().map(|&x| x as i64).sum();
        let ok = scan.iter().zip(&ints[start..]).all(|(&got, &x)| {
            run += x as i64;
            got == run
        });
        // Kept plans across processes: made from this rank's shard, run twice, then given a
        // shard one shorter on rank 1 alone: both ranks refuse (neither waits in a collective).
        let p = tally::multi::shard::split_points(ints.len(), 2);
        let mine = &ints[p[rank]..p[rank + 1]];
        fn local(s: &[i32]) -> Shards<'_, i32> {
            Shards::Local(vec![Input::Host(s)])
        }
        let mut hist = set.histogram_plan(local(mine), &spec, Strategy::Auto).unwrap();
        let mut sum = set.reduce_plan(local(mine), ReduceOp::Sum, ReduceOptions::default()).unwrap();
        let mut kept = String::new();
        for _ in 0..2 {
            kept = kept_summary(&hist.run(local(mine)).unwrap(), &sum.run(local(mine)).unwrap());
        }
        let shorter = if rank == 1 { &mine[..mine.len() - 1] } else { mine };
        let refused = hist.run(local(shorter)).is_err_and(|e| e.to_string().contains("this plan counts shards of"))
            && sum.run(local(shorter)).is_err_and(|e| e.to_string().contains("this plan reduces shards of"));
        // A rank that fails in a call stops every rank of it (its own error there, RankFailed
        // naming it elsewhere) instead of leaving them waiting in a collective, and the set
        // works on. First rank 1 gives no shard for its device (refused before the lengths are
        // gathered), then its workspace cannot hold its launches' scratch (they fail after).
        let outcome = |r: Result<(), tally::Error>| match r {
            Ok(()) => "ok".to_string(),
            Err(tally::Error::RankFailed { rank }) => format!("rank{rank}"),
            Err(tally::Error::InvalidArgument(_)) => "invalid".to_string(),
            Err(e) => format!("{e}"),
        };
        let given = || if rank == 1 { Shards::Local(Vec::new()) } else { local(mine) };
        let weights: Vec<f32> = mine.iter().map(|&x| x as f32 * 0.5).collect();
        let given_weights =
            || if rank == 1 { Shards::Local(Vec::new()) } else { Shards::Local(vec![Input::Host(&weights[..])]) };
        let select = Predicate::parse("x > 990").unwrap();
        let wide = ScanOptions::inclusive();
        let spec2 = Histogram2dSpec::even(8, (-1000.0, 1001.0), 8, (-1000.0, 1001.0));
        let counted = WeightedOptions::default();
        let mut outcomes = vec![
            outcome(set.histogram(given(), &spec, Strategy::Auto).map(drop)),
            outcome(set.reduce(given(), ReduceOp::Sum, ReduceOptions::default()).map(drop)),
            outcome(set.scan::<i32, i64>(given(), ScanOp::Sum, wide).map(drop)),
            outcome(set.select(given(), &select).map(drop)),
            outcome(set.histogram_weighted(given(), given_weights(), &spec, WeightedOptions::default()).map(drop)),
            outcome(set.histogram_2d(given(), given(), None::<Shards<'_, f32>>, &spec2, counted).map(drop)),
            outcome(set.histogram_plan(given(), &spec, Strategy::Auto).map(drop)),
            outcome(set.reduce_plan(given(), ReduceOp::Sum, ReduceOptions::default()).map(drop)),
            outcome(hist.run(given()).map(drop)),
            outcome(sum.run(given()).map(drop)),
        ];
        let dev = set.devices()[0].clone();
        let limit = dev.stream().workspace_limit();
        if rank == 1 {
            dev.stream().set_workspace_limit(0);
        }
        outcomes.extend([
            outcome(set.reduce(local(mine), ReduceOp::Sum, ReduceOptions::default()).map(drop)),
            outcome(set.select(local(mine), &select).map(drop)),
            outcome(sum.run(local(mine)).map(drop)),
            // Rank 1, the last, scans from its carry after the gather: only it fails.
            outcome(set.scan::<i32, i64>(local(mine), ScanOp::Sum, wide).map(drop)),
        ]);
        dev.stream().set_workspace_limit(limit);
        let want_outcomes: Vec<&str> =
            if rank == 1 { vec!["invalid"; 14] } else { [vec!["rank1"; 13], vec!["ok"]].concat() };
        let failures_agree = outcomes == want_outcomes;
        if !failures_agree {
            println!("OUTCOMES {outcomes:?}, expected {want_outcomes:?}");
        }
        println!("RESULT {} scan-ok {ok} {kept} refused {refused} failures-agree {failures_agree}", summary(&set));
        return;
    }
    let Some(set) = set_of(2) else { return };
    let whole = (
        set.histogram(&ints, &spec, Strategy::Auto).unwrap(),
        set.reduce(&ints, ReduceOp::Sum, ReduceOptions::default()).unwrap(),
    );
    let want = format!(
        "RESULT {} scan-ok true {} refused true failures-agree true",
        summary(&set),
        kept_summary(&whole.0, &whole.1)
    );
    drop(set);
    let dir = std::env::temp_dir().join(format!("tally-multi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let id_file = dir.join("nccl-id");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|rank| {
            std::process::Command::new(&exe)
                .args(["two_processes_agree_with_one", "--exact", "--nocapture", "--test-threads=1"])
                .env(CHILD, "1")
                .env("RANK", rank.to_string())
                .env("WORLD_SIZE", "2")
                .env("LOCAL_RANK", rank.to_string())
                .env("TALLY_NCCL_ID_FILE", &id_file)
                .env("TALLY_NCCL_TIMEOUT", "60")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // Both ranks run at once: each waits for the other in NCCL's set-up. A rank left waiting
    // in a collective would never exit: after two minutes both are killed, and the test fails.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let mut children = children;
    while children.iter_mut().any(|c| c.try_wait().unwrap().is_none()) {
        if std::time::Instant::now() > deadline {
            for c in &mut children {
                let _ = c.kill();
                let _ = c.wait();
            }
            panic!("the ranks did not finish within two minutes: one waits in a collective");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let outputs: Vec<_> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    for (rank, out) in outputs.iter().enumerate() {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "rank {rank} failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        // libtest may print "test NAME ... " on the same line before the test's own output.
        let line = stdout
            .lines()
            .find_map(|l| l.find("RESULT").map(|at| &l[at..]))
            .unwrap_or_else(|| panic!("rank {rank}: {stdout}"));
        assert_eq!(line, want, "rank {rank}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
