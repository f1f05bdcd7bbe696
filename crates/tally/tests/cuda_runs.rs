//! The run primitives on the GPU against the plain sequential reference (every listed
//! specialisation of `runs.cu` is compiled by the registry's check in `nvrtc_compile.rs`).
//! Integers, minima, maxima, counts and keys exactly; float sums within the bound any two
//! orders of additions satisfy (the GPU combines a run that crosses threads by a fixed tree).

mod common;
mod runs_common;
mod scan_common;

use runs_common::*;
use scan_common::data;
use tally::runs::policy::{policy, RunsKernelOp};
use tally::runs::reference;
use tally::{Backend, DeviceOptions, Error, RunKey, RunOp, RunsPlan};

fn cuda() -> Option<Backend> {
    common::gpu().map(Backend::Cuda)
}

/// Elements per tile of unique and encode over keys of `K`, under this process's tuning (the
/// environment's `TALLY_COMPACT_*` knobs, as the plans see them).
fn tile<K: RunKey>() -> usize {
    let tuning = DeviceOptions::from_env().tuning;
    policy(K::TYPE, None, RunsKernelOp::Encode, 0, &tuning).unwrap().tile as usize
}

/// TALLY_SMALL=1 (under compute-sanitizer): every case, at small sizes.
fn small() -> bool {
    std::env::var("TALLY_SMALL").as_deref() == Ok("1")
}

/// Sizes around the tile and many tiles.
fn sizes(tile: usize) -> Vec<usize> {
    let mut v = vec![0, 1, 33, tile - 1, tile, tile + 1, 31 * tile + 5, 1100 * tile + 17];
    if small() {
        v.pop();
    }
    v
}

macro_rules! every_key_type_on_the_gpu {
    ($($name:ident: $k:ty),*) => {$(
        #[test]
        fn $name() {
            let Some(gpu) = cuda() else { return };
            let t = tile::<$k>();
            for (s, n) in sizes(t).into_iter().enumerate() {
                for max_run in [1, 8, 3 * t as u64] {
                    let keys: Vec<$k> = keys(n, max_run, s as u64);
                    let what = format!("{} n={n} runs<={max_run}", stringify!($k));
                    check_runs(&gpu, &keys, &what);
                    check_reduce::<$k, f32, f32>(&gpu, &keys, s as u64, false, &what);
                }
                // Runs ending exactly at tile edges, one tile long, longer than a tile.
                let edges: Vec<$k> = edge_keys(n, t);
                check_runs(&gpu, &edges, &format!("{} tile edges n={n}", stringify!($k)));
                check_reduce::<$k, i32, i64>(&gpu, &edges, 3, false, "tile edges");
            }
        }
    )*};
}
every_key_type_on_the_gpu!(gpu_u8_keys: u8, gpu_i8_keys: i8, gpu_u16_keys: u16, gpu_i16_keys: i16,
                           gpu_u32_keys: u32, gpu_i32_keys: i32, gpu_u64_keys: u64, gpu_i64_keys: i64,
                           gpu_f32_keys: f32, gpu_f64_keys: f64);

macro_rules! every_value_type_on_the_gpu {
    ($($name:ident: $v:ty => $w:ty),*) => {$(
        #[test]
        fn $name() {
            let Some(gpu) = cuda() else { return };
            let big = if small() { 20 * 4096 + 5 } else { 300 * 4096 + 5 };
            for (s, n) in [1usize, 4095, 4097, big].into_iter().enumerate() {
                let short: Vec<i32> = keys(n, 20, 7 + s as u64);
                check_reduce::<i32, $v, $w>(&gpu, &short, s as u64, false, stringify!($v));
                let long: Vec<u8> = keys(n, 6000, s as u64);
                check_reduce::<u8, $v, $w>(&gpu, &long, s as u64, false, stringify!($v));
                let wide: Vec<f64> = keys(n, 3, s as u64);
                check_reduce::<f64, $v, $w>(&gpu, &wide, s as u64, false, stringify!($v));
            }
        }
    )*};
}
every_value_type_on_the_gpu!(gpu_u8_values: u8 => u64, gpu_i8_values: i8 => i64, gpu_u16_values: u16 => u64,
                             gpu_i16_values: i16 => i64, gpu_u32_values: u32 => u64,
                             gpu_i32_values: i32 => i64, gpu_u64_values: u64 => u64,
                             gpu_i64_values: i64 => i64, gpu_f32_values: f32 => f32,
                             gpu_f64_values: f64 => f64);

