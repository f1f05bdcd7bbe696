//! The CUDA backend against the sequential reference, every strategy, every sample type.
//! Without a GPU each test prints a line and returns; with TALLY_REQUIRE_GPU=1 that is a failure.
//! Counters are poisoned before every launch, so a kernel that leaves any unwritten shows it.

use std::sync::Arc;
use tally::data::{samples, splitmix64, Distribution};
use tally::device::CudaDevice;
use tally::histogram::reference;
use tally::histogram::strategy::partition_preferred;
use tally::histogram::{HistogramPlan, SwitchOver, Tuning};
use tally::{Backend, Channels, HistogramSpec, Sample, Strategy};

mod common;
use common::{check_plan, gpu};

const STRATEGIES: [Strategy; 10] = Strategy::GPU;

/// Runs `spec` over `host` on the device with `strategy`, poisoning the counters first, and
/// checks every count against the reference. `offset` shifts the start to test misaligned input.
fn check<T: Sample>(
    dev: &Arc<CudaDevice>,
    host: &[T],
    spec: &HistogramSpec,
    strategy: Strategy,
    offset: usize,
) -> Strategy {
    let (got, _) = check_plan(dev, host, spec, strategy, offset, &Default::default());
    if strategy != Strategy::Auto {
        // A strategy runs as asked unless its private copy cannot fit.
        let bytes = spec.bins.count() * spec.channels.selected.len() * 4;
        let clusters_ok = !strategy.needs_clusters() || dev.info().compute_capability.0 >= 9;
        if bytes * 8 < dev.info().smem_per_block_optin && clusters_ok {
            assert_eq!(got.strategy, strategy);
        }
    }
    got.strategy
}

const SIZES: [usize; 8] = [0, 1, 31, 32, 33, 1023, 1025, (1 << 20) + 7];

/// Values that land everywhere: random in a span wider than the range, plus the edges.
fn mixed<T: Sample>(n: usize, seed: u64, gen: impl Fn(u64) -> T, specials: &[T]) -> Vec<T> {
    (0..n)
        .map(|i| {
            let r = splitmix64(seed ^ i as u64);
            if !specials.is_empty() && r.is_multiple_of(7) {
                specials[(r >> 8) as usize % specials.len()]
            } else {
                gen(r >> 3)
            }
        })
        .collect()
}

/// The sizes `run_all` checks: TALLY_TEST_SIZES (a comma-separated list, for racecheck, whose cost
/// is per launch) or SIZES, of which TALLY_SMALL=1 (under compute-sanitizer) keeps the ones that
/// exercise tails and lanes.
fn run_all_sizes() -> Vec<usize> {
    if let Ok(list) = std::env::var("TALLY_TEST_SIZES") {
        return list
            .split(',')
            .map(|n| n.trim().parse().expect("TALLY_TEST_SIZES: sizes separated by commas"))
            .collect();
    }
    SIZES.into_iter().filter(|&n| !small() || n <= 1025).collect()
}

fn run_all<T: Sample>(dev: &Arc<CudaDevice>, specs: &[HistogramSpec], make: impl Fn(usize, u64) -> Vec<T>) {
    let sizes = run_all_sizes();
    for (k, spec) in specs.iter().enumerate() {
        for &n in &sizes {
            let host = make(n, 17 + n as u64 * 31 + k as u64);
            for s in STRATEGIES {
                check(dev, &host, spec, s, 0);
            }
            if n > 1 {
                check(dev, &host, spec, Strategy::Auto, 1);
                check(dev, &host, spec, Strategy::BlockShared, 1);
            }
        }
    }
}

fn int_specs() -> Vec<HistogramSpec> {
    vec![
        HistogramSpec::even(256, 0.0, 256.0),
        HistogramSpec::even(3, 0.0, 9.0),
        HistogramSpec::even(7, -50.0, 1000.0),
        HistogramSpec::even(100, 0.5, 200.25),
        HistogramSpec::even(4096, -1000.0, 3096.0),
        HistogramSpec::even(6000, -100.0, 5900.0),
        HistogramSpec::edges(vec![-5.0, 0.0, 1.0, 2.5, 10.0, 100.0, 1000.0]),
        HistogramSpec::even(16, 0.0, 64.0).with_channels(Channels { interleave: 4, selected: vec![2, 0, 3] }),
        HistogramSpec::even(10, 0.0, 100.0).with_channels(Channels { interleave: 3, selected: vec![1] }),
    ]
}

fn float_specs() -> Vec<HistogramSpec> {
    vec![
        HistogramSpec::even(256, 0.0, 256.0),
        HistogramSpec::even(10, 0.0, 1.0),
        HistogramSpec::even(1000, -3.25, 7.5),
        HistogramSpec::even(20000, -1.0, 1.0),
        HistogramSpec::even(77, 0.1, 0.7),
        HistogramSpec::edges(vec![-1e30, -1.0, -0.0, 0.1, 0.2, 0.3, 1.0, 1e30]),
        HistogramSpec::even(33, -1.0, 1.0).with_channels(Channels { interleave: 4, selected: vec![3, 1] }),
    ]
}

