//! The scans on the GPU against the plain sequential reference (every listed specialisation of
//! `scan.cu` is compiled by the registry's check in `nvrtc_compile.rs`; the first test here
//! compiles them too, with NVRTC alone, and skips without it).

mod common;
mod scan_common;

use scan_common::*;
use tally::device::DeviceOptions;
use tally::scan::policy::{
    policy as scan_policy, ScanKernelOp, SMALL_KEYED_MAX_ITEMS, SMALL_SUM_MAX_ITEMS, SMALL_WIDENING_MAX_ITEMS,
};
use tally::scan::reference;
use tally::{Backend, CudaDevice, CustomOp, DeviceViewMut, Error, ScanOp, ScanOptions, ScanPlan, Tuning};

fn cuda() -> Option<Backend> {
    common::gpu().map(Backend::Cuda)
}

/// Sizes around the tiles of the scans of `T` (into itself, widened, by key: each policy's
/// tile) and many tiles.
fn sizes<T: tally::ReduceElement, W: tally::ReduceElement>() -> Vec<usize> {
    let tuning = tally::Tuning::default();
    let tile_at = |n: u64, out, op, key_bytes| {
        scan_policy(T::TYPE, out, op, key_bytes, n, &tuning).expect("policy").tile as usize
    };
    let (sum, max) = (ScanKernelOp::Sum, ScanKernelOp::Max);
    // Each policy's tile at the smallest and the largest sizes (some sums take larger tiles past
    // a switch: `SMALL_*_MAX_ITEMS`).
    let mut tiles = Vec::new();
    for n in [0, 1 << 30] {
        tiles.extend([tile_at(n, T::TYPE, sum, 0), tile_at(n, T::TYPE, max, 0), tile_at(n, W::TYPE, sum, 0)]);
        tiles.push(tile_at(n, T::TYPE, sum, 4));
    }
    tiles.sort();
    tiles.dedup();
    let mut v = vec![0, 1, 33];
    for t in tiles {
        v.extend([t - 1, t, t + 1, 31 * t + 5, 33 * t - 1]);
    }
    // Either side of each switch, and the large tiles' edges just past it (the sizes above past a
    // switch run the large shapes too), where the shape changes.
    let switches = [
        (SMALL_SUM_MAX_ITEMS, T::TYPE, 0),
        (SMALL_WIDENING_MAX_ITEMS, W::TYPE, 0),
        (SMALL_KEYED_MAX_ITEMS, T::TYPE, 4),
    ];
    for (switch, out, key_bytes) in switches {
        let large = tile_at(1 << 30, out, sum, key_bytes);
        if tile_at(0, out, sum, key_bytes) != large {
            let (switch, past) = (switch as usize, (switch as usize / large + 1) * large);
            v.extend([switch, switch + 1, past - 1, past, past + 1]);
        }
    }
    let large_sum = tile_at(1 << 30, T::TYPE, sum, 0);
    let largest = large_sum.max(tile_at(1 << 30, W::TYPE, sum, 0));
    v.push(1100 * largest + 17);
    v
}

macro_rules! every_type_on_the_gpu {
    ($($name:ident: $t:ty => $w:ty),*) => {$(
        #[test]
        fn $name() {
            let Some(gpu) = cuda() else { return };
            for (k, n) in sizes::<$t, $w>().into_iter().enumerate() {
                let xs: Vec<$t> = data(n, 11 + k as u64);
                check_ops::<$t, $w>(&gpu, &xs, stringify!($t));
                let keys = runs(n, 5000, k as u64);
                check_by_key::<u32, $t, $w>(&gpu, &keys, &xs, stringify!($t));
                let keys64: Vec<u64> = keys.iter().map(|&k| k as u64 * 0x1_0000_0001).collect();
                check_by_key::<u64, $t, $w>(&gpu, &keys64, &xs, stringify!($t));
            }
        }
    )*};
}
every_type_on_the_gpu!(gpu_u8_scans: u8 => u64, gpu_i8_scans: i8 => i64, gpu_u16_scans: u16 => u64,
                       gpu_i16_scans: i16 => i64, gpu_u32_scans: u32 => u64, gpu_i32_scans: i32 => i64,
                       gpu_u64_scans: u64 => u64, gpu_i64_scans: i64 => i64, gpu_f32_scans: f32 => f32,
                       gpu_f64_scans: f64 => f64);

