//! The reductions on the GPU against the plain sequential reference (every specialisation of
//! `reduce.cu` is compiled by the registry's check in `nvrtc_compile.rs`).

mod common;
mod reduce_common;

use reduce_common::*;
use tally::{Backend, CmpOp, Compare, CustomOp, DeviceView, Error, ReduceOp, ReduceOptions, ReducePlan};

fn cuda() -> Option<Backend> {
    common::gpu().map(Backend::Cuda)
}

macro_rules! every_type_on_the_gpu {
    ($($name:ident: $t:ty),*) => {$(
        #[test]
        fn $name() {
            let Some(gpu) = cuda() else { return };
            for (k, &n) in SIZES.iter().enumerate() {
                let xs: Vec<$t> = data(n, 11 + k as u64);
                check_every_op(&gpu, &xs, "random");
            }
        }
    )*};
}
every_type_on_the_gpu!(gpu_u8_ops: u8, gpu_i8_ops: i8, gpu_u16_ops: u16, gpu_i16_ops: i16, gpu_u32_ops: u32,
                       gpu_i32_ops: i32, gpu_u64_ops: u64, gpu_i64_ops: i64, gpu_f32_ops: f32, gpu_f64_ops: f64);

#[test]
fn gpu_exact_sums_of_adversarial_inputs() {
    let Some(gpu) = cuda() else { return };
    check_adversarial(&gpu);
}

/// Every binade of f32 and f64 in sums exact in an f64 (the kernels' per-element split, its
/// digits, signs and runs; zeros and subnormals in vectors with normal floats), from one
/// upload, a band a view; large enough bands for the kernels' 8-vector loop. TALLY_SMALL=1
/// (under compute-sanitizer) takes every fifth band of those.
#[test]
fn gpu_exact_sums_exact_in_every_binade() {
    let Some(gpu) = cuda() else { return };
    let step = if std::env::var("TALLY_SMALL").as_deref() == Ok("1") { 15 } else { 3 };
    let dev = gpu.cuda_device().unwrap().clone();
    macro_rules! on_gpu {
        ($t:ty, $n:expr) => {{
            let mut uploaded = None;
            check_exact_bands::<$t>($n, step, |xs, r| {
                let buf = uploaded.get_or_insert_with(|| dev.stream().upload(xs, "bands").unwrap());
                gpu.sum_exact(buf.view().slice(r).unwrap()).unwrap()
            });
        }};
    }
    // 17 blocks of 256 (f32) and 33 of 128 (f64): every thread goes once round the 8-vector loop.
    on_gpu!(f32, (1 << 17) + 3);
    on_gpu!(f64, (1 << 16) + 3);
}

#[test]
fn gpu_exact_sums_equal_the_cpu_bit_for_bit() {
    let Some(gpu) = cuda() else { return };
    for n in [1usize, 1000, (1 << 20) + 7, 3 << 22] {
        let xs: Vec<f64> = data(n, n as u64);
        let ys: Vec<f32> = data(n, n as u64 + 1);
        assert_eq!(gpu.sum_exact(&xs).unwrap().to_bits(), Backend::cpu().sum_exact(&xs).unwrap().to_bits(), "f64 {n}");
        assert_eq!(gpu.sum_exact(&ys).unwrap().to_bits(), Backend::cpu().sum_exact(&ys).unwrap().to_bits(), "f32 {n}");
    }
}

#[test]
fn gpu_nan_placement() {
    let Some(gpu) = cuda() else { return };
    for n in [1usize, 33, 1025, 70_000, (1 << 20) + 7] {
        for at in [0, n / 2, n - 1] {
            let mut xs: Vec<f32> = data(n, 3);
            xs[at] = f32::NAN;
            if at + 1 < n {
                xs[n - 1] = f32::NAN;
            }
            check_every_op(&gpu, &xs, "NaN placed");
            assert_eq!(gpu.argmin(&xs).unwrap(), at as u64);
            assert_eq!(gpu.argmax(&xs).unwrap(), at as u64);
        }
    }
    let all_nan = vec![f64::NAN; 100];
    assert!(matches!(gpu.reduce(&all_nan, ReduceOp::ArgMax, ReduceOptions::skip_nan()), Err(Error::EmptyInput(_))));
    let ties = vec![7u8; 5000];
    assert_eq!((gpu.argmin(&ties).unwrap(), gpu.argmax(&ties).unwrap()), (0, 0));
}