macro_rules! int_case {
    ($name:ident, $t:ty, $lo:expr, $span:expr) => {
        #[test]
        fn $name() {
            let Some(dev) = gpu() else { return };
            let specials: Vec<$t> = vec![0, 1, 2, 3, 8, 9, 10, 63, 64, 100, 199, 200, 255, <$t>::MIN, <$t>::MAX];
            run_all::<$t>(&dev, &int_specs(), |n, seed| {
                mixed(n, seed, |r| ($lo as i128 + (r as i128 % $span as i128)) as $t, &specials)
            });
        }
    };
}
int_case!(cuda_matches_reference_u8, u8, 0, 256);
int_case!(cuda_matches_reference_u16, u16, 0, 5000);
int_case!(cuda_matches_reference_i32, i32, -2000, 7000);
int_case!(cuda_matches_reference_u32, u32, 0, 7000);
int_case!(cuda_matches_reference_i64, i64, -2000, 7000);

macro_rules! float_case {
    ($name:ident, $t:ty) => {
        #[test]
        fn $name() {
            let Some(dev) = gpu() else { return };
            let specials: Vec<$t> = vec![
                0.0,
                -0.0,
                1.0,
                -1.0,
                0.1,
                0.3,
                7.5,
                -3.25,
                256.0,
                255.99999,
                <$t>::NAN,
                <$t>::INFINITY,
                <$t>::NEG_INFINITY,
                <$t>::MAX,
                <$t>::MIN,
                <$t>::MIN_POSITIVE,
                1.0 - <$t>::EPSILON,
            ];
            run_all::<$t>(&dev, &float_specs(), |n, seed| {
                mixed(n, seed, |r| ((r % 1_000_000) as f64 / 1_000_000.0 * 300.0 - 20.0) as $t, &specials)
            });
        }
    };
}
float_case!(cuda_matches_reference_f32, f32);
float_case!(cuda_matches_reference_f64, f64);

/// f32 samples at and a few ulps around every bin edge, all in range, among in-range random
/// ones: whole vectors that the kernels' f32 estimate bins without the rule (and a wrong "sure"
/// would miscount an edge sample), for awkward ranges and magnitudes, on the strategies that
/// take the estimate and on `auto`; and the same values as f64 samples.
#[test]
fn cuda_f32_estimate_at_every_edge() {
    let Some(dev) = gpu() else { return };
    let specs = [
        HistogramSpec::even(256, 0.0, 256.0),
        HistogramSpec::even(77, 0.1, 0.7),
        HistogramSpec::even(1000, -3.25, 7.5),
        HistogramSpec::even(20000, -1.0, 1.0),
        HistogramSpec::even(3, -1e-30, 2e-30),
        HistogramSpec::even(999, 1e6, 1e6 + 1000.0 / 3.0),
        HistogramSpec::even(4096, -1e30, 3e30),
        HistogramSpec::even(100_000, 0.0, 1.0),
        // Exact estimates (lower 0, power-of-two bin widths): every in-range sample is sure.
        HistogramSpec::even(4096, 0.0, 4096.0),
        HistogramSpec::even(1024, 0.0, 0.25),
        HistogramSpec::even(3, 0.0, 3.0),
    ];
    for (k, spec) in specs.iter().enumerate() {
        let tally::Bins::Even { bins, lower, upper } = spec.bins else { unreachable!() };
        let mut xs: Vec<f32> = Vec::new();
        for e in 0..=bins {
            let edge = lower + (upper - lower) * e as f64 / bins as f64;
            // The edge's own f32 (stepping over zero passes -0.0, not 0.0).
            if (edge as f32 as f64) >= lower && ((edge as f32) as f64) < upper {
                xs.push(edge as f32);
            }
            let mut v = edge as f32;
            for _ in 0..4 {
                v = v.next_down();
            }
            for _ in 0..9 {
                if (v as f64) >= lower && (v as f64) < upper {
                    xs.push(v);
                }
                v = v.next_up();
            }
        }
        let edge_count = xs.len();
        for i in 0..edge_count.max(1 << 16) {
            let u = (splitmix64(k as u64 * 1_000_003 + i as u64) >> 11) as f64 / (1u64 << 53) as f64;
            let x = (lower + (upper - lower) * u) as f32;
            if (x as f64) >= lower && (x as f64) < upper {
                xs.push(x);
            }
        }
        for i in (1..xs.len()).rev() {
            xs.swap(i, (splitmix64(i as u64 ^ 0x5eed) % (i as u64 + 1)) as usize);
        }
        let wide: Vec<f64> = xs.iter().map(|&x| x as f64).collect();
        for s in [Strategy::BlockShared, Strategy::WarpPrivate, Strategy::GlobalAtomic, Strategy::Auto] {
            check(&dev, &xs, spec, s, 0);
            // The same values as f64 samples: their own estimate, and the exact rule's shortcut
            // where the quotient is exact (edges of integer or power-of-two ranges).
            check(&dev, &wide, spec, s, 0);
        }
    }
}

