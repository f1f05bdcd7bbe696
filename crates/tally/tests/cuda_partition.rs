//! The partition strategy on the GPU against the sequential reference: bin counts around its
//! chunk size and `auto`'s switch point, 1M and 16M bins, skewed and uniform data, tile-edge
//! sizes, misaligned inputs, several slices, every sample type. Without a GPU each test prints a
//! line and returns; with TALLY_REQUIRE_GPU=1 that is a failure. Counters are poisoned before
//! every launch, so a kernel that leaves any unwritten shows it.

use std::sync::Arc;
use tally::data::{samples, splitmix64, Distribution};
use tally::device::CudaDevice;
use tally::histogram::partition::{max_keys_with, scatter_shape, PartitionShape, PARTITION_TILE};
use tally::histogram::strategy::partition_preferred;
use tally::histogram::weighted::ValueKind;
use tally::histogram::{reference, GeneralInput, GeneralPlan, GeneralSpec, HistogramPlan, SwitchOver, Tuning};
use tally::{
    Backend, Bins, Channels, Histogram2dSpec, HistogramSpec, Pairs, Sample, SharedAtomics, Strategy, WeightedOptions,
};

mod common;
// Under TALLY_RACECHECK (`racecheck()`): fewer sizes, misalignments and distributions, one tail
// still. The tails' bounds are memcheck's subject, which runs every size (TALLY_SMALL).
use common::{assert_same_counts, check_plan, gpu, racecheck};

/// TALLY_SMALL=1 (under compute-sanitizer): the sizes that exercise tails, lanes and slices.
fn small() -> bool {
    std::env::var("TALLY_SMALL").as_deref() == Ok("1")
}

/// What `strategy` ran for `host[offset..]`, after checking every count (`check_plan`).
fn ran<T: Sample>(dev: &Arc<CudaDevice>, host: &[T], spec: &HistogramSpec, strategy: Strategy) -> Strategy {
    check_plan(dev, host, spec, strategy, 0, &Tuning::default()).0.strategy
}

/// The partition, asked for by name, ran (not a fall-back) and counted right; its slices.
fn partitioned<T: Sample>(
    dev: &Arc<CudaDevice>,
    host: &[T],
    spec: &HistogramSpec,
    offset: usize,
    tuning: &Tuning,
) -> usize {
    let (got, partition) = check_plan(dev, host, spec, Strategy::Partition, offset, tuning);
    assert_eq!(got.strategy, Strategy::Partition);
    partition.expect("a partition plan reports its slices").0
}

/// What `auto` runs for `keys` keys past the 16-bit block copy on `dev`: the partition where it
/// is preferred, global-l2 for data concentrated in one bin (top share 0.9 or more) that it
/// counts in one pass, or past the partition's preference.
fn auto_past_block_copies(dev: &CudaDevice, keys: usize, concentrated: bool) -> Strategy {
    let pass = SwitchOver::for_device(dev.info()).global_l2_pass;
    if partition_preferred(keys, if concentrated { 0.9 } else { 0.0 }, pass) {
        Strategy::Partition
    } else {
        Strategy::GlobalL2
    }
}

/// Integers spread over `[lo, lo + span)`, one in seven an edge case from `specials`.
fn mixed_ints(n: usize, seed: u64, lo: i64, span: u64, specials: &[i64]) -> Vec<i64> {
    (0..n)
        .map(|i| {
            let r = splitmix64(seed ^ i as u64);
            if r.is_multiple_of(7) {
                specials[(r >> 8) as usize % specials.len()]
            } else {
                lo + ((r >> 3) % span) as i64
            }
        })
        .collect()
}

/// Tile-edge sizes: 0, 1, a tile and its neighbours, and a few tiles with a tail; under
/// TALLY_RACECHECK one sample, a tile and one, and a few tiles with a tail.
fn sizes() -> Vec<usize> {
    if racecheck() {
        return vec![1, PARTITION_TILE + 1, 3 * PARTITION_TILE + 17];
    }
    vec![0, 1, 31, PARTITION_TILE - 1, PARTITION_TILE, PARTITION_TILE + 1, 3 * PARTITION_TILE + 17]
}

/// The misalignments each size is counted at besides 0: one under TALLY_RACECHECK.
fn offsets() -> std::ops::RangeInclusive<usize> {
    1..=if racecheck() { 1 } else { 3 }
}

