//! The selections on the GPU against the plain sequential reference (every listed
//! specialisation of `select.cu` is compiled by the registry's check in `nvrtc_compile.rs`):
//! every entry point and element type, sizes around the tile and many tiles, kept shares from
//! none to all, alternating and in long runs, poisoned outputs, misaligned views, plans launched
//! many times, more than 2^31 elements.

mod common;
mod select_common;

use select_common::*;
use tally::select::policy::{policy, SelectKernel};
use tally::select::reference;
use tally::{Backend, DeviceOptions, Predicate, SelectElement, SelectMode, SelectOptions, SelectPlan};

fn cuda() -> Option<Backend> {
    common::gpu().map(Backend::Cuda)
}

/// Elements per tile of every select kernel over `T`, under this process's tuning (the
/// environment's `TALLY_COMPACT_*` knobs, as the plans see them).
fn tiles<T: SelectElement>() -> Vec<usize> {
    let tuning = DeviceOptions::from_env().tuning;
    let mut tiles: Vec<usize> =
        SelectKernel::ALL.iter().map(|&k| policy(T::TYPE, k, 0, &tuning).unwrap().tile as usize).collect();
    tiles.sort_unstable();
    tiles.dedup();
    tiles
}

/// Sizes around every kernel's tile and many tiles; TALLY_SMALL=1 (under compute-sanitizer)
/// keeps those that exercise the tails and a few look-backs.
fn sizes<T: SelectElement>() -> Vec<usize> {
    let tiles = tiles::<T>();
    let largest = *tiles.last().unwrap();
    let mut v = vec![0, 1, 33, 31 * largest + 5];
    for tile in tiles {
        v.extend([tile - 1, tile, tile + 1]);
    }
    if std::env::var("TALLY_SMALL").as_deref() != Ok("1") {
        v.push(1100 * largest + 17);
    }
    v.sort_unstable();
    v.dedup();
    v
}

macro_rules! every_type_on_the_gpu {
    ($($name:ident: $t:ty),*) => {$(
        #[test]
        fn $name() {
            let Some(gpu) = cuda() else { return };
            for (k, n) in sizes::<$t>().into_iter().enumerate() {
                let xs: Vec<$t> = data(n, 11 + k as u64);
                for p in PREDICATES {
                    check_all(&gpu, &xs, p, "gpu");
                }
                check_all(&gpu, &alternating::<$t>(n, 1), "x == 1", "gpu alternating");
                check_all(&gpu, &alternating::<$t>(n, 7000), "x == 1", "gpu runs");
            }
        }
    )*};
}
every_type_on_the_gpu!(gpu_u8_select: u8, gpu_i8_select: i8, gpu_u16_select: u16, gpu_i16_select: i16,
                       gpu_u32_select: u32, gpu_i32_select: i32, gpu_u64_select: u64, gpu_i64_select: i64,
                       gpu_f32_select: f32, gpu_f64_select: f64);

#[test]
fn gpu_poisoned_outputs_and_misaligned_views() {
    let Some(gpu) = cuda() else { return };
    let dev = gpu.cuda_device().unwrap().clone();
    let stream = dev.stream();
    let n = 100 * 4096 + 77;
    let xs: Vec<f32> = data(n, 8);
    let p = Predicate::parse("x > 10 || isnan(x)").unwrap();
    let poison = f32::from_bits(0xa5a5_a5a5);
    let input = stream.upload(&xs, "input").unwrap();
    let flags: Vec<u8> = xs.iter().map(|&x| reference::passes(&p, x) as u8).collect();
    let flag_buf = stream.upload(&flags, "flags").unwrap();
    for start in 0..4 {
        let ys = &xs[start..];
        let view = input.view();
        let view = view.slice(start..).unwrap();
        let want = reference::select(ys, &p);
        let m = ys.len();
        for mode in [SelectMode::Stable, SelectMode::Partition, SelectMode::PartitionReversed] {
            let mut plan = SelectPlan::<f32>::new(&dev, &p, mode, m).unwrap();
            let mut out = stream.upload(&vec![poison; m], "poisoned").unwrap();
            plan.launch(stream, &view, &mut out.view_mut()).unwrap();
            let kept = plan.read(stream).unwrap();
            assert_eq!(kept, want.len() as u64, "{mode:?} start {start}");
            let got = stream.download(&out.view()).unwrap();
            assert!(same_bits(&got[..want.len()], &want), "{mode:?} start {start}");
            if mode == SelectMode::Stable {
                assert!(got[want.len()..].iter().all(|x| x.to_bits() == poison.to_bits()), "wrote past the count");
            } else {
                let (mut parted, _) = reference::partition(ys, &p);
                if mode == SelectMode::PartitionReversed {
                    parted[want.len()..].reverse();
                }
                assert!(same_bits(&got, &parted), "{mode:?} start {start}");
            }
        }
        let mut plan = SelectPlan::<f32>::new(&dev, &p, SelectMode::Indices, m).unwrap();
        let mut out = stream.upload(&vec![u64::MAX; m], "poisoned").unwrap();
        plan.launch_indices(stream, &view, &mut out.view_mut()).unwrap();
        let kept = plan.read(stream).unwrap() as usize;
        let got = stream.download(&out.view()).unwrap();
        assert_eq!(&got[..kept], &reference::select_indices(ys, &p)[..], "indices start {start}");
        assert!(got[kept..].iter().all(|&i| i == u64::MAX));
        // Flags misaligned against the input.
        for fstart in [0, 1, 3] {
            let k = m.min(n - fstart);
            let fview = flag_buf.view();
            let fview = fview.slice(fstart..fstart + k).unwrap();
            let iview = input.view();
            let iview = iview.slice(start..start + k).unwrap();
            let mut plan = SelectPlan::<f32>::flagged(&dev, k).unwrap();
            let mut out = stream.upload(&vec![poison; k], "poisoned").unwrap();
            plan.launch_flagged(stream, &iview, &fview, &mut out.view_mut()).unwrap();
            let kept = plan.read(stream).unwrap() as usize;
            let want = reference::select_flagged(&xs[start..start + k], &flags[fstart..fstart + k]);
            assert!(same_bits(&stream.download(&out.view()).unwrap()[..kept], &want), "flags {start} {fstart}");
        }
    }
}