/// Skew: every strategy on every distribution, and `auto` aggregates where one bin dominates.
#[test]
fn cuda_skewed_distributions_all_strategies() {
    let Some(dev) = gpu() else { return };
    for dist in Distribution::ALL {
        for bins in [256u32, 4096] {
            let host: Vec<i32> = samples(dist, bins, if small() { (1 << 16) + 3 } else { (1 << 22) + 3 }, 5);
            let spec = HistogramSpec::even(bins, 0.0, bins as f64);
            for s in STRATEGIES {
                check(&dev, &host, &spec, s, 0);
            }
            if bins == 256 {
                // 8-bit samples too, with their runs of equal words (skewed data has many).
                let bytes: Vec<u8> = host.iter().map(|&x| x as u8).collect();
                for s in STRATEGIES {
                    check(&dev, &bytes, &spec, s, 0);
                }
            }
        }
    }
    let host: Vec<i32> = samples(Distribution::Hot100, 256, 1 << 20, 5);
    let h = Backend::Cuda(dev.clone()).histogram(&host, &HistogramSpec::even(256, 0.0, 256.0), Strategy::Auto).unwrap();
    // Hopper's shared atomics combine same-address updates (measured): auto keeps block-shared.
    let want = if dev.info().compute_capability.0 >= 9 { Strategy::BlockShared } else { Strategy::WarpAggregated };
    assert_eq!(h.strategy, want);
    assert_eq!(h.counts[0][0], 1 << 20);
}

/// More bins than shared memory holds: every strategy must still count right (global atomics).
#[test]
fn cuda_bins_beyond_shared_memory_fall_back() {
    let Some(dev) = gpu() else { return };
    let bins = (dev.info().smem_per_block_optin / 4 + 1000) as u32;
    let host: Vec<i32> = samples(Distribution::Uniform, bins, (1 << 20) + 1, 9);
    let spec = HistogramSpec::even(bins, 0.0, bins as f64);
    for s in STRATEGIES {
        check(&dev, &host, &spec, s, 0);
    }
    let h = Backend::Cuda(dev).histogram(&host, &spec, Strategy::BlockShared).unwrap();
    assert_eq!(h.strategy, Strategy::GlobalAtomic);
}

/// Just under and over the shared-memory limit of a block-private copy.
#[test]
fn cuda_bins_at_the_shared_memory_limit() {
    let Some(dev) = gpu() else { return };
    // A block-private copy: the bins, 3 outlier counters and a trash counter, beside 192 bytes.
    let limit = (dev.info().smem_per_block_optin - 16 * 3 * 4) / 4 - 4;
    for bins in [limit as u32 - 1, limit as u32, limit as u32 + 1] {
        let host: Vec<u32> = samples(Distribution::Zipf, bins, 300_001, 3);
        let spec = HistogramSpec::even(bins, 0.0, bins as f64);
        check(&dev, &host, &spec, Strategy::BlockShared, 0);
        check(&dev, &host, &spec, Strategy::Auto, 0);
    }
}

/// Resident buffers: upload once, count many times, same answer as from a host slice.
#[test]
fn cuda_resident_buffer_reused() {
    let Some(dev) = gpu() else { return };
    let backend = Backend::Cuda(dev);
    let host: Vec<f32> = samples(Distribution::Zipf, 512, 100_000, 1);
    let buf = backend.upload(&host).unwrap();
    let a = backend.histogram(&buf, &HistogramSpec::even(512, 0.0, 512.0), Strategy::Auto).unwrap();
    let b = backend.histogram(&buf, &HistogramSpec::even(64, 0.0, 512.0), Strategy::WarpPrivate).unwrap();
    let c = backend.histogram(host.as_slice(), &HistogramSpec::even(512, 0.0, 512.0), Strategy::GlobalAtomic).unwrap();
    assert!(a.same_counts(&c));
    assert!(b.same_counts(&reference::histogram(&host, &HistogramSpec::even(64, 0.0, 512.0))));
    // A CPU backend refuses a device buffer rather than reading garbage.
    assert!(Backend::Cpu.histogram(&buf, &HistogramSpec::even(4, 0.0, 4.0), Strategy::Auto).is_err());
}