/// Bins just below, at and above one and two chunks and `auto`'s switch to the partition; every
/// bin count with each tile-edge size, misaligned by 1 to 3 samples, and outliers on both sides.
#[test]
fn partition_around_chunks_and_the_switch_point() {
    let Some(dev) = gpu() else { return };
    let points = SwitchOver::for_device(dev.info());
    let chunk = points.partition_chunk;
    let t = Tuning::default();
    for bins in
        [chunk - 1, chunk, chunk + 1, 2 * chunk - 1, 2 * chunk + 1, points.block_shared16, points.block_shared16 + 1]
    {
        let spec = HistogramSpec::even(bins as u32, -5.0, bins as f64 - 5.0);
        let specials = [-6, -5, -4, 0, bins as i64 - 6, bins as i64 - 5, bins as i64, i32::MIN as i64, i32::MAX as i64];
        for n in sizes() {
            let host: Vec<i32> = mixed_ints(n, bins as u64 * 7 + n as u64, -100, bins as u64 + 200, &specials)
                .into_iter()
                .map(|v| v as i32)
                .collect();
            assert_eq!(partitioned(&dev, &host, &spec, 0, &t), usize::from(n > 0));
            for offset in offsets() {
                if n > offset {
                    partitioned(&dev, &host, &spec, offset, &t);
                }
            }
        }
        // Each bin once: an off-by-one at a chunk's edge shows at once.
        let once: Vec<i32> = (-5..bins as i32 - 5).collect();
        partitioned(&dev, &once, &spec, 0, &t);
    }
    // auto: the 16-bit block copy up to the switch point, the partition past it.
    let at = points.block_shared16;
    for (bins, want) in [(at, Strategy::BlockShared16), (at + 1, auto_past_block_copies(&dev, at + 1, false))] {
        let host: Vec<i32> = samples(Distribution::Uniform, bins as u32, 1 << 16, 1);
        let spec = HistogramSpec::even(bins as u32, 0.0, bins as f64);
        assert_eq!(ran(&dev, &host, &spec, Strategy::Auto), want, "auto at {bins} bins");
    }
}

/// 1M and 16M bins, uniform, Zipf, 90% and all in one bin: the partition counts each exactly,
/// and `auto` partitions unless one bin holds a large share and one pass of global-l2 holds
/// every bin (then global-l2's hot-bin cache: at 1M bins, not at 16M).
#[test]
fn partition_large_bins_every_distribution() {
    let Some(dev) = gpu() else { return };
    let t = Tuning::default();
    let bin_counts: &[u32] = if small() { &[1 << 20] } else { &[1 << 20, 1 << 24] };
    for &bins in bin_counts {
        let spec = HistogramSpec::even(bins, 0.0, bins as f64);
        for dist in Distribution::ALL {
            let n = if small() { 3 * PARTITION_TILE + 5 } else { (1 << 23) + 3 };
            let host: Vec<i32> = samples(dist, bins, n, bins as u64);
            partitioned(&dev, &host, &spec, 0, &t);
            partitioned(&dev, &host, &spec, 2, &t);
            let concentrated = matches!(dist, Distribution::Hot90 | Distribution::Hot100);
            assert_eq!(
                ran(&dev, &host, &spec, Strategy::Auto),
                auto_past_block_copies(&dev, bins as usize, concentrated),
                "{dist:?}"
            );
        }
        if !small() {
            // Every bin once, as integers and as floats.
            let once: Vec<i32> = (0..bins as i32).collect();
            partitioned(&dev, &once, &spec, 0, &t);
            let floats: Vec<f32> = (0..bins).map(|i| i as f32).collect();
            partitioned(&dev, &floats, &spec, 0, &t);
        }
    }
}

/// Keys laid out so that the segments of one chunk differ wildly in length between tiles:
/// sorted (each tile in one or two chunks), sorted in reverse, whole tiles of one chunk
/// alternating with uniform tiles, and one chunk's keys only in every 37th tile. The per-chunk
/// histogram reads each chunk's segments from every tile, 32 tiles to a warp; a segment
/// miscounted at its ends, or one lane's segment lost, shows in the counts.
#[test]
fn partition_uneven_segments() {
    let Some(dev) = gpu() else { return };
    let t = Tuning::default();
    let bins = 1u32 << 20;
    let spec = HistogramSpec::even(bins, 0.0, bins as f64);
    let n = if small() { 5 * PARTITION_TILE + 3 } else { 70 * PARTITION_TILE + 3 };
    let uniform: Vec<u32> = samples(Distribution::Uniform, bins, n, 17);
    let mut sorted = uniform.clone();
    sorted.sort_unstable();
    let reversed: Vec<u32> = sorted.iter().rev().copied().collect();
    let tile = PARTITION_TILE;
    let alternating: Vec<u32> =
        (0..n).map(|i| if (i / tile).is_multiple_of(2) { 70_000 + (i % 5) as u32 } else { uniform[i] }).collect();
    let rare: Vec<u32> = (0..n)
        .map(|i| if (i / tile) % 37 == 5 { bins - 1 - (i % 3) as u32 } else { uniform[i] % (bins / 2) })
        .collect();
    for host in [&sorted, &reversed, &alternating, &rare] {
        partitioned(&dev, host, &spec, 0, &t);
        partitioned(&dev, host, &spec, 5, &t);
    }
    // Sorted data through several slices, with matched ranks.
    let sliced = Tuning { partition_slice: Some(3 * tile), ..t.clone() }.with_partition_shape(512, 16, 2, true);
    assert_eq!(partitioned(&dev, &sorted, &spec, 0, &sliced), n.div_ceil(3 * tile));
}