#[test]
fn gpu_both_look_backs_agree_on_integers_and_floats_repeat_bit_for_bit() {
    let Some(gpu) = cuda() else { return };
    // Far more tiles than can be resident: the look-back waits on running tiles only.
    let n = (1 << 24) + 3;
    let xs: Vec<i32> = data(n, 4);
    let none = None::<&[u32]>;
    let want: Vec<i64> = reference::scan(&xs, none, ScanOp::Sum, &ScanOptions::default()).unwrap();
    for det in [false, true] {
        let got: Vec<i64> = gpu.scan_vec(&xs, ScanOp::Sum, ScanOptions::default().with_deterministic(det)).unwrap();
        assert_eq!(got, want, "deterministic={det}");
    }
    let fs: Vec<f32> = data(n, 5);
    let keys = runs(n, 100_000, 3);
    for det in [true, false] {
        let options = ScanOptions::default().with_deterministic(det);
        let first: Vec<f32> = gpu.scan_vec(&fs, ScanOp::Sum, options).unwrap();
        let want: Vec<f32> = reference::scan(&fs, none, ScanOp::Sum, &options).unwrap();
        compare(&fs, &first, &want, ScanOp::Sum, "f32 2^24");
        let first_key: Vec<f32> = gpu.scan_by_key_vec(&keys, &fs, ScanOp::Sum, options).unwrap();
        if det {
            for _ in 0..3 {
                let again: Vec<f32> = gpu.scan_vec(&fs, ScanOp::Sum, options).unwrap();
                assert!(same_bits(&first, &again), "deterministic float scans repeat");
                let again: Vec<f32> = gpu.scan_by_key_vec(&keys, &fs, ScanOp::Sum, options).unwrap();
                assert!(same_bits(&first_key, &again), "deterministic float scans by key repeat");
            }
        }
    }
}

/// The deterministic plain sum's tile prefixes are the left fold of the tiles' sums (the ordered
/// look-back), the order of a sequential sum: with one nonzero value a tile, at the tile's start,
/// every output is the sequential running sum bit for bit, inclusive and exclusive. 1,500 tiles
/// and a partial one: more than a look-back's 128 predecessors a round, and more than the blocks
/// resident at once. Also on a device whose look-back keeps 256 tiles of history (two rounds),
/// so that tiles of the first wave start again; for a custom `a + b` in its own, smaller tiles
/// (6 blocks a multiprocessor: more tiles resident than the default history holds); and the
/// fixed groups (a tree over each group of 32 tiles), which round differently: the check can
/// fail.
#[test]
fn gpu_deterministic_plain_sums_fold_tiles_left_to_right() {
    let Some(gpu) = cuda() else { return };
    let f32_type = tally::ElementType::F32;
    let tuning = tally::Tuning::default();
    let tile_of = |op| scan_policy(f32_type, f32_type, op, 0, 1 << 28, &tuning).expect("policy").tile as usize;
    // Values with three decimals up to 1,000 in magnitude at the start of each tile, zeros
    // between: the running sum (a random walk to tens of thousands) rounds at almost every tile.
    let input = |tile: usize| {
        let n = 1500 * tile + 7;
        let mut r = common::Rng(77);
        let mut xs = vec![0.0f32; n];
        for start in (0..n).step_by(tile) {
            xs[start] = ((r.next() % 2_000_001) as f32 - 1e6) * 1e-3;
        }
        xs[0] = 1.5;
        xs
    };
    let first_difference = |got: &[f32], want: &[f32]| {
        assert_eq!(got.len(), want.len());
        got.iter().zip(want).position(|(g, w)| g.to_bits() != w.to_bits())
    };
    let env = DeviceOptions::from_env();
    let mut short = env.clone();
    short.nvrtc_options.push("-DTALLY_LOOKBACK_ORDERED_HISTORY=256".into());
    let fixed = DeviceOptions { tuning: Tuning { scan_ordered: Some(false), ..env.tuning.clone() }, ..env.clone() };
    let open = |options: DeviceOptions| Backend::Cuda(CudaDevice::with_options(options).unwrap());
    let tile = tile_of(ScanKernelOp::Sum);
    let xs = input(tile);
    let none = None::<&[u32]>;
    for (backend, what) in [(gpu.clone(), "default"), (open(short), "a history of 256 tiles")] {
        let dev = backend.cuda_device().unwrap().clone();
        for exclusive in [false, true] {
            let options = ScanOptions { exclusive, ..ScanOptions::default().with_deterministic(true) };
            let plan = ScanPlan::<f32, f32>::new(&dev, ScanOp::Sum, options, xs.len()).unwrap();
            assert!(plan.deterministic() && plan.policy().ordered && plan.policy().tile as usize == tile);
            let got: Vec<f32> = backend.scan_vec(&xs, ScanOp::Sum, options).unwrap();
            let want: Vec<f32> = reference::scan(&xs, none, ScanOp::Sum, &options).unwrap();
            let bad = first_difference(&got, &want);
            assert!(bad.is_none(), "{what}, exclusive={exclusive}: first difference at {bad:?} (tile {tile})");
        }
    }
    let by_groups = open(fixed);
    let det = ScanOptions::default().with_deterministic(true);
    let plan = ScanPlan::<f32, f32>::new(by_groups.cuda_device().unwrap(), ScanOp::Sum, det, xs.len()).unwrap();
    assert!(!plan.policy().ordered);
    let got: Vec<f32> = by_groups.scan_vec(&xs, ScanOp::Sum, det).unwrap();
    let want: Vec<f32> = reference::scan(&xs, none, ScanOp::Sum, &det).unwrap();
    assert!(first_difference(&got, &want).is_some(), "fixed groups: a tree of tile sums, other bits");
    // A custom sum: deterministic by default, in v11's tiles.
    let custom_tile = tile_of(ScanKernelOp::Custom);
    let cs = input(custom_tile);
    let add = CustomOp::new("a + b", "0", 0.0f32, |a: f32, b: f32| a + b);
    for options in [ScanOptions::default(), ScanOptions::exclusive()] {
        let got = gpu.scan_custom_vec(&cs, &add, options).unwrap();
        let want = reference::scan_with(&cs, none, 0.0f32, options.exclusive, |a, b| a + b);
        let bad = first_difference(&got, &want);
        assert!(bad.is_none(), "custom a + b, {options:?}: first difference at {bad:?} (tile {custom_tile})");
    }
}