/// 2^32 + 17 samples: 64-bit counters and 64-bit indexing past 2^31. Skipped with
/// TALLY_SKIP_HUGE=1 (under compute-sanitizer, where it would take hours).
#[test]
fn cuda_more_than_2_pow_32_samples() {
    let Some(dev) = gpu() else { return };
    if std::env::var("TALLY_SKIP_HUGE").as_deref() == Ok("1") {
        eprintln!("skipping the 2^32-sample test (TALLY_SKIP_HUGE=1)");
        return;
    }
    let n = (1usize << 32) + 17;
    let host: Vec<u8> = samples(Distribution::Hot90, 256, n, 2);
    let spec = HistogramSpec::even(200, 0.0, 200.0);
    let want = tally::histogram::cpu::histogram(&host, &spec).unwrap();
    // The first 3 * 2^30 samples count in 32 bits, bin 0 past 2^31: the widening copy into
    // 64-bit words must keep the top bit as a value, not a sign.
    let part = 3usize << 30;
    let want_part = tally::histogram::cpu::histogram(&host[..part], &spec).unwrap();
    let stream = dev.stream();
    let buf = stream.upload(&host, "test samples").unwrap();
    drop(host);
    let mut wide = stream.upload(&vec![u64::MAX; 200], "poisoned wide counts").unwrap();
    for (len, want, counter_bytes) in [(part, &want_part, 4), (n, &want, 8)] {
        let all = buf.view();
        let view = all.slice(..len).unwrap();
        let mut plan = tally::HistogramPlan::new(&dev, &view, &spec, Strategy::Auto, dev.tuning()).unwrap();
        assert_eq!(plan.counter_bytes(), counter_bytes, "{len} samples");
        plan.launch(stream, &view).unwrap();
        plan.copy_counts_u64(stream, &mut wide.view_mut()).unwrap();
        assert_eq!(stream.download(&wide.view()).unwrap(), want.counts[0], "{len} samples, widened counts");
        stream.copy_to_device(&vec![u64::MAX; 200], &mut wide.view_mut()).unwrap();
        // The counters, 32- or 64-bit, posted with the outliers and read from the post.
        assert!(plan.posts_counts(), "{len} samples: 200 counters fit a post");
        plan.launch(stream, &view).unwrap();
        assert!(plan.result_posted(), "{len} samples: the launch posts");
        assert!(plan.read(stream).unwrap().same_counts(want), "{len} samples, posted counts");
    }
    assert!(want_part.counts[0][0] > 1 << 31, "the 32-bit counter's top bit is in use");
    let backend = Backend::Cuda(dev);
    // The partition: three slices of at most 2^31 samples, and 64-bit counters.
    for s in [Strategy::Auto, Strategy::BlockShared, Strategy::WarpAggregated, Strategy::Partition] {
        let got = backend.histogram(&buf, &spec, s).unwrap();
        assert!(got.same_counts(&want), "strategy {s}");
        assert!(got.counts[0][0] > u32::MAX as u64 / 2);
        assert_eq!(got.total(), n as u64);
    }
}

#[test]
fn cuda_rejects_bad_specs_without_launching() {
    let Some(dev) = gpu() else { return };
    let backend = Backend::Cuda(dev);
    let x = vec![1i32, 2, 3];
    assert!(backend.histogram(x.as_slice(), &HistogramSpec::even(0, 0.0, 1.0), Strategy::Auto).is_err());
    assert!(backend.histogram(x.as_slice(), &HistogramSpec::even(4, 1.0, 1.0), Strategy::Auto).is_err());
    assert!(backend.histogram(x.as_slice(), &HistogramSpec::edges(vec![0.0, 2.0, 1.0]), Strategy::Auto).is_err());
    assert!(backend.histogram(x.as_slice(), &HistogramSpec::even(4, 0.0, 4.0), Strategy::ThreadPrivate).is_err());
}

/// Asking for more memory than the device has is an error that names the size, and the device
/// is still usable afterwards.
#[test]
fn cuda_out_of_memory_is_an_error_not_a_panic() {
    let Some(dev) = gpu() else { return };
    let too_much = dev.info().total_memory * 2;
    match dev.stream().alloc::<u8>(too_much, "test buffer") {
        Err(tally::Error::OutOfMemory { bytes, what }) => {
            assert_eq!(bytes, too_much);
            assert_eq!(what, "test buffer");
        }
        Err(e) => panic!("expected OutOfMemory, got {e}"),
        Ok(_) => panic!("allocated {too_much} bytes on a device of {}", dev.info().total_memory),
    }
    let h =
        Backend::Cuda(dev).histogram(&[1u8, 2, 3, 3][..], &HistogramSpec::even(4, 0.0, 4.0), Strategy::Auto).unwrap();
    assert_eq!(h.counts[0], vec![0, 1, 1, 2]);
}

// ---- large histograms ---------------------------------------------------------------------------

/// The strategies that count histograms larger than a block's shared memory.
const LARGE: [Strategy; 7] = [
    Strategy::Auto,
    Strategy::GlobalAtomic,
    Strategy::BlockShared16,
    Strategy::ClusterShared,
    Strategy::ClusterShared16,
    Strategy::GlobalL2,
    Strategy::Partition,
];

fn small() -> bool {
    std::env::var("TALLY_SMALL").as_deref() == Ok("1")
}

/// Every bin once: the input where an off-by-one in a large-bin path shows at once.
fn each_bin_once(bins: usize) -> Vec<i32> {
    (0..bins as i32).collect()
}

