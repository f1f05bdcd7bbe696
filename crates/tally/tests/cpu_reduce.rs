//! The CPU backend's reductions against the plain sequential reference, every op and type.

mod common;
mod reduce_common;

use reduce_common::*;
use tally::reduce::reference;
use tally::{Backend, CmpOp, Compare, CustomOp, Error, ReduceOp, ReduceOptions};

/// Every op on random inputs of every size.
fn every_op_on_random_inputs<T: Gen>() {
    let cpu = Backend::cpu();
    for (k, &n) in SIZES.iter().enumerate() {
        let xs: Vec<T> = data(n, 11 + k as u64);
        check_every_op(&cpu, &xs, "random");
    }
}
common::test_every_type!(every_op_on_random_inputs: u8_ops: u8, i8_ops: i8, u16_ops: u16, i16_ops: i16, u32_ops: u32,
                         i32_ops: i32, u64_ops: u64, i64_ops: i64, f32_ops: f32, f64_ops: f64);

#[test]
fn integer_sums_are_exact_past_64_bits() {
    let cpu = Backend::cpu();
    let xs = vec![u64::MAX; 1000];
    assert_eq!(cpu.sum(&xs).unwrap(), u64::MAX as i128 * 1000);
    let ys = vec![i64::MIN; 777];
    assert_eq!(cpu.sum(&ys).unwrap(), i64::MIN as i128 * 777);
}

#[test]
fn nan_placement_follows_numpy() {
    let cpu = Backend::cpu();
    for n in [1usize, 33, 1025, 70_000] {
        for at in [0, n / 2, n - 1] {
            let mut xs: Vec<f32> = data(n, 3);
            xs[at] = f32::NAN;
            if at + 1 < n {
                xs[n - 1] = f32::NAN;
            }
            check_every_op(&cpu, &xs, "NaN placed");
            assert!(cpu.sum(&xs).unwrap().is_nan());
            assert!(cpu.min(&xs).unwrap().is_nan());
            assert_eq!(cpu.argmin(&xs).unwrap(), at as u64);
            assert_eq!(cpu.argmax(&xs).unwrap(), at as u64);
            let skipped = cpu.reduce(&xs, ReduceOp::Sum, ReduceOptions::skip_nan()).unwrap();
            assert_eq!(skipped.nan_skipped, if at + 1 < n { 2 } else { 1 });
            assert!(!skipped.value.is_nan());
        }
    }
    let all_nan = vec![f64::NAN; 100];
    let r = cpu.reduce(&all_nan, ReduceOp::Sum, ReduceOptions::skip_nan()).unwrap();
    assert_eq!((r.value, r.nan_skipped), (0.0, 100));
    assert!(cpu.reduce(&all_nan, ReduceOp::Min, ReduceOptions::skip_nan()).unwrap().value.is_nan());
    assert!(matches!(cpu.reduce(&all_nan, ReduceOp::ArgMin, ReduceOptions::skip_nan()), Err(Error::EmptyInput(_))));
}

#[test]
fn infinities_and_ties() {
    let cpu = Backend::cpu();
    let xs = [1.0f64, f64::INFINITY, 3.0, f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY];
    assert_eq!(cpu.argmax(&xs).unwrap(), 1);
    assert_eq!(cpu.argmin(&xs).unwrap(), 4);
    assert!(cpu.sum(&xs).unwrap().is_nan());
    let ys = [255u8, 3, 255, 0, 0];
    assert_eq!(cpu.argmax(&ys).unwrap(), 0);
    assert_eq!(cpu.argmin(&ys).unwrap(), 3);
    assert_eq!(cpu.minmax(&ys).unwrap(), (0, 255));
}

#[test]
fn empty_input() {
    let cpu = Backend::cpu();
    let xs: [f32; 0] = [];
    assert_eq!(cpu.sum(&xs).unwrap(), 0.0);
    assert_eq!(cpu.sum_exact(&xs).unwrap(), 0.0);
    assert_eq!(cpu.count(&xs, Compare::new(CmpOp::Lt, 1.0)).unwrap(), 0);
    for op in [ReduceOp::Min, ReduceOp::Max, ReduceOp::MinMax, ReduceOp::ArgMin, ReduceOp::ArgMax] {
        let e = cpu.reduce(&xs, op, ReduceOptions::default()).unwrap_err();
        assert!(matches!(e, Error::EmptyInput(_)) && e.to_string().contains("empty"), "{e}");
    }
}

#[test]
fn exact_sums_of_adversarial_inputs() {
    check_adversarial(&Backend::cpu());
}

#[test]
fn exact_sums_exact_in_every_binade() {
    let cpu = Backend::cpu();
    check_exact_bands::<f32>(4099, 3, |xs, r| cpu.sum_exact(&xs[r]).unwrap());
    check_exact_bands::<f64>(4099, 3, |xs, r| cpu.sum_exact(&xs[r]).unwrap());
}

#[test]
fn exact_sums_match_fsum_and_do_not_depend_on_the_thread_count() {
    let xs: Vec<f64> = data((1 << 20) + 7, 5);
    let want = reference::fsum(xs.iter().copied());
    assert_eq!(want.to_bits(), big_exact_sum(&xs).to_bits());
    for threads in [1, 2, 3] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let got = pool.install(|| Backend::cpu().sum_exact(&xs).unwrap());
        assert_eq!(got.to_bits(), want.to_bits(), "{threads} threads");
        let plain = pool.install(|| Backend::cpu().sum(&xs).unwrap());
        let plain1 = Backend::cpu().sum(&xs).unwrap();
        assert_eq!(plain.to_bits(), plain1.to_bits(), "plain sums repeat bit for bit");
    }
}

#[test]
fn custom_reductions() {
    let cpu = Backend::cpu();
    let xs: Vec<f32> = data(100_000, 9);
    let op = CustomOp::new("max(abs(a), abs(b))", "0", 0.0f32, |a: f32, b: f32| a.abs().max(b.abs()));
    let want = xs.iter().fold(0.0f32, |a, &b| a.max(b.abs()));
    assert_eq!(cpu.reduce_custom(&xs, &op).unwrap(), want);
    let none: [f32; 0] = [];
    assert_eq!(cpu.reduce_custom(&none, &op).unwrap(), 0.0);
}

#[test]
fn results_serialise() {
    let r = Backend::cpu().reduce(&[1u64, 2, u64::MAX], ReduceOp::Sum, ReduceOptions::default()).unwrap();
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains("\"op\":\"sum\"") && json.contains("18446744073709551618"), "{json}");
}