#[test]
fn gpu_nan_keys_are_runs_of_one_and_signed_zeros_join() {
    let Some(gpu) = cuda() else { return };
    for n in [12, 4097, 100 * 4096 + 7] {
        let f: Vec<f32> = special_keys(n);
        check_runs(&gpu, &f, "f32 specials");
        check_reduce::<f32, f64, f64>(&gpu, &f, 1, false, "f32 specials");
        let d: Vec<f64> = special_keys(n);
        check_runs(&gpu, &d, "f64 specials");
        check_reduce::<f64, i16, i64>(&gpu, &d, 2, false, "f64 specials");
    }
    let (_, s): (Vec<u8>, Vec<f32>) = gpu.reduce_by_key_vec(&[1u8, 1, 2], &[-0.0f32, -0.0, -0.0], RunOp::Sum).unwrap();
    assert_eq!(s.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), [(-0.0f32).to_bits(); 2], "-0.0 sums stay -0.0");
}

#[test]
fn gpu_float_sums_repeat_bit_for_bit() {
    let Some(gpu) = cuda() else { return };
    let n = if small() { (1 << 18) + 3 } else { (1 << 24) + 3 };
    let keys: Vec<u32> = keys(n, 100_000, 3);
    let values: Vec<f32> = data(n, 5);
    let first: (Vec<u32>, Vec<f32>) = gpu.reduce_by_key_vec(&keys, &values, RunOp::Sum).unwrap();
    let (want_keys, lengths) = reference::run_length_encode(&keys);
    let want = reference::reduce_by_key::<u32, f32, f32>(&keys, &values, RunOp::Sum).unwrap();
    assert_eq!(first.0, want_keys);
    close_sums(&values, &lengths, &first.1, &want.1, "f32 2^24");
    for _ in 0..3 {
        let again: (Vec<u32>, Vec<f32>) = gpu.reduce_by_key_vec(&keys, &values, RunOp::Sum).unwrap();
        assert!(same(&again.1, &first.1), "deterministic float sums repeat");
    }
}

#[test]
fn gpu_poisoned_misaligned_and_short_outputs() {
    let Some(gpu) = cuda() else { return };
    let dev = gpu.cuda_device().unwrap().clone();
    let stream = dev.stream();
    let n = 100 * 4096 + 77;
    let all_keys: Vec<i16> = keys(n + 4, 12, 8);
    let all_values: Vec<f64> = data(n + 4, 9);
    let keys_d = stream.upload(&all_keys, "keys").unwrap();
    let values_d = stream.upload(&all_values, "values").unwrap();
    const POISON: u64 = 0xa5a5_a5a5_a5a5_a5a5;
    for start in 0..4 {
        // Keys from element `start`, values from element `3 - start`: misaligned differently.
        let (ks, vs) = (&all_keys[start..start + n], &all_values[3 - start..3 - start + n]);
        let kv = keys_d.view();
        let kv = kv.slice(start..start + n).unwrap();
        let vv = values_d.view();
        let vv = vv.slice(3 - start..3 - start + n).unwrap();
        let (want_keys, want_lengths) = reference::run_length_encode(ks);
        let runs = want_keys.len();
        let mut out_keys = stream.upload(&vec![0x5a5au16 as i16; n], "poisoned keys").unwrap();
        let mut out_counts = stream.upload(&vec![POISON; n], "poisoned counts").unwrap();
        let mut plan = RunsPlan::<i16>::encode(&dev, n).unwrap();
        plan.launch_encode(stream, &kv, &mut out_keys.view_mut(), &mut out_counts.view_mut()).unwrap();
        assert_eq!(plan.read(stream).unwrap(), runs as u64);
        let got_keys = stream.download(&out_keys.view()).unwrap();
        let got_counts = stream.download(&out_counts.view()).unwrap();
        assert_eq!(&got_keys[..runs], &want_keys[..], "start {start}");
        assert_eq!(&got_counts[..runs], &want_lengths[..], "start {start}");
        assert!(got_keys[runs..].iter().all(|&k| k == 0x5a5a), "nothing written past the runs");
        assert!(got_counts[runs..].iter().all(|&c| c == POISON), "nothing written past the runs");
        // Reduce-by-key of misaligned keys and values (different offsets) into poisoned outputs.
        let mut out_values = stream.upload(&vec![f64::from_bits(POISON); n], "poisoned values").unwrap();
        let mut plan = RunsPlan::<i16, f64, f64>::reduce_by_key(&dev, RunOp::Max, n).unwrap();
        plan.launch_reduce(stream, &kv, &vv, &mut out_keys.view_mut(), &mut out_values.view_mut()).unwrap();
        assert_eq!(plan.read(stream).unwrap(), runs as u64);
        let got = stream.download(&out_values.view()).unwrap();
        let want = reference::reduce_by_key::<i16, f64, f64>(ks, vs, RunOp::Max).unwrap().1;
        assert!(same(&got[..runs], &want), "max, start {start}");
        assert!(got[runs..].iter().all(|v| v.to_bits() == POISON));
        // Outputs shorter than the runs: the first runs are written, and read says so.
        let short = runs / 2;
        let mut few_keys = stream.upload(&vec![0i16; short], "short keys").unwrap();
        let mut few_counts = stream.upload(&vec![0u64; short], "short counts").unwrap();
        let mut plan = RunsPlan::<i16>::encode(&dev, n).unwrap();
        plan.launch_encode(stream, &kv, &mut few_keys.view_mut(), &mut few_counts.view_mut()).unwrap();
        assert!(matches!(plan.read(stream), Err(Error::InvalidArgument(_))));
        assert_eq!(stream.download(&few_counts.view()).unwrap(), &want_lengths[..short]);
    }
}