/// Just below and above `limit`, a bin count where `auto` changes strategy on this device
/// (`auto_switches`) or where a strategy starts a second pass: each bin once, all samples in one
/// bin, and Zipf data, every large-bin strategy, exact counts. Past the 16-bit block copy
/// `auto` also looks at skew: all samples in one bin keep global-l2's hot-bin cache, the rest
/// partition. One test per point, so that racecheck can run them side by side.
fn around_switch_over(dev: &Arc<CudaDevice>, limit: usize, auto_switches: bool) {
    let points = SwitchOver::for_device(dev.info());
    eprintln!("switch-over points: {points:?}; around {limit}");
    let mut chosen: [Vec<Strategy>; 2] = Default::default();
    for (side, bins) in [limit, limit + 1].into_iter().enumerate() {
        let spec = HistogramSpec::even(bins as u32, 0.0, bins as f64);
        // (samples, whether all are in one bin)
        let mut inputs =
            vec![(samples::<i32>(Distribution::Zipf, bins as u32, if small() { 4099 } else { 1 << 21 }, 3), false)];
        // Under racecheck (TALLY_RACECHECK=1, whose cost grows with launches) the strategies' kernels
        // at these bins run on the Zipf samples only.
        if !common::racecheck() {
            inputs.push((samples(Distribution::Hot100, bins as u32, if small() { 4099 } else { 1 << 20 }, 3), true));
        }
        if !small() {
            inputs.push((each_bin_once(bins), false));
        }
        for (host, one_bin) in &inputs {
            for s in LARGE {
                let ran = check(dev, host, &spec, s, 0);
                if s != Strategy::Auto {
                    continue;
                }
                if *one_bin && bins > points.block_shared16 {
                    // Global-l2's hot-bin cache while one of its passes holds every bin.
                    let past = bins <= points.partition && partition_preferred(bins, 1.0, points.global_l2_pass);
                    let want = if past { Strategy::Partition } else { Strategy::GlobalL2 };
                    assert_eq!(ran, want, "all in one bin at {bins} bins");
                } else {
                    chosen[side].push(ran);
                }
            }
        }
    }
    // The point is a switch-over: auto runs one strategy at `limit` and another above it.
    let [at, above] = &chosen;
    assert!(at.iter().all(|&s| s == at[0]) && above.iter().all(|&s| s == above[0]), "{chosen:?}");
    assert_eq!(at[0] != above[0], auto_switches, "auto at {limit} and {} bins: {chosen:?}", limit + 1);
}

/// `around_switch_over`'s last argument: `auto` changes strategy at the point ...
const AUTO_SWITCHES: bool = true;
/// ... or only a strategy starts a second pass there.
const SECOND_PASS_ONLY: bool = false;

/// Around the largest 32-bit block copy, where `auto` moves to 16-bit counters.
#[test]
fn cuda_large_bins_around_the_block_copy() {
    let Some(dev) = gpu() else { return };
    around_switch_over(&dev, SwitchOver::for_device(dev.info()).block_shared, AUTO_SWITCHES);
}

/// Around the largest 16-bit block copy, where `auto` moves to the partition.
#[test]
fn cuda_large_bins_around_the_16_bit_block_copy() {
    let Some(dev) = gpu() else { return };
    around_switch_over(&dev, SwitchOver::for_device(dev.info()).block_shared16, AUTO_SWITCHES);
}

/// Around the largest single-pass cluster copy (sm_90 and later), where cluster-shared starts a
/// second pass.
#[test]
fn cuda_large_bins_around_the_cluster_copy() {
    let Some(dev) = gpu() else { return };
    match SwitchOver::for_device(dev.info()).cluster_shared {
        Some(limit) => around_switch_over(&dev, limit, SECOND_PASS_ONLY),
        None => eprintln!("skipping: no thread-block clusters on this device"),
    }
}

/// Around the largest single-pass 16-bit cluster copy (sm_90 and later).
#[test]
fn cuda_large_bins_around_the_16_bit_cluster_copy() {
    let Some(dev) = gpu() else { return };
    match SwitchOver::for_device(dev.info()).cluster_shared16 {
        Some(limit) => around_switch_over(&dev, limit, SECOND_PASS_ONLY),
        None => eprintln!("skipping: no thread-block clusters on this device"),
    }
}

/// `0..2^24`, each bin once, at 2^24 bins: integer and float samples, one pass and many.
#[test]
fn cuda_each_bin_once_up_to_2_pow_24() {
    let Some(dev) = gpu() else { return };
    if small() {
        eprintln!("skipping 2^24 bins under TALLY_SMALL=1");
        return;
    }
    let bins = 1usize << 24;
    let spec = HistogramSpec::even(bins as u32, 0.0, bins as f64);
    let ints = each_bin_once(bins);
    for s in LARGE {
        check(&dev, &ints, &spec, s, 0);
    }
    let floats: Vec<f32> = (0..bins).map(|i| i as f32).collect();
    for s in [Strategy::Auto, Strategy::ClusterShared16, Strategy::GlobalL2] {
        check(&dev, &floats, &spec, s, 0);
    }
    let h = Backend::Cuda(dev).histogram(&ints, &spec, Strategy::Auto).unwrap();
    assert!(h.counts[0].iter().all(|&c| c == 1));
}

/// Samples where a few bins (and the below-range counter) take most of the input, so that every
/// block's 16-bit counters for them wrap many times (2^25 samples over at most a few hundred
/// blocks), the rest uniform.
fn hot_few(n: usize, bins: i32, hot: &[i32], seed: u64) -> Vec<i32> {
    (0..n)
        .map(|i| {
            let r = splitmix64(seed ^ i as u64);
            let k = (r % 16) as usize;
            if k < hot.len() {
                hot[k]
            } else if k < 2 * hot.len() {
                -5
            } else {
                ((r >> 8) % bins as u64) as i32
            }
        })
        .collect()
}

