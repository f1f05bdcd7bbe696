//! f16 and bf16 on the CPU backend: every primitive against the sequential references, with
//! NaN, infinities, -0.0, subnormals and the largest finite values among the inputs.

mod common;
mod half_common;
mod reduce_common;
mod runs_common;
mod scan_common;
mod select_common;

use half_common::*;
use tally::half::{bf16, f16};
use tally::Backend;

const SIZES: [usize; 6] = [0, 1, 31, 33, 1025, 70_001];

#[test]
fn f16_every_primitive() {
    check_every_primitive::<f16>(&Backend::cpu(), &SIZES);
}

#[test]
fn bf16_every_primitive() {
    check_every_primitive::<bf16>(&Backend::cpu(), &SIZES);
}

/// The sums accumulate in f64 (as f32's do): 2049 ones sum to 2049 although 2049 is no f16.
#[test]
fn sums_accumulate_wider_than_the_type() {
    let cpu = Backend::cpu();
    let ones = vec![f16::ONE; 2049];
    assert_eq!(cpu.sum(&ones).unwrap(), 2049.0);
    let cumsum: Vec<f32> = cpu.cumsum_vec(&ones).unwrap();
    assert_eq!(cumsum[2048], 2049.0);
    let big = vec![f16::MAX, f16::MAX, -f16::MAX];
    assert_eq!(cpu.sum(&big).unwrap(), f16::MAX.to_f64());
    assert_eq!(cpu.sum_exact(&[bf16::MAX, bf16::MAX, -bf16::MAX]).unwrap(), bf16::MAX.to_f64());
}

/// Minima and maxima come back as the element type, bit for bit, -0.0 and NaN rules as f32's.
#[test]
fn extrema_follow_the_f32_rules() {
    let cpu = Backend::cpu();
    let xs = [f16::from_f32(1.5), f16::NEG_ZERO, f16::ZERO, f16::NAN, f16::from_f32(-3.0)];
    let as32: Vec<f32> = xs.iter().map(|x| x.to_f32()).collect();
    for op in [tally::ReduceOp::Min, tally::ReduceOp::ArgMin, tally::ReduceOp::MinMax, tally::ReduceOp::ArgMax] {
        for options in [tally::ReduceOptions::default(), tally::ReduceOptions::skip_nan()] {
            let h = cpu.reduce(&xs[..], op, options).unwrap();
            let f = cpu.reduce(&as32[..], op, options).unwrap();
            assert_eq!((h.value.to_bits(), h.index, h.nan_skipped), (f.value.to_bits(), f.index, f.nan_skipped));
        }
    }
}