/// Slices forced small by the tuning value: each slice counted before the next, the channel of
/// each sample taken from its index in the whole input, outliers counted once.
#[test]
fn partition_in_several_slices() {
    let Some(dev) = gpu() else { return };
    let specials = [-1, 0, 99_999, 100_000, 123_456, i32::MIN as i64];
    for (slice, n) in [(PARTITION_TILE, 5 * PARTITION_TILE), (2 * PARTITION_TILE + 3, 7 * PARTITION_TILE + 5)] {
        let t = Tuning { partition_slice: Some(slice), ..Tuning::default() };
        let host: Vec<i32> =
            mixed_ints(n, slice as u64, -50, 100_100, &specials).into_iter().map(|v| v as i32).collect();
        let whole = slice - slice % PARTITION_TILE;
        let spec = HistogramSpec::even(100_000, 0.0, 100_000.0);
        assert_eq!(partitioned(&dev, &host, &spec, 0, &t), n.div_ceil(whole));
        partitioned(&dev, &host, &spec, 3, &t);
        // Interleaved channels: a slice may start on any channel.
        let spec =
            HistogramSpec::even(40_000, 0.0, 100_000.0).with_channels(Channels { interleave: 3, selected: vec![2, 0] });
        partitioned(&dev, &host, &spec, 0, &t);
        partitioned(&dev, &host, &spec, 1, &t);
    }
    // Slices of whole tiles over many bins, with a tail in the last slice.
    let host: Vec<u32> = samples(Distribution::Zipf, 1 << 20, 9 * PARTITION_TILE + 1, 6);
    let spec = HistogramSpec::even(1 << 20, 0.0, (1 << 20) as f64);
    let t = Tuning { partition_slice: Some(4 * PARTITION_TILE), ..Tuning::default() };
    assert_eq!(partitioned(&dev, &host, &spec, 0, &t), 3);
}

/// A workspace capped below what the partition needs is an error, never a wrong answer.
#[test]
fn partition_scratch_beyond_the_workspace_limit_is_an_error() {
    let Some(dev) = gpu() else { return };
    let host: Vec<i32> = samples(Distribution::Uniform, 1 << 20, 1 << 16, 2);
    let spec = HistogramSpec::even(1 << 20, 0.0, (1 << 20) as f64);
    let buf = dev.stream().upload(&host, "test samples").unwrap();
    let mut plan = HistogramPlan::new(&dev, &buf.view(), &spec, Strategy::Partition, &Tuning::default()).unwrap();
    let (slices, scratch) = plan.partition_scratch().unwrap();
    assert_eq!(slices, 1);
    // Two bytes a key, and a word per tile and chunk.
    assert!(scratch >= host.len() * 2, "{scratch} bytes for {} keys", host.len());
    let capped = dev.new_stream().unwrap();
    capped.set_workspace_limit(scratch / 2);
    let err = plan.launch(&capped, &buf.view()).unwrap_err();
    assert!(err.to_string().contains("scratch"), "{err}");
    // The refused launch had queued the zeroing of the counters on that stream.
    capped.synchronize("the refused launch").unwrap();
    // The plan still counts on a stream whose workspace allows it.
    plan.launch(dev.stream(), &buf.view()).unwrap();
    assert_same_counts(&plan.read(dev.stream()).unwrap(), &reference::histogram(&host, &spec), "after the error");
}