/// 16-bit shared counters wrap many times and carry into their neighbours; the counts moved to
/// global memory must make every total exact: low and high halves, outlier counters, several
/// channels, and (in a cluster) neighbours one cluster width apart.
#[test]
fn cuda_16_bit_counters_spill_exactly() {
    let Some(dev) = gpu() else { return };
    let n = if small() { 5000 } else { 1 << 25 };
    // 65,536 bins: one block per multiprocessor, each sees ~2^18 samples, half in 4 bins.
    let bins = 65536;
    let host = hot_few(n, bins, &[0, 1, 2, 3, 4, bins - 1], 1);
    let spec = HistogramSpec::even(bins as u32, 0.0, bins as f64);
    assert_eq!(check(&dev, &host, &spec, Strategy::BlockShared16, 0), Strategy::BlockShared16);
    check(&dev, &host, &spec, Strategy::Auto, 0);
    // NaN and below-range counts in the narrow outlier counters, two channels.
    let fhost: Vec<f32> = host.iter().map(|&x| if x == 3 { f32::NAN } else { x as f32 * 0.25 }).collect();
    let fspec = HistogramSpec::even(30000, 0.0, 7500.0).with_channels(Channels { interleave: 2, selected: vec![1, 0] });
    assert_eq!(check(&dev, &fhost, &fspec, Strategy::BlockShared16, 0), Strategy::BlockShared16);
    // A dominant key takes a 32-bit counter of its own (the probe finds it): 90% and all samples
    // in one bin, and a hot bin in the second slot of two channels.
    for dist in [Distribution::Hot90, Distribution::Hot100] {
        let host: Vec<i32> = samples(dist, 65536, n, 4);
        assert_eq!(check(&dev, &host, &spec, Strategy::BlockShared16, 0), Strategy::BlockShared16);
    }
    let host: Vec<i32> = (0..n).map(|i| if i % 2 == 0 { 7 } else { (splitmix64(i as u64) % 40000) as i32 }).collect();
    let two = HistogramSpec::even(40000, 0.0, 40000.0).with_channels(Channels { interleave: 2, selected: vec![1, 0] });
    assert_eq!(check(&dev, &host, &two, Strategy::BlockShared16, 0), Strategy::BlockShared16);
    if dev.info().compute_capability.0 < 9 {
        return;
    }
    // The largest single-pass cluster histogram (16 blocks): key r's neighbour is r + 16.
    let bins = SwitchOver::for_device(dev.info()).cluster_shared16.unwrap() as i32;
    let host = hot_few(n, bins, &[0, 16, 1, 17, bins - 1, bins - 17], 2);
    let spec = HistogramSpec::even(bins as u32, 0.0, bins as f64);
    assert_eq!(check(&dev, &host, &spec, Strategy::ClusterShared16, 0), Strategy::ClusterShared16);
    // Small clusters: 2 and 4 blocks.
    for bins in [150_000, 300_000] {
        let host = hot_few(n, bins, &[0, 2, 4, 1, 3], 3);
        check(&dev, &host, &HistogramSpec::even(bins as u32, 0.0, bins as f64), Strategy::ClusterShared16, 0);
    }
}

/// `n` samples, 80% of them spread evenly over the values of `hot` (20% each for four: far from
/// the 25% at which the skew probe gives a key a 32-bit counter of its own), the rest `rest` of
/// random bits.
fn mostly_hot<T: Copy>(n: usize, hot: &[T], seed: u64, rest: impl Fn(u64) -> T) -> Vec<T> {
    let seed = splitmix64(seed);
    (0..n)
        .map(|i| {
            let r = splitmix64(seed ^ i as u64);
            if (r >> 40) % 100 < 80 {
                hot[(r % hot.len() as u64) as usize]
            } else {
                rest(r >> 8)
            }
        })
        .collect()
}

/// Counts `host` with `strategy` on one block (one cluster for the cluster strategies), its
/// counters poisoned first, and checks every count against the reference. One launch: the
/// plans' relaunches are `check_plan`'s subject, and racecheck's cost grows with launches. The
/// plan must have the shape the test's samples were made for, or the counters would not see
/// them: a grid of one block (or cluster), one pass, clusters of `cluster` blocks, and a 32-bit
/// counter for a dominant key where `hot_key`.
fn check_on_one_block<T: Sample>(
    dev: &Arc<CudaDevice>,
    host: &[T],
    spec: &HistogramSpec,
    strategy: Strategy,
    hot_key: bool,
    cluster: Option<u32>,
) {
    let tuning = Tuning { hist_grid: Some(1), ..Default::default() };
    let stream = dev.stream();
    let buf = stream.upload(host, "test samples").unwrap();
    let mut plan = HistogramPlan::new(dev, &buf.view(), spec, strategy, &tuning).unwrap();
    assert_eq!(plan.strategy(), strategy);
    assert_eq!(plan.cluster_size(), cluster, "{strategy}: blocks per cluster");
    assert_eq!(plan.grid(), Some(cluster.unwrap_or(1)), "{strategy}: one block or cluster");
    assert_eq!(plan.passes(), 1, "{strategy}: one pass");
    assert_eq!(plan.variant().hot_key, hot_key, "{strategy}: a dominant key's own counter");
    plan.fill_outputs(stream, 0xA5).unwrap();
    plan.launch(stream, &buf.view()).unwrap();
    let got = plan.read(stream).unwrap();
    let what = format!("{} n={} spec={spec:?} strategy={strategy} on one block", T::DTYPE, host.len());
    common::assert_same_counts(&got, &reference::histogram(host, spec), &what);
}