/// Segments longer than a group (32 tiles) and a super-group (1024 tiles) of the look-back,
/// between stretches where every tile has a segment head: tiles whose predecessors absorb what
/// came before stop looking back early, the others read every level. Integer sums are exact
/// (into i64: 128-bit states, one look-back; into i32: 64-bit, split); the f32 sums' tolerance
/// grows with the running magnitude, so they check little more than that the bits repeat.
#[test]
fn gpu_scans_by_key_across_segments_longer_than_look_back_groups() {
    let Some(gpu) = cuda() else { return };
    let n = (1 << 24) + 3;
    let mut keys: Vec<u32> = Vec::with_capacity(n);
    let mut segment = |len: usize, key: u32| keys.extend(std::iter::repeat_n(key, len));
    segment(6_000_000, 1);
    for k in 0..250_000u32 {
        segment(8, 2 + k);
    }
    segment(3_000_000, 7);
    keys.extend(runs(4_000_000, 5000, 9).iter().map(|k| k + 1_000_000));
    let rest = n - keys.len();
    keys.extend(std::iter::repeat_n(3u32, rest));
    let xs: Vec<i32> = data(n, 21);
    let fs: Vec<f32> = data(n, 22);
    for det in [false, true] {
        let options = ScanOptions::default().with_deterministic(det);
        let got: Vec<i64> = gpu.scan_by_key_vec(&keys, &xs, ScanOp::Sum, options).unwrap();
        let want: Vec<i64> = reference::scan(&xs, Some(&keys[..]), ScanOp::Sum, &options).unwrap();
        assert_eq!(got, want, "i32 into i64 by key, deterministic={det}");
        let excl = ScanOptions { exclusive: true, ..options };
        let got: Vec<i64> = gpu.scan_by_key_vec(&keys, &xs, ScanOp::Sum, excl).unwrap();
        let want: Vec<i64> = reference::scan(&xs, Some(&keys[..]), ScanOp::Sum, &excl).unwrap();
        assert_eq!(got, want, "exclusive i32 into i64 by key, deterministic={det}");
        // Into i32 (4-byte outputs: 64-bit states, the split look-back), exact.
        let same_width = options.with_wrapping(true);
        let got: Vec<i32> = gpu.scan_by_key_vec(&keys, &xs, ScanOp::Sum, same_width).unwrap();
        let want: Vec<i32> = reference::scan(&xs, Some(&keys[..]), ScanOp::Sum, &same_width).unwrap();
        assert_eq!(got, want, "i32 into i32 by key, deterministic={det}");
        let first: Vec<f32> = gpu.scan_by_key_vec(&keys, &fs, ScanOp::Sum, options).unwrap();
        let want: Vec<f32> = reference::scan(&fs, Some(&keys[..]), ScanOp::Sum, &options).unwrap();
        compare(&fs, &first, &want, ScanOp::Sum, "f32 by key, long segments");
        if det {
            let again: Vec<f32> = gpu.scan_by_key_vec(&keys, &fs, ScanOp::Sum, options).unwrap();
            assert!(same_bits(&first, &again), "deterministic float scans by key repeat");
        }
    }
}