/// f32 min, max and minmax take whole vectors through the hardware's min/max (NaN propagating,
/// or left out and counted with skip_nan, where a vector's sum is NaN): infinities of both signs
/// in one vector (a NaN sum without a NaN), NaNs beside them and alone, only NaNs, only
/// infinities, -0.0 beside +0.0; and argmin/argmax's rounds of loads over ties of few
/// distinct values (f32, i32, f64) (TALLY_SMALL=1, under compute-sanitizer: the three smaller
/// sizes).
#[test]
fn gpu_f32_extrema_with_infinities_and_nan_in_one_vector() {
    let Some(gpu) = cuda() else { return };
    let small = std::env::var("TALLY_SMALL").as_deref() == Ok("1");
    let sizes: &[usize] = if small { &[5, 1025, 70_001] } else { &[5, 1025, 70_001, (1 << 20) + 7] };
    for &n in sizes {
        let mut xs: Vec<f32> = data(n, 41);
        for k in (0..n.saturating_sub(4)).step_by(4 * 97) {
            (xs[k], xs[k + 1]) = (f32::INFINITY, f32::NEG_INFINITY);
        }
        check_every_op(&gpu, &xs, "opposite infinities in a vector");
        for k in (2..n.saturating_sub(2)).step_by(4 * 389) {
            xs[k] = f32::NAN;
        }
        check_every_op(&gpu, &xs, "infinities and NaNs");
        let lone = xs.len() / 3;
        let mut one_nan: Vec<f32> = data(n, 43);
        one_nan[lone] = f32::NAN;
        check_every_op(&gpu, &one_nan, "one NaN");
        check_every_op(&gpu, &vec![f32::NAN; n], "only NaNs");
        let infinities: Vec<f32> = (0..n).map(|i| if i % 3 == 0 { f32::NEG_INFINITY } else { f32::INFINITY }).collect();
        check_every_op(&gpu, &infinities, "only infinities");
        // Both zeros at the bottom (and at the top of the negated): either zero is the
        // extremum (`Reduction::same_result`); argmin and argmax give the first.
        let zeros: Vec<f32> = (0..n).map(|i| [0.0, -0.0, 1.0 + i as f32][i % 3]).collect();
        check_every_op(&gpu, &zeros, "both zeros");
        let negated: Vec<f32> = zeros.iter().map(|x| -x).collect();
        check_every_op(&gpu, &negated, "both zeros, negated");
        // Few distinct values: ties everywhere, within rounds of loads and across threads.
        let few = |i: usize| ((i as u64).wrapping_mul(2_654_435_761) >> 9) % 5;
        check_every_op(&gpu, &(0..n).map(|i| few(i) as f32 + 0.5).collect::<Vec<f32>>(), "ties");
        check_every_op(&gpu, &(0..n).map(|i| few(i) as i32 - 2).collect::<Vec<i32>>(), "ties");
        check_every_op(&gpu, &(0..n).map(|i| few(i) as f64 * -0.25).collect::<Vec<f64>>(), "ties");
    }
}

/// The last block's partial loads in more than one round: a device whose plain reductions run
/// 8 blocks a multiprocessor with one load in flight (more blocks than the last block's threads
/// take in one round of three or four partials each), every op against the reference.
#[test]
fn gpu_many_partials_take_more_than_one_round() {
    let Some(gpu) = cuda() else { return };
    use tally::device::DeviceOptions;
    let env = DeviceOptions::from_env();
    let tuning = tally::Tuning { reduce_blocks_per_sm: Some(8), reduce_vecs: Some(1), ..env.tuning.clone() };
    let dev = tally::CudaDevice::with_options(DeviceOptions { tuning, ..env }).unwrap();
    let sms = gpu.cuda_device().unwrap().info().multiprocessors;
    let n = (1usize << 21) + 5;
    let plan = ReducePlan::<f32>::new(&dev, ReduceOp::Sum, ReduceOptions::default(), n).unwrap();
    assert!(plan.launch_shape().grid > 4 * 256 || sms * 8 <= 4 * 256, "grid {}", plan.launch_shape().grid);
    let many = Backend::Cuda(dev);
    let xs: Vec<f32> = data(n, 51);
    check_every_op(&many, &xs, "8 blocks a multiprocessor");
    let ys: Vec<i32> = data(n, 52);
    check_every_op(&many, &ys, "8 blocks a multiprocessor");
    let ties = vec![-3i32; n];
    check_every_op(&many, &ties, "ties, 8 blocks a multiprocessor");
}