#[test]
fn gpu_overflow_is_detected_and_plans_run_many_times() {
    let Some(gpu) = cuda() else { return };
    let n = 50 * 2048 + 3;
    let keys = vec![7u64; n];
    let mut values = vec![1i64 << 40; n];
    values[40 * 2048 + 5] = i64::MAX - (1 << 45);
    let r = gpu.reduce_by_key::<u64, i64, i64>(&keys, &values, RunOp::Sum);
    assert!(matches!(r, Err(Error::Overflow(_))), "{:?}", r.err());
    let split: Vec<u64> = (0..n as u64).map(|i| (i >= 40 * 2048 + 5) as u64 + (i > 40 * 2048 + 5) as u64).collect();
    let got: (Vec<u64>, Vec<i64>) = gpu.reduce_by_key_vec(&split, &values, RunOp::Sum).unwrap();
    assert_eq!(got, reference::reduce_by_key(&split, &values, RunOp::Sum).unwrap());
    let dev = gpu.cuda_device().unwrap().clone();
    let stream = dev.stream();
    let n = (1 << 22) + 9;
    let keys: Vec<i32> = runs_common::keys(n, 16, 2);
    let values: Vec<i32> = data(n, 6);
    let (kd, vd) = (stream.upload(&keys, "keys").unwrap(), stream.upload(&values, "values").unwrap());
    let mut out_keys = stream.alloc::<i32>(n, "out keys").unwrap();
    let mut out_values = stream.alloc::<i64>(n, "out values").unwrap();
    let mut plan = RunsPlan::<i32, i32, i64>::reduce_by_key(&dev, RunOp::Sum, n).unwrap();
    let want = reference::reduce_by_key::<i32, i32, i64>(&keys, &values, RunOp::Sum).unwrap();
    for _ in 0..3 {
        plan.launch_reduce(stream, &kd.view(), &vd.view(), &mut out_keys.view_mut(), &mut out_values.view_mut())
            .unwrap();
        let runs = plan.read(stream).unwrap() as usize;
        assert_eq!(stream.download(&out_keys.view()).unwrap()[..runs], want.0[..]);
        assert_eq!(stream.download(&out_values.view()).unwrap()[..runs], want.1[..]);
    }
    assert!(RunsPlan::<i32, i32, u64>::reduce_by_key(&dev, RunOp::Sum, n).is_err(), "i32 sums are not u64");
    let mut unique = RunsPlan::<i32>::unique(&dev, n).unwrap();
    let mut counts = stream.alloc::<u64>(n, "counts").unwrap();
    let r = unique.launch_encode(stream, &kd.view(), &mut out_keys.view_mut(), &mut counts.view_mut());
    assert!(r.is_err(), "a unique plan does not encode");
}