/// The f32 sum by key in its own tiles (its policy's: 12,288 items since v27, so super-groups of
/// 1,024 tiles, 12.6M items) over three super-groups, in both look-backs, inclusive and
/// exclusive. The first segment runs 40 tiles into the second super-group, so that the tiles of
/// its second and later groups there combine the first super-group's total, their group
/// predecessors' totals and their tile predecessors'; then runs of 8 (a head in every tile);
/// the last segment covers the whole third super-group, so that its last tile, which publishes
/// its running total, reads the second's. The values are -1, 0 and 1 and no segment is longer
/// than 2^24, so every prefix of a segment is an integer that f32 holds exactly, whatever the
/// order of additions: the sums are compared bit for bit.
#[test]
fn gpu_f32_sums_by_key_exact_across_super_groups() {
    let Some(gpu) = cuda() else { return };
    let f32_type = tally::ElementType::F32;
    let tuning = tally::Tuning::default();
    // The tiles of sizes past `SMALL_KEYED_MAX_ITEMS`, as `n` below is.
    let tile = scan_policy(f32_type, f32_type, ScanKernelOp::Sum, 4, 1 << 30, &tuning).expect("policy").tile as usize;
    let super_group = 1024 * tile;
    let n = 3 * super_group + tile / 2 + 3;
    // (length, key) of each segment, or of each run of 8.
    let mut segments = vec![(super_group + 40 * tile + 7, 1u32)];
    let runs_of_8 = |from_tile: usize, to_tile: usize, first_key: u32| {
        (0..(to_tile - from_tile) * tile / 8).map(move |k| (8, first_key + k as u32))
    };
    segments.extend(runs_of_8(1064, 1072, 10));
    segments.push((2040 * tile - 1072 * tile - 7, 2));
    segments.extend(runs_of_8(2040, 2044, 100_000));
    segments.push((n - 2044 * tile, 3));
    assert!(segments.iter().all(|&(len, _)| len < 1 << 24));
    let keys: Vec<u32> = segments.iter().flat_map(|&(len, key)| std::iter::repeat_n(key, len)).collect();
    assert_eq!(keys.len(), n);
    let xs: Vec<f32> = common::draw(n, 31, |r| (r.next() % 3) as f32 - 1.0);
    for det in [false, true] {
        for exclusive in [false, true] {
            let options = ScanOptions { exclusive, ..ScanOptions::default().with_deterministic(det) };
            let got: Vec<f32> = gpu.scan_by_key_vec(&keys, &xs, ScanOp::Sum, options).unwrap();
            let want: Vec<f32> = reference::scan(&xs, Some(&keys[..]), ScanOp::Sum, &options).unwrap();
            let first_bad = got.iter().zip(&want).position(|(g, w)| g.to_bits() != w.to_bits());
            assert!(
                got.len() == want.len() && first_bad.is_none(),
                "f32 by key, deterministic={det}, exclusive={exclusive}: first difference at {first_bad:?}"
            );
        }
    }
}

#[test]
fn gpu_in_place_poisoned_and_misaligned() {
    let Some(gpu) = cuda() else { return };
    let dev = gpu.cuda_device().unwrap().clone();
    let stream = dev.stream();
    let n = 100 * 4096 + 77;
    let xs: Vec<f32> = data(n, 8);
    let none = None::<&[u32]>;
    for start in 0..5 {
        let ys = &xs[start..];
        let buf = stream.upload(&xs, "input").unwrap();
        let view = buf.view();
        let view = view.slice(start..).unwrap();
        let mut plan = ScanPlan::<f32, f32>::new(&dev, ScanOp::Max, ScanOptions::default(), ys.len()).unwrap();
        let mut out = stream.upload(&vec![f32::from_bits(0xa5a5_a5a5); ys.len()], "poisoned").unwrap();
        plan.launch(stream, &view, &mut out.view_mut()).unwrap();
        plan.read(stream).unwrap();
        let want: Vec<f32> = reference::scan(ys, none, ScanOp::Max, &ScanOptions::default()).unwrap();
        assert!(same_bits(&stream.download(&out.view()).unwrap(), &want), "start {start}");
        // In place, on a misaligned view of a buffer.
        let mut slice = stream.upload(&xs, "data").unwrap().into_cuda_slice();
        let mut sub = DeviceViewMut::from(slice.slice_mut(start..n));
        gpu.scan_device_in_place(&mut sub, ScanOp::Max, ScanOptions::default()).unwrap();
        assert!(same_bits(&stream.download(&sub.as_view()).unwrap(), &want), "in place, start {start}");
    }
    let mut host = xs.clone();
    gpu.scan_in_place(&mut host, ScanOp::Sum, ScanOptions::exclusive()).unwrap();
    let want: Vec<f32> = reference::scan(&xs, none, ScanOp::Sum, &ScanOptions::exclusive()).unwrap();
    compare(&xs, &host, &want, ScanOp::Sum, "host in place");
    assert_eq!(host[0], 0.0);
}