/// Every sample type, with the binnings each takes (8-bit tables, exact integers, the float
/// rule, custom edges) and outliers, NaNs and infinities.
#[test]
fn partition_every_sample_type() {
    let Some(dev) = gpu() else { return };
    let t = Tuning::default();
    let n = if small() { 2 * PARTITION_TILE + 9 } else { (1 << 20) + 7 };
    let ints = mixed_ints(n, 11, -3000, 80_000, &[-1, 0, 255, 256, 65_535, 70_000, i64::from(i32::MAX)]);
    let int_specs = [
        HistogramSpec::even(70_000, 0.0, 70_000.0),
        HistogramSpec::even(70_001, -2999.0, 75_000.0),
        HistogramSpec::even(3, 0.0, 9.0),
        HistogramSpec::edges((0..=2000).map(|i| (i * 37 - 100) as f64).collect()),
    ];
    macro_rules! ints {
        ($t:ty) => {
            let host: Vec<$t> = ints.iter().map(|&v| v as $t).collect();
            for spec in &int_specs {
                partitioned(&dev, &host, spec, 0, &t);
                partitioned(&dev, &host, spec, 1, &t);
            }
        };
    }
    ints!(i32);
    ints!(u32);
    ints!(i64);
    ints!(u16);
    // u8: the 8-bit table, identity bins and fewer bins than values.
    let bytes: Vec<u8> = ints.iter().map(|&v| v as u8).collect();
    for spec in [HistogramSpec::even(256, 0.0, 256.0), HistogramSpec::even(200, 10.0, 250.0)] {
        partitioned(&dev, &bytes, &spec, 0, &t);
        partitioned(&dev, &bytes, &spec, 3, &t);
    }
    let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0, 1.0, 1.0 - 1e-12, -1.0];
    let floats: Vec<f64> = (0..n)
        .map(|i| {
            let r = splitmix64(i as u64 ^ 0x5eed);
            if r.is_multiple_of(9) {
                specials[(r >> 8) as usize % specials.len()]
            } else {
                (r >> 11) as f64 / (1u64 << 53) as f64 * 2.2 - 1.1
            }
        })
        .collect();
    let float_specs = [
        HistogramSpec::even(1 << 20, -1.0, 1.0),
        HistogramSpec::even(99_999, -0.75, 1.0),
        HistogramSpec::edges(vec![-1.0, -0.5, -0.0, 0.25, 0.5, 1.0]),
    ];
    let singles: Vec<f32> = floats.iter().map(|&v| v as f32).collect();
    for spec in &float_specs {
        partitioned(&dev, &floats, spec, 0, &t);
        partitioned(&dev, &floats, spec, 1, &t);
        partitioned(&dev, &singles, spec, 0, &t);
        partitioned(&dev, &singles, spec, 2, &t);
    }
    // Through the Backend: `auto` on floats past the switch point partitions.
    let spec = HistogramSpec::even(1 << 20, -1.0, 1.0);
    let want = auto_past_block_copies(&dev, 1 << 20, false);
    let h = Backend::Cuda(dev).histogram(&singles, &spec, Strategy::Auto).unwrap();
    assert_eq!(h.strategy, want);
    assert_same_counts(&h, &reference::histogram(&singles, &spec), "auto f32");
}

/// `bins` even bins over `[0, bins)`, partitioned with `tuning`: integers around the range (one
/// in seven from `specials`) at each of `sizes`, aligned and misaligned by 3, seeded by
/// `seeds.0 ^ n`; then every distribution (under TALLY_RACECHECK uniform and 90% in one bin) at
/// `dist_n` samples misaligned by 1, seeded by `bins ^ seeds.1`.
fn partitioned_sizes_and_distributions(
    dev: &Arc<CudaDevice>,
    bins: u32,
    sizes: &[usize],
    dist_n: usize,
    seeds: (u64, u64),
    specials: &[i64],
    tuning: &Tuning,
) {
    let spec = HistogramSpec::even(bins, 0.0, bins as f64);
    for &n in sizes {
        let host: Vec<i32> = mixed_ints(n, seeds.0 ^ n as u64, -40, u64::from(bins) + 80, specials)
            .into_iter()
            .map(|v| v as i32)
            .collect();
        partitioned(dev, &host, &spec, 0, tuning);
        if n > 3 {
            partitioned(dev, &host, &spec, 3, tuning);
        }
    }
    let dists = if racecheck() { &Distribution::ALL[..2] } else { &Distribution::ALL[..] };
    for &dist in dists {
        let host: Vec<i32> = samples(dist, bins, dist_n, u64::from(bins) ^ seeds.1);
        partitioned(dev, &host, &spec, 1, tuning);
    }
}