#[test]
fn gpu_plans_run_many_times_and_refuse_what_they_were_not_made_for() {
    let Some(gpu) = cuda() else { return };
    let dev = gpu.cuda_device().unwrap().clone();
    let stream = dev.stream();
    let n = (1 << 22) + 9;
    let xs: Vec<i32> = data(n, 6);
    let p = Predicate::parse("x > 0 && x != 7").unwrap();
    let input = stream.upload(&xs, "input").unwrap();
    let mut out = stream.alloc::<i32>(n, "out").unwrap();
    let want = reference::select(&xs, &p);
    for mode in [SelectMode::Stable, SelectMode::Unordered] {
        let mut plan = SelectPlan::<i32>::new(&dev, &p, mode, n).unwrap();
        for _ in 0..3 {
            plan.launch(stream, &input.view(), &mut out.view_mut()).unwrap();
            assert_eq!(plan.read(stream).unwrap(), want.len() as u64);
            let mut got = stream.download(&out.view()).unwrap()[..want.len()].to_vec();
            if mode == SelectMode::Unordered {
                got.sort();
                let mut w = want.clone();
                w.sort();
                assert_eq!(got, w);
            } else {
                assert_eq!(got, want);
            }
        }
    }
    let mut count = SelectPlan::<i32>::new(&dev, &p, SelectMode::Count, n).unwrap();
    for _ in 0..3 {
        count.launch_count(stream, &input.view()).unwrap();
        assert_eq!(count.read(stream).unwrap(), want.len() as u64);
    }
    assert!(count.launch(stream, &input.view(), &mut out.view_mut()).is_err());
    let mut short = stream.alloc::<i32>(n - 1, "short").unwrap();
    let mut plan = SelectPlan::<i32>::new(&dev, &p, SelectMode::Stable, n).unwrap();
    assert!(plan.launch(stream, &input.view(), &mut short.view_mut()).is_err());
    assert!(SelectPlan::<i32>::new(&dev, &p, SelectMode::Flagged, n).is_err());
    let custom = Predicate::custom_cpp::<i32, _>("(x & 1) == 0", |x| x & 1 == 0).unwrap();
    let evens: Vec<i32> = xs.iter().copied().filter(|x| x & 1 == 0).collect();
    assert_eq!(gpu.select_vec(&xs, &custom, SelectOptions::default()).unwrap(), evens);
}