#[test]
fn gpu_overflow_is_detected() {
    let Some(gpu) = cuda() else { return };
    let n = 50 * 2048 + 3;
    let mut xs = vec![1i64 << 40; n];
    xs[40 * 2048 + 5] = i64::MAX - (1 << 45);
    for det in [false, true] {
        let options = ScanOptions::default().with_deterministic(det);
        let r = gpu.scan_vec::<i64, i64>(&xs, ScanOp::Sum, options);
        assert!(matches!(r, Err(Error::Overflow(_))), "{r:?}");
        let wrapped: Vec<i64> = gpu.scan_vec(&xs, ScanOp::Sum, options.with_wrapping(true)).unwrap();
        let none = None::<&[u32]>;
        assert_eq!(wrapped, reference::scan_with(&xs, none, 0i64, false, |a, b| a.wrapping_add(b)));
    }
    let fine: Vec<i64> = data(n, 1);
    assert!(gpu.cumsum_vec(&fine).is_ok());
    let us = vec![u64::MAX / 3; 4];
    assert!(matches!(gpu.cumsum_vec(&us), Err(Error::Overflow(_))));
}

#[test]
fn gpu_custom_scans() {
    let Some(gpu) = cuda() else { return };
    let xs: Vec<i64> = data(300_001, 2);
    let last = CustomOp::new("b", "0", 0i64, |_a: i64, b: i64| b);
    assert_eq!(gpu.scan_custom_vec(&xs, &last, ScanOptions::default()).unwrap(), xs);
    let xor = CustomOp::new("a ^ b", "0", 0i64, |a: i64, b: i64| a ^ b);
    let cpu = Backend::cpu();
    for options in [ScanOptions::default(), ScanOptions::exclusive()] {
        assert_eq!(gpu.scan_custom_vec(&xs, &xor, options).unwrap(), cpu.scan_custom_vec(&xs, &xor, options).unwrap());
    }
    let fs: Vec<f32> = data(300_001, 3);
    let absmax = CustomOp::new("fmaxf(fabsf(a), fabsf(b))", "0", 0.0f32, |a: f32, b: f32| a.abs().max(b.abs()));
    let got = gpu.scan_custom_vec(&fs, &absmax, ScanOptions::default()).unwrap();
    assert!(same_bits(&got, &cpu.scan_custom_vec(&fs, &absmax, ScanOptions::default()).unwrap()));
}

#[test]
fn gpu_plan_runs_many_times() {
    let Some(gpu) = cuda() else { return };
    let dev = gpu.cuda_device().unwrap().clone();
    let stream = dev.stream();
    let n = (1 << 22) + 9;
    let xs: Vec<i32> = data(n, 6);
    let keys = runs(n, 300, 2);
    let input = stream.upload(&xs, "input").unwrap();
    let k = stream.upload(&keys, "keys").unwrap();
    let mut out = stream.alloc::<i64>(n, "out").unwrap();
    let mut plan = ScanPlan::<i32, i64>::by_key::<u32>(&dev, ScanOp::Sum, ScanOptions::default(), n).unwrap();
    let want: Vec<i64> = reference::scan(&xs, Some(&keys), ScanOp::Sum, &ScanOptions::default()).unwrap();
    for _ in 0..3 {
        plan.launch_by_key(stream, &k.view(), &input.view(), &mut out.view_mut()).unwrap();
        plan.read(stream).unwrap();
        assert_eq!(stream.download(&out.view()).unwrap(), want);
    }
    assert!(plan.launch(stream, &input.view(), &mut out.view_mut()).is_err(), "a keyed plan needs keys");
}