/// A kept checked sum (i64 by i32 keys) keeps its result words (the run count and the overflow
/// flag) in its kept tile states' header from its second launch: launches that overflow and
/// launches that do not, ordered so that a clean launch follows an overflowing one on each of
/// the two kept sets (a flag never cleared would fail it), each read after it; the clean ones'
/// outputs checked whole, poisoned past the runs; after each launch from the second, the set
/// the next will use checked for zeros, result words among them.
#[test]
fn gpu_kept_checked_sums_report_each_launchs_runs_and_overflow() {
    let Some(gpu) = cuda() else { return };
    let dev = gpu.cuda_device().unwrap().clone();
    let stream = dev.stream();
    let n = if small() { (1 << 17) + 5 } else { (1 << 20) + 5 };
    let mut plan = RunsPlan::<i32, i64, i64>::reduce_by_key(&dev, RunOp::Sum, n).unwrap();
    assert!(plan.policy().states.tiles > 32, "more than one group of tiles");
    let mut keys_in = stream.alloc::<i32>(n, "keys").unwrap();
    let mut values_in = stream.alloc::<i64>(n, "values").unwrap();
    let mut out_keys = stream.alloc::<i32>(n, "out keys").unwrap();
    let mut out_sums = stream.alloc::<i64>(n, "out sums").unwrap();
    for round in 0..6u64 {
        // Rounds 1, 3, 5 use one kept set, 2 and 4 the other.
        let overflows = [false, true, true, false, false, true][round as usize];
        // Runs of up to 8 in some rounds, up to 300 in others: a different count each round.
        let keys: Vec<i32> = runs_common::keys(n, 8 + 292 * (round % 2), 900 + round);
        let mut values: Vec<i64> = data(n, 700 + round);
        if overflows {
            // One run of two keys, both i64::MAX: its sum leaves i64 whatever the values are.
            let at = n / 2;
            let key = keys[at - 1].wrapping_add(1);
            let mut k = keys.clone();
            k[at] = key;
            k[at + 1] = key;
            if k[at + 2] == key {
                k[at + 2] = key.wrapping_add(1);
            }
            values[at] = i64::MAX;
            values[at + 1] = i64::MAX;
            stream.copy_to_device(&k, &mut keys_in.view_mut()).unwrap();
        } else {
            stream.copy_to_device(&keys, &mut keys_in.view_mut()).unwrap();
        }
        stream.copy_to_device(&values, &mut values_in.view_mut()).unwrap();
        stream.copy_to_device(&vec![i32::MIN; n], &mut out_keys.view_mut()).unwrap();
        stream.copy_to_device(&vec![i64::MIN; n], &mut out_sums.view_mut()).unwrap();
        let (k, v) = (&keys_in.view(), &values_in.view());
        plan.launch_reduce(stream, k, v, &mut out_keys.view_mut(), &mut out_sums.view_mut()).unwrap();
        let r = plan.read(stream);
        if overflows {
            assert!(matches!(r, Err(Error::Overflow(_))), "round {round}: {r:?}");
        } else {
            let want = reference::reduce_by_key::<i32, i64, i64>(&keys, &values, RunOp::Sum).unwrap();
            let runs = want.0.len();
            assert_eq!(r.unwrap() as usize, runs, "round {round}: runs");
            let got_keys = stream.download(&out_keys.view()).unwrap();
            let got_sums = stream.download(&out_sums.view()).unwrap();
            assert_eq!(got_keys[..runs], want.0[..], "round {round}: keys");
            assert_eq!(got_sums[..runs], want.1[..], "round {round}: sums");
            assert!(got_keys[runs..].iter().all(|&x| x == i32::MIN), "round {round}: keys past the runs");
            assert!(got_sums[runs..].iter().all(|&x| x == i64::MIN), "round {round}: sums past the runs");
        }
        assert_eq!(plan.next_tile_states_zeroed(stream).unwrap(), (round > 0).then_some(true), "round {round}");
        assert_eq!(plan.result_words_in_tile_states(), round > 0, "round {round}: where the result words went");
    }
}