/// The in-order partition of 2^24 + 3 and + 4 elements keeping about one in fifty (the
/// rejected ranges odd and even in length), 4- and 8-byte elements, in the default blocks and in
/// blocks of 512 (whose reversal takes fewer pairs a thread): the rejected half spans more
/// chunks than the reversal's grid, so its blocks take several rounds. Poisoned outputs, three
/// launches of each plan.
#[test]
fn gpu_in_order_partitions_reverse_in_many_rounds() {
    let Some(_) = cuda() else { return };
    fn check<T: SelectElement>(dev: &std::sync::Arc<tally::CudaDevice>, poison: T, want_threads: Option<u32>) {
        let stream = dev.stream();
        let few = Predicate::parse("x > 48").unwrap();
        let longest = (1 << 24) + 4;
        let mut xs: Vec<T> = data(longest, 77);
        xs[longest - 1] = element(0); // rejected: the two lengths' rejected ranges differ by one
        let input = stream.upload(&xs, "input").unwrap();
        let mut rejected = Vec::new();
        for n in [longest - 1, longest] {
            let ys = &xs[..n];
            let (parted, kept) = reference::partition(ys, &few);
            let mut plan = SelectPlan::<T>::new(dev, &few, SelectMode::Partition, n).unwrap();
            let threads = plan.policy().block_threads as u64;
            if let Some(t) = want_threads {
                assert_eq!(threads, t as u64, "the tuned block");
            }
            // Chunks of at most eight pairs a thread, against blocks for 2,048 threads a
            // multiprocessor.
            let chunks = ((n as u64 - kept) / 2).div_ceil(threads * 8);
            let grid = dev.info().multiprocessors as u64 * (2048 / threads);
            assert!(chunks > grid, "{} rejected: {chunks} chunks for {grid} blocks", n as u64 - kept);
            rejected.push(n as u64 - kept);
            let view = input.view();
            let view = view.slice(..n).unwrap();
            let mut out = stream.upload(&vec![poison; n], "poisoned").unwrap();
            for round in 0..3 {
                plan.launch(stream, &view, &mut out.view_mut()).unwrap();
                assert_eq!(plan.read(stream).unwrap(), kept, "n {n}, round {round}");
                let got = stream.download(&out.view()).unwrap();
                assert!(same_bits(&got, &parted), "n {n}, round {round}, {threads} threads");
                stream.copy_to_device(&vec![poison; n], &mut out.view_mut()).unwrap();
            }
        }
        assert_eq!(rejected[1], rejected[0] + 1, "rejected ranges of both parities");
    }
    for threads in [None, Some(512)] {
        let tuning = tally::Tuning { compact_block_threads: threads, ..DeviceOptions::from_env().tuning };
        let dev = tally::CudaDevice::with_options(DeviceOptions { tuning, ..DeviceOptions::from_env() }).unwrap();
        check::<i32>(&dev, i32::MIN + 5, threads);
        check::<f64>(&dev, -7.25e300, threads);
    }
}

/// More than 2^31 elements (u8: n bytes in, n out, 8n for the indices of a sparse selection):
/// only where memory allows, and not under compute-sanitizer (TALLY_SKIP_HUGE=1).
#[test]
fn gpu_more_than_2_pow_31_elements() {
    let Some(gpu) = cuda() else { return };
    if std::env::var("TALLY_SKIP_HUGE").as_deref() == Ok("1") {
        eprintln!("skipping 2^31+ elements (TALLY_SKIP_HUGE=1)");
        return;
    }
    let dev = gpu.cuda_device().unwrap().clone();
    let n = (1usize << 31) + 4099;
    let (free, _) = cudarc::driver::result::mem_get_info().unwrap_or((0, 0));
    if free < 3 * n + (2 << 30) {
        eprintln!("skipping: {free} bytes free, {} needed", 3 * n + (2 << 30));
        return;
    }
    let stream = dev.stream();
    let xs: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
    let input = stream.upload(&xs, "input").unwrap();
    let p = Predicate::parse("x < 5").unwrap();
    let per_cycle = |m: usize| 5 * (m / 251) + (m % 251).min(5);
    assert_eq!(gpu.count_if(&input, &p).unwrap(), per_cycle(n) as u64);
    let (kept, count) = SelectPlan::<u8>::new(&dev, &p, SelectMode::Stable, n).unwrap().run(&input.view()).unwrap();
    assert_eq!(count, per_cycle(n) as u64);
    let got = stream.download(&kept.view()).unwrap();
    for (j, g) in got.iter().enumerate().step_by(9973) {
        assert_eq!(*g as usize, j % 5);
    }
    drop(kept);
    // Indices past 2^32 come back whole.
    let sparse = Predicate::parse("x == 250").unwrap();
    let idx = gpu.select_indices_vec(&input, &sparse).unwrap();
    assert_eq!(idx.len(), n / 251);
    assert!(idx.iter().enumerate().all(|(j, &i)| i == (251 * j + 250) as u64));
    let (parted, kept) =
        SelectPlan::<u8>::new(&dev, &sparse, SelectMode::Partition, n).unwrap().run(&input.view()).unwrap();
    assert_eq!(kept, (n / 251) as u64);
    let tail = stream.download(&parted.view().slice(n - 1000..).unwrap()).unwrap();
    let want: Vec<u8> = xs[n - 1100..].iter().copied().filter(|&x| x != 250).collect();
    assert_eq!(&tail[..], &want[want.len() - 1000..]);
}

