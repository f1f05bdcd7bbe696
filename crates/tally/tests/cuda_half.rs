//! f16 and bf16 on the GPU: every primitive against the sequential references (every element,
//! exactly where the result is defined exactly: counts, extrema, exact sums, selections, runs),
//! at sizes around the tiles, on misaligned device input, with poisoned histogram counters
//! under every strategy. The kernels' variants for both types are compiled by
//! `nvrtc_compile.rs`.

mod common;
mod half_common;
mod reduce_common;
mod runs_common;
mod scan_common;
mod select_common;

use half_common::*;
use tally::half::{bf16, f16};
use tally::{Backend, HistogramSpec, ReduceOp, ReduceOptions, Strategy};

/// Around the tiles of every primitive (1-, 2- and 4-thousand-element tiles and their
/// neighbours) and past one block's share of a grid.
const SIZES: [usize; 10] = [0, 1, 31, 33, 1025, 4095, 4096, 4097, 70_001, (1 << 20) + 7];

fn cuda() -> Option<Backend> {
    common::gpu().map(Backend::Cuda)
}

#[test]
fn gpu_f16_every_primitive() {
    let Some(gpu) = cuda() else { return };
    check_every_primitive::<f16>(&gpu, &SIZES);
}

#[test]
fn gpu_bf16_every_primitive() {
    let Some(gpu) = cuda() else { return };
    check_every_primitive::<bf16>(&gpu, &SIZES);
}

/// Every histogram strategy, counters poisoned, from offsets 0 to 3 (16-byte loads of 2-byte
/// samples start misaligned), for skewed and spread samples.
fn every_strategy<T: Half>() {
    let Some(Backend::Cuda(dev)) = cuda() else { return };
    let n = (1 << 18) + 5;
    let spread: Vec<T> = every_kind(n, 5);
    let mut skewed: Vec<T> = moderate(n, 6);
    for (i, x) in skewed.iter_mut().enumerate() {
        if i % 10 != 0 {
            *x = T::of_bits(T::MAX_SUBNORMAL_BITS);
        }
    }
    for spec in [HistogramSpec::even(256, -64.0, 64.0), HistogramSpec::even(70_000, -64.0, 64.0)] {
        for xs in [&spread, &skewed] {
            for strategy in Strategy::GPU {
                for offset in 0..4 {
                    common::check_plan(&dev, xs, &spec, strategy, offset, &Default::default());
                }
            }
        }
    }
}

common::test_every_type!(every_strategy: gpu_f16_every_histogram_strategy: f16, gpu_bf16_every_histogram_strategy: bf16);

/// Reductions over device views that start 0 to 3 elements into a buffer, against the CPU.
fn misaligned_reductions<T: Half>() {
    let Some(gpu) = cuda() else { return };
    let dev = gpu.cuda_device().unwrap().clone();
    let xs: Vec<T> = every_kind(100_003, 21);
    let buf = dev.stream().upload(&xs, "input").unwrap();
    for start in 0..4 {
        for op in [ReduceOp::Sum, ReduceOp::MinMax, ReduceOp::ArgMin, ReduceOp::ArgMax] {
            for options in [ReduceOptions::default(), ReduceOptions::skip_nan(), ReduceOptions::exact()] {
                if options.exact && op != ReduceOp::Sum {
                    continue;
                }
                let view = buf.view();
                let got = gpu.reduce(view.slice(start..).unwrap(), op, options).unwrap();
                let want = Backend::cpu().reduce(&xs[start..], op, options).unwrap();
                let exact = op != ReduceOp::Sum || options.exact;
                // A plain sum is compared by value: equal (infinities too), both NaN, or within rounding.
                let close = want.value == got.value
                    || (want.value.is_nan() && got.value.is_nan())
                    || (want.value - got.value).abs() < 1e-6;
                let same = if exact { want.same_result(&got) } else { close };
                assert!(same, "{} start {start} {op:?} {options:?}: {want:?} vs {got:?}", T::DTYPE);
            }
        }
    }
}

common::test_every_type!(misaligned_reductions: gpu_f16_misaligned_reductions: f16, gpu_bf16_misaligned_reductions: bf16);

/// The exact sum is the same bits on the GPU and the CPU at sizes that split over many blocks.
#[test]
fn gpu_exact_sums_equal_the_cpu_bit_for_bit() {
    let Some(gpu) = cuda() else { return };
    for n in [1usize, 1000, (1 << 20) + 7, 3 << 22] {
        let a: Vec<f16> = reduce_common::data(n, n as u64);
        let b: Vec<bf16> = reduce_common::data(n, n as u64 + 1);
        let cpu = Backend::cpu();
        assert_eq!(gpu.sum_exact(&a).unwrap().to_bits(), cpu.sum_exact(&a).unwrap().to_bits(), "f16 {n}");
        assert_eq!(gpu.sum_exact(&b).unwrap().to_bits(), cpu.sum_exact(&b).unwrap().to_bits(), "bf16 {n}");
    }
}