/// The tuned shapes and the ranking the sweep compares: threads, keys per thread, blocks per
/// multiprocessor, ranks by shared atomics or by `__match_any_sync`; each counts tile-edge sizes,
/// misaligned inputs, few chunks (the warp's scan of the chunk counts) and many (chunks of 2^12
/// keys: the block's scan), skewed data, several slices and interleaved channels exactly.
#[test]
fn partition_tuned_shapes_and_ranking() {
    let Some(dev) = gpu() else { return };
    let shapes = [
        (512, 16, 1, true),
        (256, 8, 3, false),
        (256, 32, 2, true),
        (1024, 4, 2, false),
        (128, 8, 4, true),
        (1024, 16, 1, false),
    ];
    let specials = [-1, 0, 99_999, 100_000, (1 << 20) - 1, 1 << 20, i32::MIN as i64];
    for (threads, items, blocks, matched) in shapes {
        let t = Tuning::default().with_partition_shape(threads, items, blocks, matched);
        let tile = PartitionShape::new(&t, tally::DType::I32, 0).tile();
        assert_eq!(tile, (threads * items) as usize);
        for bins in [100_000u32, 1 << 20] {
            let sizes = if racecheck() {
                vec![1, tile + 1, 5 * tile + 7]
            } else {
                vec![0, 1, tile - 1, tile, tile + 1, 5 * tile + 7]
            };
            let seeds = (u64::from(threads + items), u64::from(threads));
            partitioned_sizes_and_distributions(&dev, bins, &sizes, 9 * tile + 5, seeds, &specials, &t);
        }
        let many = Tuning { partition_chunk_shift: Some(12), ..t.clone() };
        let sizes = [1, tile + 1, 3 * tile + 7];
        let seeds = (u64::from(threads * items), u64::from(blocks));
        partitioned_sizes_and_distributions(&dev, 1 << 20, &sizes, 5 * tile + 5, seeds, &specials, &many);
        // Several slices of whole tuned tiles, and interleaved channels in u16 and u8 samples.
        let sliced = Tuning { partition_slice: Some(2 * tile + 1), ..t.clone() };
        let host: Vec<i32> = samples(Distribution::Zipf, 1 << 20, 7 * tile + 3, 9);
        let spec = HistogramSpec::even(1 << 20, 0.0, (1 << 20) as f64);
        assert_eq!(partitioned(&dev, &host, &spec, 0, &sliced), (7 * tile + 3).div_ceil(2 * tile));
        let spec =
            HistogramSpec::even(40_000, 0.0, 65_536.0).with_channels(Channels { interleave: 3, selected: vec![2, 0] });
        let shorts: Vec<u16> = host.iter().map(|&v| v as u16).collect();
        partitioned(&dev, &shorts, &spec, 1, &t);
        let bytes: Vec<u8> = host.iter().map(|&v| v as u8).collect();
        partitioned(&dev, &bytes, &HistogramSpec::even(256, 0.0, 256.0), 2, &t);
    }
}

/// Chunks smaller than the device allows (`partition_chunk_shift`): keys within a chunk masked
/// to fewer bits, a last chunk partly used, many more chunks; sizes of one sample, a tile and
/// one, a few tiles and a tail, misaligned inputs, every distribution, several slices,
/// interleaved channels.
#[test]
fn partition_smaller_chunks() {
    let Some(dev) = gpu() else { return };
    let specials = [-1, 0, 4095, 4096, 99_999, 100_000, (1 << 20) - 1, 1 << 20, i32::MIN as i64];
    for shift in [8u32, 12, 13, 14] {
        let t = Tuning { partition_chunk_shift: Some(shift), ..Tuning::default() };
        for bins in [100_000u32, 1 << 20] {
            // More chunks than this device's shared memory holds beside a tile: not a case.
            if bins as usize > max_keys_with(dev.info(), shift, PARTITION_TILE) {
                continue;
            }
            // The scatter's tile for these chunks: 16,384 keys past FEW_CHUNKS.
            let tile = scatter_shape(dev.info(), &t, tally::DType::I32, bins as usize).tile();
            let sizes = [1, tile - 1, tile + 1, 3 * tile + 17];
            let seeds = (u64::from(shift), u64::from(shift));
            partitioned_sizes_and_distributions(&dev, bins, &sizes, 5 * tile + 5, seeds, &specials, &t);
        }
        let tile = scatter_shape(dev.info(), &t, tally::DType::I32, 100_000).tile();
        let sliced = Tuning { partition_slice: Some(2 * tile), ..t.clone() };
        let host: Vec<i32> = samples(Distribution::Zipf, 100_000, 7 * tile + 3, 9);
        let spec = HistogramSpec::even(100_000, 0.0, 100_000.0);
        assert_eq!(partitioned(&dev, &host, &spec, 0, &sliced), 4);
        let spec =
            HistogramSpec::even(40_000, 0.0, 100_000.0).with_channels(Channels { interleave: 3, selected: vec![2, 0] });
        partitioned(&dev, &host, &spec, 2, &t);
    }
}