/// More than 2^31 keys (u8, about 4.5 GB with the values): only where memory allows, and not
/// under compute-sanitizer (TALLY_SKIP_HUGE=1). Outputs sized for the runs, not the keys.
#[test]
fn gpu_more_than_2_pow_31_keys() {
    let Some(gpu) = cuda() else { return };
    if std::env::var("TALLY_SKIP_HUGE").as_deref() == Ok("1") {
        eprintln!("skipping 2^31 keys (TALLY_SKIP_HUGE=1)");
        return;
    }
    let dev = gpu.cuda_device().unwrap().clone();
    let n = (1usize << 31) + 4099;
    let (free, _) = cudarc::driver::result::mem_get_info().unwrap_or((0, 0));
    if free < 2 * n + (2 << 30) {
        eprintln!("skipping: {free} bytes free, {} needed", 2 * n + (2 << 30));
        return;
    }
    let stream = dev.stream();
    // Runs of 1000 (key i / 1000 mod 7), values i mod 3.
    let keys: Vec<u8> = (0..n).map(|i| ((i / 1000) % 7) as u8).collect();
    let kd = stream.upload(&keys, "keys").unwrap();
    drop(keys);
    let values: Vec<u8> = (0..n).map(|i| (i % 3) as u8).collect();
    let vd = stream.upload(&values, "values").unwrap();
    drop(values);
    let runs = n.div_ceil(1000);
    let mut out_keys = stream.alloc::<u8>(runs, "run keys").unwrap();
    let mut out_counts = stream.alloc::<u64>(runs, "run lengths").unwrap();
    let mut plan = RunsPlan::<u8>::encode(&dev, n).unwrap();
    plan.launch_encode(stream, &kd.view(), &mut out_keys.view_mut(), &mut out_counts.view_mut()).unwrap();
    assert_eq!(plan.read(stream).unwrap(), runs as u64);
    let counts = stream.download(&out_counts.view()).unwrap();
    let ks = stream.download(&out_keys.view()).unwrap();
    for r in 0..runs {
        assert_eq!(counts[r], 1000.min(n - 1000 * r) as u64, "run {r}");
        assert_eq!(ks[r], (r % 7) as u8, "run {r}");
    }
    let mut sums = stream.alloc::<u64>(runs, "run sums").unwrap();
    let mut plan = RunsPlan::<u8, u8, u64>::reduce_by_key(&dev, RunOp::Sum, n).unwrap();
    plan.launch_reduce(stream, &kd.view(), &vd.view(), &mut out_keys.view_mut(), &mut sums.view_mut()).unwrap();
    assert_eq!(plan.read(stream).unwrap(), runs as u64);
    let sums = stream.download(&sums.view()).unwrap();
    for (r, &s) in sums.iter().enumerate() {
        let want: u64 = (1000 * r..(1000 * r + 1000).min(n)).map(|i| (i % 3) as u64).sum();
        assert_eq!(s, want, "run {r}");
    }
    let mut unique = RunsPlan::<u8>::unique(&dev, n).unwrap();
    unique.launch_unique(stream, &kd.view(), &mut out_keys.view_mut()).unwrap();
    assert_eq!(unique.read(stream).unwrap(), runs as u64);
}