/// Kept plans launched again and again on new data (2^24 + 3 elements, more than 1,024 tiles). A plan's first launch takes its tile states from the
/// workspace, its second zeroes a set of its own, and every later one finds the set that the
/// launch before cleared in its kernel; a stale state would place this round's elements by an
/// earlier round's counts, and after each launch from the second the set the next will use is
/// checked for zeros where a launch reads it (select looks back over tiles only: its groups'
/// slots stay empty). One-off selections write over the workspace between launches. Poisoned
/// outputs, every element compared, also past the count where the output is the input's size.
#[test]
fn gpu_kept_plans_find_their_tile_states_cleared_by_the_launch_before() {
    let Some(gpu) = cuda() else { return };
    let dev = gpu.cuda_device().unwrap().clone();
    let stream = dev.stream();
    let (n, small) = common::kept_plan_len();
    let p = Predicate::parse("x > 20").unwrap();
    let mut stable = SelectPlan::<i32>::new(&dev, &p, SelectMode::Stable, n).unwrap();
    let mut partition = SelectPlan::<i32>::new(&dev, &p, SelectMode::Partition, n).unwrap();
    let mut indices = SelectPlan::<i32>::new(&dev, &p, SelectMode::Indices, n).unwrap();
    let mut flagged = SelectPlan::<i32>::flagged(&dev, n).unwrap();
    assert!(small || stable.policy().states.tiles > 1024 && flagged.policy().states.tiles > 1024);
    let mut input = stream.alloc::<i32>(n, "input").unwrap();
    let mut flags = stream.alloc::<u8>(n, "flags").unwrap();
    let mut out = stream.alloc::<i32>(n, "output").unwrap();
    let mut out_indices = stream.alloc::<u64>(n, "indices").unwrap();
    for round in 0..5u64 {
        // The kept share changes each round: about 30%, then 60%, 90%, ...
        let xs: Vec<i32> = data::<i32>(n, 300 + round).into_iter().map(|x| x + 30 * round as i32 % 90).collect();
        let fs: Vec<u8> = xs.iter().map(|&x| (x % 3 == 0) as u8).collect();
        stream.copy_to_device(&xs, &mut input.view_mut()).unwrap();
        stream.copy_to_device(&fs, &mut flags.view_mut()).unwrap();
        let cleared = |plan: &SelectPlan<i32>| {
            let zeroed = plan.next_tile_states_zeroed(stream).unwrap();
            assert_eq!(
                zeroed,
                (round > 0).then_some(true),
                "{:?}, round {round}: the next launch's states",
                plan.mode()
            );
        };
        let poison = vec![i32::MIN; n];
        let want = reference::select(&xs, &p);
        stream.copy_to_device(&poison, &mut out.view_mut()).unwrap();
        stable.launch(stream, &input.view(), &mut out.view_mut()).unwrap();
        assert_eq!(stable.read(stream).unwrap(), want.len() as u64, "round {round}");
        cleared(&stable);
        let got = stream.download(&out.view()).unwrap();
        assert_eq!(got[..want.len()], want[..], "stable, round {round}");
        assert!(got[want.len()..].iter().all(|&x| x == i32::MIN), "stable wrote past its count, round {round}");
        let _ = gpu.select_vec(&xs[..n / 3], &p, SelectOptions::default()).unwrap();
        stream.copy_to_device(&poison, &mut out.view_mut()).unwrap();
        partition.launch(stream, &input.view(), &mut out.view_mut()).unwrap();
        let (want_partition, kept) = reference::partition(&xs, &p);
        assert_eq!(partition.read(stream).unwrap(), kept, "round {round}");
        cleared(&partition);
        assert_eq!(stream.download(&out.view()).unwrap(), want_partition, "partition, round {round}");
        stream.copy_to_device(&vec![u64::MAX; n], &mut out_indices.view_mut()).unwrap();
        indices.launch_indices(stream, &input.view(), &mut out_indices.view_mut()).unwrap();
        let want_indices = reference::select_indices(&xs, &p);
        assert_eq!(indices.read(stream).unwrap(), want_indices.len() as u64, "round {round}");
        cleared(&indices);
        let got = stream.download(&out_indices.view()).unwrap();
        assert_eq!(got[..want_indices.len()], want_indices[..], "indices, round {round}");
        assert!(got[want_indices.len()..].iter().all(|&i| i == u64::MAX), "indices past the count, round {round}");
        stream.copy_to_device(&poison, &mut out.view_mut()).unwrap();
        flagged.launch_flagged(stream, &input.view(), &flags.view(), &mut out.view_mut()).unwrap();
        let want_flagged: Vec<i32> = xs.iter().zip(&fs).filter(|(_, &f)| f != 0).map(|(&x, _)| x).collect();
        assert_eq!(flagged.read(stream).unwrap(), want_flagged.len() as u64, "round {round}");
        cleared(&flagged);
        let got = stream.download(&out.view()).unwrap();
        assert_eq!(got[..want_flagged.len()], want_flagged[..], "flagged, round {round}");
        assert!(got[want_flagged.len()..].iter().all(|&x| x == i32::MIN), "flagged past the count, round {round}");
    }
}