/// Plans of one kernel variant with different shared memory (the per-chunk histogram of a
/// tuned smaller chunk takes less): a plan made after another must not lower the function's
/// shared-memory limit below what the earlier plan launches with.
#[test]
fn partition_plans_with_different_chunks_coexist() {
    let Some(dev) = gpu() else { return };
    let host: Vec<i32> = samples(Distribution::Uniform, 1 << 20, 3 * PARTITION_TILE + 7, 21);
    let spec = HistogramSpec::even(1 << 20, 0.0, (1 << 20) as f64);
    let want = reference::histogram(&host, &spec);
    let buf = dev.stream().upload(&host, "test samples").unwrap();
    let mut whole = HistogramPlan::new(&dev, &buf.view(), &spec, Strategy::Partition, &Tuning::default()).unwrap();
    let small = Tuning { partition_chunk_shift: Some(12), ..Tuning::default() };
    let mut smaller = HistogramPlan::new(&dev, &buf.view(), &spec, Strategy::Partition, &small).unwrap();
    for round in 0..4 {
        let plan = if round % 2 == 0 { &mut smaller } else { &mut whole };
        plan.launch(dev.stream(), &buf.view()).unwrap();
        assert_same_counts(&plan.read(dev.stream()).unwrap(), &want, "plans made one after the other");
    }
}

// ---- 2-D histograms: pairs partitioned as 1-D samples are -------------------------------------

/// Interleaved pairs over a little more than `[lo, hi)` on each axis, one coordinate in nine a
/// special: NaN, either bound, the value just below the upper one, far outside.
fn mixed_pairs<T: Sample>(n: usize, seed: u64, lo: f64, hi: f64, of: fn(f64) -> T) -> Vec<T> {
    let specials = [f64::NAN, lo, hi, hi - (hi - lo) * 1e-7, -1e30, 1e30];
    (0..2 * n)
        .map(|i| {
            let r = splitmix64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9));
            if r.is_multiple_of(9) {
                of(specials[(r >> 8) as usize % specials.len()])
            } else {
                let u = (r >> 11) as f64 / (1u64 << 53) as f64;
                of(lo - 0.05 * (hi - lo) + 1.1 * (hi - lo) * u)
            }
        })
        .collect()
}

/// How the pairs lie in device memory.
#[derive(Clone, Copy, Debug)]
enum PairLayout {
    /// x and y in two arrays, starting this many elements into their buffers.
    Split(usize, usize),
    /// One array of x0, y0, x1, y1, ..., starting `offset` elements into its buffer.
    Interleaved(usize),
}

/// The 2-D histogram of the interleaved pairs `xy` through a plan on the device, laid out as
/// `layout` says, accumulators poisoned before the launch: every bin and outlier compared with
/// the sequential reference. The strategy that ran and the partition's slices, where it ran.
fn pairs_checked<T: Sample>(
    dev: &Arc<CudaDevice>,
    xy: &[T],
    spec: &Histogram2dSpec,
    strategy: Strategy,
    layout: PairLayout,
    tuning: &Tuning,
) -> (Strategy, Option<usize>) {
    let stream = dev.stream();
    let (xs, ys): (Vec<T>, Vec<T>) = xy.chunks_exact(2).map(|p| (p[0], p[1])).unzip();
    let padded =
        |v: &[T], pad: usize| -> Vec<T> { std::iter::repeat_n(T::default(), pad).chain(v.iter().copied()).collect() };
    let (bx, by, at) = match layout {
        PairLayout::Split(ox, oy) => (
            stream.upload(&padded(&xs, ox), "x").unwrap(),
            Some((stream.upload(&padded(&ys, oy), "y").unwrap(), oy)),
            ox,
        ),
        PairLayout::Interleaved(o) => (stream.upload(&padded(xy, o), "pairs").unwrap(), None, o),
    };
    let (x_all, y_all) = (bx.view(), by.as_ref().map(|(b, o)| (b.view(), *o)));
    let input = GeneralInput::<T, f32> {
        x: x_all.slice(at..).unwrap(),
        y: y_all.as_ref().map(|(v, o)| v.slice(*o..).unwrap()),
        interleaved: by.is_none(),
        weights: None,
    };
    let general = GeneralSpec::TwoD(spec.clone());
    let mut plan = GeneralPlan::new(
        dev,
        input.len(),
        &general,
        false,
        ValueKind::Count,
        strategy,
        SharedAtomics::Halves,
        tuning,
        Some(&input),
    )
    .unwrap();
    plan.fill_outputs(stream, 0xA5).unwrap();
    plan.launch(stream, &input).unwrap();
    let got = plan.read_2d(stream, spec).unwrap();
    let want = reference::histogram_2d::<T, f32>(Pairs::Interleaved(xy), None, spec).unwrap();
    if !got.same_bits(&want) {
        let bad: Vec<_> =
            got.counts.iter().zip(&want.counts).enumerate().filter(|(_, (a, b))| a != b).take(8).collect();
        panic!(
            "{} pairs n={} {layout:?} {spec:?} {strategy} (ran {}):\n got {:?}\nwant {:?}\nfirst differing bins: {bad:?}",
            T::DTYPE,
            xs.len(),
            plan.strategy(),
            got.outliers,
            want.outliers
        );
    }
    (plan.strategy(), plan.partition_scratch().map(|(slices, _)| slices))
}