/// More than 2^31 elements (u8 into u64: 9 bytes each, about 19 GB; then u32 into u32): only
/// where memory allows.
#[test]
fn gpu_more_than_2_pow_31_elements() {
    let Some(gpu) = cuda() else { return };
    let dev = gpu.cuda_device().unwrap().clone();
    let n = (1usize << 31) + 4099;
    let (free, _) = cudarc::driver::result::mem_get_info().unwrap_or((0, 0));
    if free < 9 * n + (2 << 30) {
        eprintln!("skipping: {free} bytes free, {} needed", 9 * n + (2 << 30));
        return;
    }
    // prefix(i) of 0, 1, 2, 0, 1, 2, ...: 3 per whole cycle, 1 more after a 0 and a 1.
    let expect = |i: usize| 3 * ((i + 1) / 3) as u64 + ((i + 1) % 3 == 2) as u64;
    scan_cycle_of_three::<u8, u64>(&dev, n, ScanOptions::default(), |i| (i % 3) as u8, expect);
    // A u32 sum into u32 (a same-width sum in tiles held in registers: 8 bytes an element, about
    // 17 GB); its running sums stay below 2^32, so they are exact.
    let wrapping = ScanOptions::default().with_wrapping(true);
    scan_cycle_of_three::<u32, u32>(&dev, n, wrapping, |i| (i % 3) as u32, |i| expect(i) as u32);
}

/// Scans the `n` elements `item(i)` into `O` and compares windows at both ends and around
/// 2^31 with `want(i)` (see [`gpu_more_than_2_pow_31_elements`]).
fn scan_cycle_of_three<T, O>(
    dev: &std::sync::Arc<CudaDevice>,
    n: usize,
    options: ScanOptions,
    item: impl Fn(usize) -> T,
    want: impl Fn(usize) -> O,
) where
    T: tally::scan::ScanInto<O> + cudarc::driver::DeviceRepr,
    O: tally::scan::ScanValue + cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + std::fmt::Debug,
{
    let stream = dev.stream();
    let xs: Vec<T> = (0..n).map(item).collect();
    let input = stream.upload(&xs, "input").unwrap();
    drop(xs);
    let mut out = stream.alloc::<O>(n, "out").unwrap();
    let mut plan = ScanPlan::<T, O>::new(dev, ScanOp::Sum, options, n).unwrap();
    plan.launch(stream, &input.view(), &mut out.view_mut()).unwrap();
    plan.read(stream).unwrap();
    for at in [0usize, 4095, 1 << 31, (1 << 31) - 1, n - 4096] {
        let view = out.view();
        let got = stream.download(&view.slice(at..at + 4096.min(n - at)).unwrap()).unwrap();
        for (j, g) in got.iter().enumerate() {
            assert_eq!(*g, want(at + j), "{} element {}", std::any::type_name::<O>(), at + j);
        }
    }
}