/// Samples (per channel) for the tests of 16-bit counters that wrap within one block: about
/// 72,000 in each of four keys.
const WRAP_SAMPLES: usize = 360_007;

/// The wrapping of `cuda_16_bit_counters_spill_exactly` at a size a sanitizer can afford: one
/// block counts every sample, so that four of its 16-bit counters wrap.
#[test]
fn cuda_16_bit_counters_wrap_within_one_block() {
    let Some(dev) = gpu() else { return };
    let bins = 65536;
    let host = mostly_hot(WRAP_SAMPLES, &[0, 1, 2, bins - 1], 5, |r| (r % (bins as u64 + 200)) as i32 - 100);
    let spec = HistogramSpec::even(bins as u32, 0.0, bins as f64);
    check_on_one_block(&dev, &host, &spec, Strategy::BlockShared16, false, None);
}

/// Narrow outlier counters that wrap within one block: NaN, below and above the range are three
/// of the four hot values.
#[test]
fn cuda_16_bit_outlier_counters_wrap_within_one_block() {
    let Some(dev) = gpu() else { return };
    let host = mostly_hot(WRAP_SAMPLES, &[f32::NAN, -1.0, 1e9, 5.0], 6, |r| (r % 40_000) as f32 * 0.25 - 100.0);
    check_on_one_block(&dev, &host, &HistogramSpec::even(30000, 0.0, 7500.0), Strategy::BlockShared16, false, None);
}

/// Two channels within one block: in one, four keys of about 72,000 samples each wrap; the
/// other is all one key, which the probe gives a 32-bit counter of its own.
#[test]
fn cuda_16_bit_channel_counters_wrap_within_one_block() {
    let Some(dev) = gpu() else { return };
    let odd = mostly_hot(WRAP_SAMPLES, &[7, 8, 20_000, 39_999], 7, |r| (r % 40_000) as i32);
    let host: Vec<i32> = odd.iter().flat_map(|&v| [7, v]).collect();
    let spec = HistogramSpec::even(40000, 0.0, 40000.0).with_channels(Channels { interleave: 2, selected: vec![1, 0] });
    check_on_one_block(&dev, &host, &spec, Strategy::BlockShared16, true, None);
}

/// One cluster of 16 blocks counts every sample into the largest single-pass cluster histogram:
/// key r's neighbour is r + 16 (sm_90 and later).
#[test]
fn cuda_16_bit_cluster_counters_wrap_within_one_cluster() {
    let Some(dev) = gpu() else { return };
    if dev.info().compute_capability.0 < 9 {
        eprintln!("skipping: thread-block clusters need sm_90");
        return;
    }
    let bins = SwitchOver::for_device(dev.info()).cluster_shared16.unwrap() as i32;
    let host = mostly_hot(WRAP_SAMPLES, &[0, 16, 17, bins - 1], 8, |r| (r % bins as u64) as i32);
    let spec = HistogramSpec::even(bins as u32, 0.0, bins as f64);
    check_on_one_block(&dev, &host, &spec, Strategy::ClusterShared16, false, Some(16));
}

/// Several passes over the input: samples in no bin are counted once, not once per pass;
/// several channels; edges too many for shared memory.
#[test]
fn cuda_passes_count_outliers_once() {
    let Some(dev) = gpu() else { return };
    let bins: u32 = if small() { 300_000 } else { 1 << 23 };
    let n = if small() { 5000 } else { 1 << 22 };
    let host =
        mixed::<i32>(n, 11, |r| (r % (bins as u64 + 2000)) as i32 - 1000, &[i32::MIN, i32::MAX, -1, bins as i32]);
    let spec = HistogramSpec::even(bins, 0.0, bins as f64);
    for s in LARGE {
        check(&dev, &host, &spec, s, 0);
    }
    let channels = Channels { interleave: 3, selected: vec![2, 0] };
    let spec = HistogramSpec::even(bins / 2, 0.0, bins as f64).with_channels(channels);
    for s in [Strategy::Auto, Strategy::ClusterShared16, Strategy::ClusterShared, Strategy::GlobalL2] {
        check(&dev, &host, &spec, s, 1);
    }
    let edges: Vec<f64> = (0..=70_000).map(|i| (i as f64) * 0.75 - 10.0).collect();
    let fhost = mixed::<f64>(n.min(1 << 20), 12, |r| (r % 60_000) as f64 - 20.5, &[f64::NAN, -10.0, 52_490.0]);
    for s in [Strategy::Auto, Strategy::ClusterShared, Strategy::GlobalL2] {
        check(&dev, &fhost, &HistogramSpec::edges(edges.clone()), s, 0);
    }
}

/// 100M bins run where they fit: no temporary memory beyond the histogram itself and the
/// partition's bounded scratch.
#[test]
fn cuda_hundred_million_bins() {
    let Some(dev) = gpu() else { return };
    if small() || std::env::var("TALLY_SKIP_HUGE").as_deref() == Ok("1") {
        eprintln!("skipping 100M bins (TALLY_SMALL / TALLY_SKIP_HUGE)");
        return;
    }
    let bins = 100_000_000u32;
    let host: Vec<u32> = samples(Distribution::Zipf, bins, 1 << 24, 4);
    let spec = HistogramSpec::even(bins, 0.0, bins as f64);
    let want = tally::histogram::cpu::histogram(&host, &spec).unwrap();
    for s in [Strategy::Auto, Strategy::ClusterShared16, Strategy::Partition] {
        let got = Backend::Cuda(dev.clone()).histogram(&host, &spec, s).unwrap();
        assert!(got.same_counts(&want), "strategy {s} (ran {})", got.strategy);
    }
}