/// Every layout and sample type through the partition, by name: even bins on both axes and
/// custom edges on either or both, both rankings of the scatter, tile-edge sizes, pairs apart
/// (aligned, or x or y misaligned) and interleaved (misaligned by 0 to 2 elements), NaN and
/// out-of-range values on both axes.
#[test]
fn partition_pairs_every_layout_and_binning() {
    let Some(dev) = gpu() else { return };
    let t = Tuning::default();
    let edges = |n: usize, lo: f64, hi: f64| -> Bins {
        // Uneven widths: squares of evenly spaced points.
        Bins::Edges((0..=n).map(|i| lo + (hi - lo) * (i as f64 / n as f64).powi(2)).collect())
    };
    let specs = [
        Histogram2dSpec::even(1024, (0.0, 1.0), 1024, (0.0, 1.0)),
        Histogram2dSpec { x: edges(300, 0.0, 1.0), y: Bins::even(700, -0.1, 1.1) },
        Histogram2dSpec { x: Bins::even(333, 0.0, 1.0), y: edges(250, 0.0, 1.0) },
        Histogram2dSpec { x: edges(200, -0.1, 1.0), y: edges(400, 0.0, 1.1) },
    ];
    // The scatter's warp-matched ranking, which the probe picks for pairs with a hot bin.
    let matched = Tuning { partition_match: Some(true), ..Tuning::default() };
    let layouts = [
        PairLayout::Split(0, 0),
        PairLayout::Split(1, 0),
        PairLayout::Split(0, 3),
        PairLayout::Interleaved(0),
        PairLayout::Interleaved(1),
        PairLayout::Interleaved(2),
    ];
    for (s, spec) in specs.iter().enumerate() {
        for n in sizes() {
            let seed = (s * 1000 + n) as u64;
            let f32s: Vec<f32> = mixed_pairs(n, seed, 0.0, 1.0, |v| v as f32);
            let f64s: Vec<f64> = mixed_pairs(n, seed, 0.0, 1.0, |v| v);
            for layout in layouts {
                let (ran, slices) = pairs_checked(&dev, &f32s, spec, Strategy::Partition, layout, &t);
                assert_eq!((ran, slices), (Strategy::Partition, Some(usize::from(n > 0))), "{layout:?} n={n}");
                let (ran, _) = pairs_checked(&dev, &f64s, spec, Strategy::Partition, layout, &t);
                assert_eq!(ran, Strategy::Partition);
                pairs_checked(&dev, &f32s, spec, Strategy::Partition, layout, &matched);
            }
        }
    }
    // Each bin of 1024 x 1024 once, at its centre: an off-by-one at a chunk's edge shows at once.
    if small() {
        return;
    }
    let spec = &specs[0];
    let once: Vec<f32> = (0..1024 * 1024)
        .flat_map(|k| [((k / 1024) as f32 + 0.5) / 1024.0, ((k % 1024) as f32 + 0.5) / 1024.0])
        .collect();
    pairs_checked(&dev, &once, spec, Strategy::Partition, PairLayout::Split(0, 0), &t);
    pairs_checked(&dev, &once, spec, Strategy::Partition, PairLayout::Interleaved(0), &t);
}