/// Kept plans launched again and again on new data (2^24 + 3 elements: more than 1,024 tiles,
/// every level of the look-back). A plan's first launch takes its tile states from the
/// workspace, its second zeroes a set of its own, and every later one finds the set that the
/// launch before cleared in its kernel; so data that changes each round would meet a stale
/// state there, and after each launch from the second the set the next will use is checked
/// for zeros wherever a launch reads it. Between the kept plans' launches one-off scans write
/// over the workspace; the last round launches on a second stream, where the plan starts again
/// from the workspace. Poisoned outputs; integers exactly, deterministic f32 sums bit for bit
/// with a one-off scan.
#[test]
fn gpu_kept_plans_find_their_tile_states_cleared_by_the_launch_before() {
    let Some(gpu) = cuda() else { return };
    let dev = gpu.cuda_device().unwrap().clone();
    let stream = dev.stream();
    let (n, small) = common::kept_plan_len();
    let none = None::<&[u32]>;
    let (det, fast) =
        (ScanOptions::default().with_deterministic(true), ScanOptions::default().with_deterministic(false));
    let mut f32_det = ScanPlan::<f32, f32>::new(&dev, ScanOp::Sum, det, n).unwrap();
    let mut f32_fast = ScanPlan::<f32, f32>::new(&dev, ScanOp::Sum, fast, n).unwrap();
    let mut wide = ScanPlan::<i32, i64>::new(&dev, ScanOp::Sum, ScanOptions::default(), n).unwrap();
    let mut max_by_key = ScanPlan::<i32, i32>::by_key::<u32>(&dev, ScanOp::Max, ScanOptions::default(), n).unwrap();
    // The f32 sum by key (its small shape under TALLY_SMALL), and a widening sum short enough
    // for its small shape.
    let mut f32_by_key = ScanPlan::<f32, f32>::by_key::<u32>(&dev, ScanOp::Sum, det, n).unwrap();
    let m = n.min(SMALL_WIDENING_MAX_ITEMS as usize);
    let mut wide_small = ScanPlan::<i32, i64>::new(&dev, ScanOp::Sum, ScanOptions::default(), m).unwrap();
    assert!(small || f32_det.policy().states.tiles > 1024 && wide.policy().states.tiles > 1024);
    let mut f_in = stream.alloc::<f32>(n, "f32 input").unwrap();
    let mut i_in = stream.alloc::<i32>(n, "i32 input").unwrap();
    let mut k_in = stream.alloc::<u32>(n, "keys").unwrap();
    let mut f_out = stream.alloc::<f32>(n, "f32 output").unwrap();
    let mut wide_out = stream.alloc::<i64>(n, "i64 output").unwrap();
    let mut i_out = stream.alloc::<i32>(n, "i32 output").unwrap();
    for round in 0..5u64 {
        let fs: Vec<f32> = data(n, 100 + round);
        let is: Vec<i32> = data(n, 200 + round);
        let ks = runs(n, 1 + 3000 * round, round);
        stream.copy_to_device(&fs, &mut f_in.view_mut()).unwrap();
        stream.copy_to_device(&is, &mut i_in.view_mut()).unwrap();
        stream.copy_to_device(&ks, &mut k_in.view_mut()).unwrap();
        for (plan, options) in [(&mut f32_det, det), (&mut f32_fast, fast)] {
            stream.copy_to_device(&vec![f32::NAN; n], &mut f_out.view_mut()).unwrap();
            plan.launch(stream, &f_in.view(), &mut f_out.view_mut()).unwrap();
            plan.read(stream).unwrap();
            let zeroed = plan.next_tile_states_zeroed(stream).unwrap();
            assert_eq!(zeroed, (round > 0).then_some(true), "round {round}: the next launch's tile states");
            let got = stream.download(&f_out.view()).unwrap();
            let want: Vec<f32> = reference::scan(&fs, none, ScanOp::Sum, &options).unwrap();
            compare(&fs, &got, &want, ScanOp::Sum, &format!("f32 round {round} {options:?}"));
            if plan.deterministic() {
                let one_off: Vec<f32> = gpu.scan_vec(&fs, ScanOp::Sum, options).unwrap();
                assert!(same_bits(&got, &one_off), "round {round}: the kept plan's bits as a one-off scan's");
            }
        }
        stream.copy_to_device(&vec![i64::MIN; n], &mut wide_out.view_mut()).unwrap();
        wide.launch(stream, &i_in.view(), &mut wide_out.view_mut()).unwrap();
        wide.read(stream).unwrap();
        assert_eq!(wide.next_tile_states_zeroed(stream).unwrap(), (round > 0).then_some(true), "round {round}");
        let want: Vec<i64> = reference::scan(&is, none, ScanOp::Sum, &ScanOptions::default()).unwrap();
        assert_eq!(stream.download(&wide_out.view()).unwrap(), want, "i32 into i64, round {round}");
        let _: Vec<i64> = gpu.scan_vec(&is[..n / 3], ScanOp::Sum, ScanOptions::default()).unwrap();
        stream.copy_to_device(&vec![i32::MIN + 1; n], &mut i_out.view_mut()).unwrap();
        max_by_key.launch_by_key(stream, &k_in.view(), &i_in.view(), &mut i_out.view_mut()).unwrap();
        max_by_key.read(stream).unwrap();
        let zeroed = max_by_key.next_tile_states_zeroed(stream).unwrap();
        assert_eq!(zeroed, (round > 0).then_some(true), "round {round}");
        let want: Vec<i32> = reference::scan(&is, Some(&ks), ScanOp::Max, &ScanOptions::default()).unwrap();
        assert_eq!(stream.download(&i_out.view()).unwrap(), want, "i32 max by key, round {round}");
        stream.copy_to_device(&vec![f32::NAN; n], &mut f_out.view_mut()).unwrap();
        f32_by_key.launch_by_key(stream, &k_in.view(), &f_in.view(), &mut f_out.view_mut()).unwrap();
        f32_by_key.read(stream).unwrap();
        let zeroed = f32_by_key.next_tile_states_zeroed(stream).unwrap();
        assert_eq!(zeroed, (round > 0).then_some(true), "round {round}");
        let want: Vec<f32> = reference::scan(&fs, Some(&ks), ScanOp::Sum, &det).unwrap();
        let got = stream.download(&f_out.view()).unwrap();
        compare(&fs, &got, &want, ScanOp::Sum, &format!("f32 sum by key, round {round}"));
        stream.copy_to_device(&vec![i64::MIN; n], &mut wide_out.view_mut()).unwrap();
        {
            let mut whole = wide_out.view_mut();
            let mut part = whole.slice_mut(..m).unwrap();
            wide_small.launch(stream, &i_in.slice(0..m).unwrap(), &mut part).unwrap();
        }
        wide_small.read(stream).unwrap();
        assert_eq!(wide_small.next_tile_states_zeroed(stream).unwrap(), (round > 0).then_some(true), "round {round}");
        let want: Vec<i64> = reference::scan(&is[..m], none, ScanOp::Sum, &ScanOptions::default()).unwrap();
        let got = stream.download(&wide_out.view()).unwrap();
        assert_eq!(got[..m], want[..], "i32 into i64 of {m}, round {round}");
        assert!(got[m..].iter().all(|&x| x == i64::MIN), "past the {m} elements, round {round}");
    }
    // Another stream: the plan's sets belong to the first, so it starts again from the
    // workspace, then keeps sets of the second stream's.
    let other = dev.new_stream().unwrap();
    for launch in 0..3 {
        other.copy_to_device(&vec![f32::NAN; n], &mut f_out.view_mut()).unwrap();
        f32_det.launch(&other, &f_in.view(), &mut f_out.view_mut()).unwrap();
        f32_det.read(&other).unwrap();
        assert_eq!(f32_det.next_tile_states_zeroed(&other).unwrap(), (launch > 0).then_some(true));
        let got = other.download(&f_out.view()).unwrap();
        let fs: Vec<f32> = data(n, 104);
        assert!(same_bits(&got, &gpu.scan_vec(&fs, ScanOp::Sum, det).unwrap()), "launch {launch} on another stream");
    }
}