/// Kept plans launched again and again on new keys and values (2^24 + 3 elements, more than
/// 1,024 tiles: every level of the look-back). A plan's first launch takes its tile states from
/// the workspace, its second zeroes a set of its own, and every later one finds the set that
/// the launch before cleared in its kernel; a stale state would number this round's runs by an
/// earlier round's, and after each launch from the second the set the next will use is checked
/// for zeros wherever a launch reads it. One-off calls write over the workspace between
/// launches. Poisoned outputs, also past the runs; f32 sums bit for bit with a one-off call's
/// (the fixed look-back, which reads every level).
#[test]
fn gpu_kept_plans_find_their_tile_states_cleared_by_the_launch_before() {
    let Some(gpu) = cuda() else { return };
    let dev = gpu.cuda_device().unwrap().clone();
    let stream = dev.stream();
    let (n, small) = common::kept_plan_len();
    let mut unique = RunsPlan::<i32>::unique(&dev, n).unwrap();
    let mut encode = RunsPlan::<i32>::encode(&dev, n).unwrap();
    let mut sums = RunsPlan::<i32, i32, i64>::reduce_by_key(&dev, RunOp::Sum, n).unwrap();
    let mut float_sums = RunsPlan::<i32, f32, f32>::reduce_by_key(&dev, RunOp::Sum, n).unwrap();
    assert!(small || unique.policy().states.tiles > 1024 && sums.policy().states.tiles > 1024);
    let mut keys_in = stream.alloc::<i32>(n, "keys").unwrap();
    let mut values_in = stream.alloc::<i32>(n, "values").unwrap();
    let mut floats_in = stream.alloc::<f32>(n, "f32 values").unwrap();
    let mut out_keys = stream.alloc::<i32>(n, "out keys").unwrap();
    let mut out_counts = stream.alloc::<u64>(n, "out counts").unwrap();
    let mut out_sums = stream.alloc::<i64>(n, "out sums").unwrap();
    let mut out_floats = stream.alloc::<f32>(n, "out f32 sums").unwrap();
    for round in 0..5u64 {
        let keys: Vec<i32> = runs_common::keys(n, 2 + 20 * round, 400 + round);
        let values: Vec<i32> = data(n, 500 + round);
        let floats: Vec<f32> = data(n, 600 + round);
        stream.copy_to_device(&keys, &mut keys_in.view_mut()).unwrap();
        stream.copy_to_device(&values, &mut values_in.view_mut()).unwrap();
        stream.copy_to_device(&floats, &mut floats_in.view_mut()).unwrap();
        let cleared = |zeroed: Option<bool>, what: &str| {
            assert_eq!(zeroed, (round > 0).then_some(true), "{what}, round {round}: the next launch's states");
        };
        let (want_keys, want_counts) = reference::run_length_encode(&keys);
        let runs = want_keys.len();
        let poison_keys = vec![i32::MIN; n];
        stream.copy_to_device(&poison_keys, &mut out_keys.view_mut()).unwrap();
        unique.launch_unique(stream, &keys_in.view(), &mut out_keys.view_mut()).unwrap();
        assert_eq!(unique.read(stream).unwrap() as usize, runs, "unique, round {round}");
        cleared(unique.next_tile_states_zeroed(stream).unwrap(), "unique");
        let got = stream.download(&out_keys.view()).unwrap();
        assert_eq!(got[..runs], want_keys[..], "unique, round {round}");
        assert!(got[runs..].iter().all(|&k| k == i32::MIN), "unique past the runs, round {round}");
        let _ = gpu.unique_vec(&keys[..n / 3]).unwrap();
        stream.copy_to_device(&poison_keys, &mut out_keys.view_mut()).unwrap();
        stream.copy_to_device(&vec![u64::MAX; n], &mut out_counts.view_mut()).unwrap();
        encode.launch_encode(stream, &keys_in.view(), &mut out_keys.view_mut(), &mut out_counts.view_mut()).unwrap();
        assert_eq!(encode.read(stream).unwrap() as usize, runs, "encode, round {round}");
        cleared(encode.next_tile_states_zeroed(stream).unwrap(), "encode");
        assert_eq!(stream.download(&out_keys.view()).unwrap()[..runs], want_keys[..], "encode, round {round}");
        let got = stream.download(&out_counts.view()).unwrap();
        assert_eq!(got[..runs], want_counts[..], "encode, round {round}");
        assert!(got[runs..].iter().all(|&c| c == u64::MAX), "encode past the runs, round {round}");
        stream.copy_to_device(&vec![i64::MIN; n], &mut out_sums.view_mut()).unwrap();
        sums.launch_reduce(
            stream,
            &keys_in.view(),
            &values_in.view(),
            &mut out_keys.view_mut(),
            &mut out_sums.view_mut(),
        )
        .unwrap();
        assert_eq!(sums.read(stream).unwrap() as usize, runs, "sums, round {round}");
        cleared(sums.next_tile_states_zeroed(stream).unwrap(), "sums");
        let want = reference::reduce_by_key::<i32, i32, i64>(&keys, &values, RunOp::Sum).unwrap();
        assert_eq!(stream.download(&out_sums.view()).unwrap()[..runs], want.1[..], "sums, round {round}");
        stream.copy_to_device(&vec![f32::NAN; n], &mut out_floats.view_mut()).unwrap();
        let (k, v) = (&keys_in.view(), &floats_in.view());
        float_sums.launch_reduce(stream, k, v, &mut out_keys.view_mut(), &mut out_floats.view_mut()).unwrap();
        assert_eq!(float_sums.read(stream).unwrap() as usize, runs, "f32 sums, round {round}");
        cleared(float_sums.next_tile_states_zeroed(stream).unwrap(), "f32 sums");
        let got = stream.download(&out_floats.view()).unwrap()[..runs].to_vec();
        let want = reference::reduce_by_key::<i32, f32, f32>(&keys, &floats, RunOp::Sum).unwrap();
        close_sums(&floats, &want_counts, &got, &want.1, &format!("f32 sums, round {round}"));
        let one_off: (Vec<i32>, Vec<f32>) = gpu.reduce_by_key_vec(&keys, &floats, RunOp::Sum).unwrap();
        assert!(same(&got, &one_off.1), "round {round}: the kept plan's f32 sums as a one-off call's");
    }
}