/// A one-pass plan posts its counters with its outlier counters where they fit a kept read-back
/// (511 words: 1,016 32-bit counters and one channel's 3 outlier words; 334 bins of three
/// channels), and copies them after the launch beyond that. Each side of both lines counts
/// exactly on poisoned counters, launch after launch.
#[test]
fn cuda_small_plans_post_their_counters() {
    let Some(dev) = gpu() else { return };
    let n = if small() { 3001 } else { (1 << 20) + 5 };
    let rgb = |bins: u32| {
        HistogramSpec::even(bins, 0.0, bins as f64).with_channels(Channels { interleave: 3, selected: vec![2, 0, 1] })
    };
    for (spec, posts) in [
        (HistogramSpec::even(1016, 0.0, 1016.0), true),
        (HistogramSpec::even(1017, 0.0, 1017.0), false),
        (rgb(334), true),
        (rgb(335), false),
    ] {
        let bins = spec.bins.count() as u64;
        let stream = dev.stream();
        let inputs: Vec<Vec<i32>> =
            (0..2).map(|k| common::draw(n, bins + k, |r| (r.next() % (bins + 20)) as i32 - 10)).collect();
        let bufs: Vec<_> = inputs.iter().map(|h| stream.upload(h, "samples").unwrap()).collect();
        let mut plan =
            tally::HistogramPlan::new(&dev, &bufs[0].view(), &spec, Strategy::Auto, &Default::default()).unwrap();
        assert_eq!(plan.passes(), 1, "{spec:?}");
        assert_eq!(plan.posts_counts(), posts, "{spec:?}");
        // Inputs alternating on one plan: a read that took an earlier launch's post would show.
        plan.fill_outputs(stream, 0xA5).unwrap();
        for round in 0..4 {
            let k = round % 2;
            plan.launch(stream, &bufs[k].view()).unwrap();
            assert!(plan.result_posted(), "{spec:?} round {round}: a one-pass launch posts");
            let got = plan.read(stream).unwrap();
            common::assert_same_counts(
                &got,
                &reference::histogram(&inputs[k], &spec),
                &format!("{spec:?} round {round}"),
            );
        }
        check_plan(&dev, &inputs[0], &spec, Strategy::Auto, 0, &Default::default());
    }
}

/// A plan of one launch counts into the set of counters its last launch zeroed and posts its
/// outlier counters to the host (unless launched unposted); a plan of several passes copies
/// them. Both give the reference's counts and outliers launch after launch, on different
/// inputs, with the counters poisoned before the first launch and again in the middle.
#[test]
fn cuda_plans_post_outliers_and_count_afresh() {
    let Some(dev) = gpu() else { return };
    let stream = dev.stream();
    let n = if small() { 5000 } else { (1 << 20) + 7 };
    let inputs: Vec<Vec<i32>> = (0..3)
        .map(|k| mixed::<i32>(n, 40 + k, |r| (r % 300) as i32 - 20 + k as i32, &[i32::MIN, i32::MAX, -1, 256]))
        .collect();
    let spec = HistogramSpec::even(256, 0.0, 256.0);
    let passes = tally::histogram::Tuning { pass_keys: Some(100), ..Default::default() };
    for (strategy, tuning, posts) in [
        (Strategy::Auto, Default::default(), true),
        (Strategy::WarpPrivate, Default::default(), true),
        (Strategy::GlobalAtomic, Default::default(), true),
        (Strategy::GlobalL2, passes, false),
    ] {
        let bufs: Vec<_> = inputs.iter().map(|h| stream.upload(h, "samples").unwrap()).collect();
        let mut plan = tally::HistogramPlan::new(&dev, &bufs[0].view(), &spec, strategy, &tuning).unwrap();
        assert_eq!(plan.passes() > 1, !posts, "{strategy}");
        assert_eq!(plan.posts_counts(), posts, "{strategy}: 256 counters ride with the outliers");
        plan.fill_outputs(stream, 0xA5).unwrap();
        for round in 0..7 {
            let k = round % 3;
            if round == 4 {
                plan.fill_outputs(stream, 0x5A).unwrap();
            }
            let posted = round % 2 == 0;
            if posted {
                plan.launch(stream, &bufs[k].view()).unwrap();
            } else {
                plan.launch_unposted(stream, &bufs[k].view()).unwrap();
            }
            assert_eq!(plan.result_posted(), posts && posted, "{strategy} round {round}");
            let want = reference::histogram(&inputs[k], &spec);
            let outliers = plan.read_outliers(stream).unwrap();
            assert_eq!(outliers, vec![want.below[0], want.above[0], want.nan[0]], "{strategy} round {round}");
            assert!(!plan.result_posted(), "a read takes the post");
            let got = plan.read(stream).unwrap();
            common::assert_same_counts(&got, &want, &format!("{strategy} round {round}"));
        }
    }
}