/// A kept checked sum reports each launch's overflow and none of an earlier launch's: from its
/// second launch its flag is a word of the tile states' header, zeroed with them by the launch
/// before. Launches that overflow and launches that do not, each read after it, in an order
/// where a launch that does not overflow follows one that did on each of the two sets (a flag
/// left set would show there); the outputs of those that do not are compared whole.
#[test]
fn gpu_kept_checked_sums_report_each_launchs_overflow() {
    let Some(gpu) = cuda() else { return };
    let dev = gpu.cuda_device().unwrap().clone();
    let stream = dev.stream();
    let n = (1 << 20) + 5;
    let none = None::<&[u32]>;
    let mut plan = ScanPlan::<i64, i64>::new(&dev, ScanOp::Sum, ScanOptions::default(), n).unwrap();
    assert!(plan.policy().states.tiles > 32, "more than one group of tiles");
    let mut input = stream.alloc::<i64>(n, "input").unwrap();
    let mut out = stream.alloc::<i64>(n, "output").unwrap();
    for round in 0..6u64 {
        // Rounds 1, 3, 5 use one kept set, 2 and 4 the other.
        let overflows = [false, true, true, false, false, true][round as usize];
        let mut xs: Vec<i64> = data(n, 800 + round);
        if overflows {
            // Whatever the prefix before them (|x| < 2^39, about 2^20 of them: under 2^59), two of
            // these leave i64.
            xs[n / 2] = i64::MAX;
            xs[n / 2 + 1] = i64::MAX;
        }
        stream.copy_to_device(&xs, &mut input.view_mut()).unwrap();
        stream.copy_to_device(&vec![i64::MIN; n], &mut out.view_mut()).unwrap();
        plan.launch(stream, &input.view(), &mut out.view_mut()).unwrap();
        let r = plan.read(stream);
        assert_eq!(matches!(r, Err(Error::Overflow(_))), overflows, "round {round}: {r:?}");
        if !overflows {
            let want: Vec<i64> = reference::scan(&xs, none, ScanOp::Sum, &ScanOptions::default()).unwrap();
            assert_eq!(stream.download(&out.view()).unwrap(), want, "round {round}");
        }
        assert_eq!(plan.next_tile_states_zeroed(stream).unwrap(), (round > 0).then_some(true), "round {round}");
    }
}