/// argmin and argmax when a thread takes several rounds of loads (the default device at 2^22
/// elements, and one with a block a multiprocessor, whose threads take four times as many): the
/// extremes only at later positions, tied across vectors, rounds and threads; a NaN before them,
/// NaNs before and after; +inf in rounds without -inf (sums of inf, taken whole) and huge
/// values of one sign and of both; every element the running extremum's starting value (the
/// first round then decides by having no index yet). Every op against the reference.
#[test]
fn gpu_argmin_argmax_over_many_rounds_a_thread() {
    let Some(gpu) = cuda() else { return };
    use tally::device::DeviceOptions;
    let env = DeviceOptions::from_env();
    let tuning = tally::Tuning { reduce_blocks_per_sm: Some(1), ..env.tuning.clone() };
    let one_block = Backend::Cuda(tally::CudaDevice::with_options(DeviceOptions { tuning, ..env }).unwrap());
    let n = if std::env::var("TALLY_SMALL").as_deref() == Ok("1") { (1 << 19) + 3 } else { (1 << 22) + 3 };
    for backend in [&gpu, &one_block] {
        check_rounds::<f32>(backend, n, f32::NEG_INFINITY, f32::INFINITY, Some(f32::NAN));
        check_rounds::<f64>(backend, n, f64::NEG_INFINITY, f64::INFINITY, Some(f64::NAN));
        check_rounds::<i32>(backend, n, i32::MIN, i32::MAX, None);
        check_rounds::<u32>(backend, n, 0, u32::MAX, None);
        check_rounds::<i64>(backend, n, i64::MIN, i64::MAX, None);
        check_rounds::<u64>(backend, n, 0, u64::MAX, None);
        let huge: Vec<f32> = data::<f32>(n, 62).iter().map(|x| 3e38 * (0.5 + x.abs().fract() / 2.0)).collect();
        check_every_op(backend, &huge, "huge values of one sign");
        let signed: Vec<f32> = huge.iter().enumerate().map(|(i, &x)| if i % 3 == 0 { -x } else { x }).collect();
        check_every_op(backend, &signed, "huge values of both signs");
    }
}

/// See [`gpu_argmin_argmax_over_many_rounds_a_thread`]: `low` and `high` lie at or beyond every
/// random element.
fn check_rounds<T: Gen>(backend: &Backend, n: usize, low: T, high: T, nan: Option<T>) {
    let lows = [n / 2 + 5, n / 2 + 6, n / 2 + 9, 2 * n / 3, 2 * n / 3 + 4, n - 2];
    let highs = [n / 2 + 100_003, n / 2 + 100_007, 3 * n / 4 + 1, n - 40];
    let mut xs: Vec<T> = data(n, 61);
    for &p in &lows {
        xs[p] = low;
    }
    for &p in &highs {
        xs[p] = high;
    }
    check_every_op(backend, &xs, "extremes in later rounds");
    if let Some(nan) = nan {
        let mut before = xs.clone();
        before[n / 3] = nan;
        check_every_op(backend, &before, "a NaN before the extremes");
        let mut spread = xs.clone();
        for p in [n / 5, n / 2 + 7, n - 5] {
            spread[p] = nan;
        }
        check_every_op(backend, &spread, "NaNs before and after the extremes");
    }
    check_every_op(backend, &vec![high; n], "every element the largest");
    check_every_op(backend, &vec![low; n], "every element the smallest");
}

#[test]
fn gpu_misaligned_device_input() {
    let Some(gpu) = cuda() else { return };
    let dev = gpu.cuda_device().unwrap().clone();
    let xs: Vec<f32> = data(100_003, 21);
    let buf = dev.stream().upload(&xs, "input").unwrap();
    for start in 0..5 {
        let view = buf.view();
        let view = view.slice(start..).unwrap();
        let want = tally::reduce::reference::reduce(&xs[start..], ReduceOp::ArgMax, ReduceOptions::default()).unwrap();
        let got = gpu.reduce(view, ReduceOp::ArgMax, ReduceOptions::default()).unwrap();
        assert_eq!(want.index, got.index, "start {start}");
        let view = buf.view();
        let sum = gpu.sum_exact(view.slice(start..).unwrap()).unwrap();
        assert_eq!(sum.to_bits(), big_exact_sum(&xs[start..].iter().map(|&x| x as f64).collect::<Vec<_>>()).to_bits());
    }
}

#[test]
fn gpu_poisoned_outputs_and_repeated_runs() {
    let Some(gpu) = cuda() else { return };
    let dev = gpu.cuda_device().unwrap().clone();
    let stream = dev.stream();
    let xs: Vec<f32> = data((1 << 22) + 3, 8);
    let buf = stream.upload(&xs, "input").unwrap();
    for op in [ReduceOp::Sum, ReduceOp::ArgMin, ReduceOp::MinMax, ReduceOp::Count(Compare::new(CmpOp::Gt, 0.0))] {
        for exact in [false, true] {
            if exact && op != ReduceOp::Sum {
                continue;
            }
            let options = ReduceOptions { exact, skip_nan: false };
            let mut plan = ReducePlan::<f32>::new(&dev, op, options, xs.len()).unwrap();
            let view: DeviceView<'_, f32> = buf.view();
            plan.launch(stream, &view).unwrap();
            let first = plan.read(stream).unwrap();
            for _ in 0..3 {
                plan.poison(stream).unwrap();
                plan.launch(stream, &view).unwrap();
                let again = plan.read(stream).unwrap();
                assert!(first.same_result(&again), "{op:?} {options:?}: {first:?} vs {again:?}");
            }
        }
    }
}