/// Pairs in several slices and in chunks smaller than the device's: the slices of interleaved
/// pairs and of pairs apart start at the right pair, outliers are counted once.
#[test]
fn partition_pairs_in_slices_and_small_chunks() {
    let Some(dev) = gpu() else { return };
    let spec = Histogram2dSpec::even(1024, (0.0, 1.0), 1000, (0.0, 1.0));
    let n = if small() { 4 * PARTITION_TILE + 5 } else { 9 * PARTITION_TILE + 5 };
    let xy: Vec<f32> = mixed_pairs(n, 99, 0.0, 1.0, |v| v as f32);
    // Slices of two of the scatter's tiles (and a remainder): 8,192 pairs with the default
    // chunks (250), 16,384 with chunks of 2^12 keys (250 chunks: the larger tile).
    let sliced = |t: Tuning| {
        let tile = scatter_shape(dev.info(), &t, tally::DType::F32, 1024 * 1000).tile();
        (Tuning { partition_slice: Some(2 * tile + 3), ..t }, tile)
    };
    let chunked = sliced(Tuning { partition_chunk_shift: Some(12), ..Tuning::default() });
    for (t, tile) in [sliced(Tuning::default()), chunked.clone()] {
        for layout in
            [PairLayout::Split(0, 0), PairLayout::Split(2, 1), PairLayout::Interleaved(0), PairLayout::Interleaved(1)]
        {
            let (ran, slices) = pairs_checked(&dev, &xy, &spec, Strategy::Partition, layout, &t);
            assert_eq!((ran, slices), (Strategy::Partition, Some(n.div_ceil(2 * tile))), "{layout:?}");
        }
    }
    let chunked = chunked.0;
    // f64 pairs, interleaved: a pair is one 16-byte load.
    let xy: Vec<f64> = mixed_pairs(n, 7, 0.0, 1.0, |v| v);
    pairs_checked(&dev, &xy, &spec, Strategy::Partition, PairLayout::Interleaved(0), &chunked);
}

/// `auto` for 2-D counts: a block copy where one fits; past it the partition for spread pairs
/// (uniform, a Gaussian blob, one column of bins), global-l2 where one bin holds most pairs; weighted pairs never
/// partition (their sums need the general kernel), whatever was asked.
#[test]
fn auto_partitions_spread_pairs() {
    let Some(dev) = gpu() else { return };
    let t = Tuning::default();
    let n = if small() { 3 * PARTITION_TILE + 1 } else { (1 << 21) + 1 };
    let big = Histogram2dSpec::even(1024, (0.0, 1.0), 1024, (0.0, 1.0));
    let uniform = tally::data::uniform_pairs(n, 3);
    let blob = tally::data::gaussian_pairs(n, 0.5, 0.05, 4);
    // 90% of the pairs at one point, the rest uniform.
    let hot: Vec<f32> = uniform
        .chunks_exact(2)
        .enumerate()
        .flat_map(|(i, p)| if i % 10 != 0 { [0.3, 0.7] } else { [p[0], p[1]] })
        .collect();
    // x at one value, y uniform: a probe that read y as x, or pairs with the wrong stride, would
    // find one bin holding them all.
    let column: Vec<f32> = uniform.chunks_exact(2).flat_map(|p| [0.3, p[1]]).collect();
    let spread = auto_past_block_copies(&dev, 1 << 20, false);
    // Concentrated pairs: global-l2 where one pass of its 64-bit counters holds every bin.
    let pass = tally::histogram::policy::l2_slice(dev.info().l2_bytes, 8);
    let hot_pairs = if partition_preferred(1 << 20, 0.9, pass) { Strategy::Partition } else { Strategy::GlobalL2 };
    for (name, xy, want) in [
        ("uniform", &uniform, spread),
        ("blob", &blob, spread),
        ("one column", &column, spread),
        ("hot", &hot, hot_pairs),
    ] {
        for layout in [PairLayout::Split(0, 0), PairLayout::Interleaved(0)] {
            let (ran, _) = pairs_checked(&dev, xy, &big, Strategy::Auto, layout, &t);
            assert_eq!(ran, want, "{name} {layout:?}");
        }
    }
    let small_spec = Histogram2dSpec::even(64, (0.0, 1.0), 64, (0.0, 1.0));
    assert_eq!(
        pairs_checked(&dev, &uniform, &small_spec, Strategy::Auto, PairLayout::Split(0, 0), &t).0,
        Strategy::BlockShared
    );
    // Weighted: the partition is not a strategy of weighted histograms.
    let stream = dev.stream();
    let coords = stream.upload(&uniform, "pairs").unwrap();
    let ws = stream.upload(&vec![1.0f32; n], "weights").unwrap();
    let input = GeneralInput { x: coords.view(), y: None, interleaved: true, weights: Some(ws.view()) };
    let plan = GeneralPlan::<f32, f32>::two_d(
        &dev,
        &input,
        &big,
        WeightedOptions::default().with_strategy(Strategy::Partition),
    )
    .unwrap();
    assert_eq!(plan.strategy(), Strategy::GlobalL2);
}