/// The last block posts the result words into page-locked host memory, where `read` polls
/// for them; a second read of the same launch copies the device's words instead. Both agree,
/// on another stream too, for one block and for many, and when a launch was not read before
/// the next.
#[test]
fn gpu_posted_and_copied_results_agree() {
    let Some(gpu) = cuda() else { return };
    let dev = gpu.cuda_device().unwrap().clone();
    let other = dev.new_stream().unwrap();
    for n in [1usize, 1000, (1 << 20) + 5] {
        let xs: Vec<f64> = data(n, 12);
        for stream in [dev.stream(), &other] {
            let buf = stream.upload(&xs, "input").unwrap();
            let view: DeviceView<'_, f64> = buf.view();
            for (op, exact) in [(ReduceOp::MinMax, false), (ReduceOp::Sum, true), (ReduceOp::ArgMax, false)] {
                let options = ReduceOptions { exact, skip_nan: false };
                let mut plan = ReducePlan::<f64>::new(&dev, op, options, n).unwrap();
                // The plan's words are zeroed on the device's stream; `other` does not wait for it.
                dev.stream().synchronize("a new plan").unwrap();
                plan.launch(stream, &view).unwrap();
                plan.launch(stream, &view).unwrap();
                assert!(plan.result_posted(), "the launch posts its result");
                let posted = plan.read(stream).unwrap();
                assert!(!plan.result_posted(), "a read takes the post");
                let copied = plan.read(stream).unwrap();
                assert!(posted.same_result(&copied), "n={n} {op:?}: posted {posted:?}, copied {copied:?}");
                let cpu = Backend::cpu().reduce(&xs, op, options).unwrap();
                assert!(posted.same_result(&cpu), "n={n} {op:?}: gpu {posted:?}, cpu {cpu:?}");
            }
        }
    }
}

#[test]
fn gpu_custom_reduction() {
    let Some(gpu) = cuda() else { return };
    let xs: Vec<f32> = data(1_000_003, 9);
    let op = CustomOp::new("max(fabsf(a), fabsf(b))", "0", 0.0f32, |a: f32, b: f32| a.abs().max(b.abs()));
    assert_eq!(gpu.reduce_custom(&xs, &op).unwrap(), Backend::cpu().reduce_custom(&xs, &op).unwrap());
    let ys: Vec<i64> = data(4097, 10);
    let xor = CustomOp::new("a ^ b", "0", 0i64, |a: i64, b: i64| a ^ b);
    assert_eq!(gpu.reduce_custom(&ys, &xor).unwrap(), ys.iter().fold(0, |a, b| a ^ b));
}

#[test]
fn gpu_more_than_2_pow_32_bytes() {
    let Some(gpu) = cuda() else { return };
    if std::env::var("TALLY_SKIP_HUGE").as_deref() == Ok("1") {
        eprintln!("skipping 2^32+1 elements (TALLY_SKIP_HUGE=1, under compute-sanitizer)");
        return;
    }
    let dev = gpu.cuda_device().unwrap().clone();
    let n = (1usize << 32) + 1;
    let (free, _) = cudarc::driver::result::mem_get_info().unwrap_or((0, 0));
    if free < n + (1 << 30) {
        eprintln!("skipping: {free} bytes free");
        return;
    }
    let stream = dev.stream();
    let buf = stream.alloc_zeros::<u8>(n, "big").unwrap();
    let view = buf.view();
    let r = gpu.reduce(view, ReduceOp::Count(Compare::new(CmpOp::Eq, 0.0)), ReduceOptions::default()).unwrap();
    assert_eq!(r.count, Some(n as u64));
    let mut ones = vec![0u8; 1 << 20];
    ones[(1 << 20) - 1] = 3;
    let tail = stream.upload(&ones, "tail").unwrap();
    let _ = tail; // a second buffer: the sum of the big one stays 0, its argmax the first index
    assert_eq!(gpu.sum(buf.view()).unwrap(), 0);
    assert_eq!(gpu.argmax(buf.view()).unwrap(), 0);
}
