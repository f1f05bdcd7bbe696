//! The run primitives on the CPU backend against the plain sequential reference: every key and
//! value type, runs across the backend's chunks, NaN and -0.0 keys, overflow and bad types.
//! The CPU combines each run left to right, as the reference does, so float sums agree bit
//! for bit.

mod common;
mod runs_common;
mod scan_common;

use runs_common::*;
use tally::runs::cpu::CHUNK;
use tally::runs::reference;
use tally::{Backend, Error, RunOp};

macro_rules! every_key_type {
    ($($name:ident: $k:ty),*) => {$(
        #[test]
        fn $name() {
            let cpu = Backend::cpu();
            for (s, n) in [0usize, 1, 2, 31, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 17].into_iter().enumerate() {
                for max_run in [1, 8, 5000, 3 * CHUNK as u64] {
                    let keys: Vec<$k> = keys(n, max_run, s as u64);
                    let what = format!("{} n={n} runs<={max_run}", stringify!($k));
                    check_runs(&cpu, &keys, &what);
                    check_reduce::<$k, f32, f32>(&cpu, &keys, s as u64, true, &what);
                }
            }
            let edges: Vec<$k> = edge_keys(9 * CHUNK + 5, CHUNK);
            check_runs(&cpu, &edges, "chunk edges");
            check_reduce::<$k, i32, i64>(&cpu, &edges, 3, true, "chunk edges");
        }
    )*};
}
every_key_type!(cpu_u8_keys: u8, cpu_i8_keys: i8, cpu_u16_keys: u16, cpu_i16_keys: i16, cpu_u32_keys: u32,
                cpu_i32_keys: i32, cpu_u64_keys: u64, cpu_i64_keys: i64, cpu_f32_keys: f32, cpu_f64_keys: f64);

macro_rules! every_value_type {
    ($($name:ident: $v:ty => $w:ty),*) => {$(
        #[test]
        fn $name() {
            let cpu = Backend::cpu();
            for (s, n) in [1usize, 100, 2 * CHUNK + 3].into_iter().enumerate() {
                let keys: Vec<u32> = keys(n, 20, 7 + s as u64);
                check_reduce::<u32, $v, $w>(&cpu, &keys, s as u64, true, stringify!($v));
                let long: Vec<u64> = keys.iter().map(|&k| k as u64 / 64).collect();
                check_reduce::<u64, $v, $w>(&cpu, &long, s as u64, true, stringify!($v));
            }
        }
    )*};
}
every_value_type!(cpu_u8_values: u8 => u64, cpu_i8_values: i8 => i64, cpu_u16_values: u16 => u64,
                  cpu_i16_values: i16 => i64, cpu_u32_values: u32 => u64, cpu_i32_values: i32 => i64,
                  cpu_u64_values: u64 => u64, cpu_i64_values: i64 => i64, cpu_f32_values: f32 => f32,
                  cpu_f64_values: f64 => f64);

#[test]
fn nan_keys_are_runs_of_one_and_signed_zeros_join() {
    let cpu = Backend::cpu();
    for n in [12, 37, 2 * CHUNK + 1] {
        let f: Vec<f32> = special_keys(n);
        check_runs(&cpu, &f, "f32 specials");
        check_reduce::<f32, f64, f64>(&cpu, &f, 1, true, "f32 specials");
        let d: Vec<f64> = special_keys(n);
        check_runs(&cpu, &d, "f64 specials");
    }
    let keys = [f32::NAN, f32::NAN, -0.0, 0.0, 0.0];
    let (k, c) = cpu.run_length_encode_vec(&keys).unwrap();
    assert_eq!(c, [1, 1, 3]);
    assert!(k[0].is_nan() && k[1].is_nan());
    assert_eq!(k[2].to_bits(), (-0.0f32).to_bits(), "a run keeps its first key's bits");
    // A run of -0.0 values sums to -0.0.
    let (_, s): (Vec<u8>, Vec<f32>) = cpu.reduce_by_key_vec(&[1u8, 1], &[-0.0f32, -0.0], RunOp::Sum).unwrap();
    assert_eq!(s[0].to_bits(), (-0.0f32).to_bits());
}

#[test]
fn all_equal_and_all_different() {
    let cpu = Backend::cpu();
    let n = 3 * CHUNK + 11;
    let same = vec![5i16; n];
    assert_eq!(cpu.run_length_encode_vec(&same).unwrap(), (vec![5], vec![n as u64]));
    let values: Vec<i64> = (0..n as i64).collect();
    let (_, s): (Vec<i16>, Vec<i64>) = cpu.reduce_by_key_vec(&same, &values, RunOp::Sum).unwrap();
    assert_eq!(s, [(n as i64 - 1) * n as i64 / 2]);
    let different: Vec<u32> = (0..n as u32).collect();
    assert_eq!(cpu.unique_vec(&different).unwrap(), different);
    let (_, m): (Vec<u32>, Vec<i64>) = cpu.reduce_by_key_vec(&different, &values, RunOp::Min).unwrap();
    assert_eq!(m, values);
}

#[test]
fn sums_that_leave_64_bits_are_errors() {
    let cpu = Backend::cpu();
    let n = 2 * CHUNK + 9;
    let keys = vec![1u32; n];
    let mut values = vec![1i64 << 40; n];
    values[CHUNK + 3] = i64::MAX - (1 << 45);
    let r = cpu.reduce_by_key::<u32, i64, i64>(&keys, &values, RunOp::Sum);
    assert!(matches!(r, Err(Error::Overflow(_))), "{:?}", r.err());
    assert!(reference::reduce_by_key::<u32, i64, i64>(&keys, &values, RunOp::Sum).is_err());
    // Split into runs whose sums fit, the same values are fine.
    let split: Vec<u32> =
        (0..n as u32).map(|i| (i >= (CHUNK + 3) as u32) as u32 + (i > (CHUNK + 3) as u32) as u32).collect();
    let got: (Vec<u32>, Vec<i64>) = cpu.reduce_by_key_vec(&split, &values, RunOp::Sum).unwrap();
    assert_eq!(got, reference::reduce_by_key(&split, &values, RunOp::Sum).unwrap());
    let big = vec![u64::MAX / 2 + 1; 2];
    assert!(matches!(cpu.reduce_by_key::<u8, u64, u64>(&[0u8, 0], &big, RunOp::Sum), Err(Error::Overflow(_))));
    // Narrow outputs, asked for by type, wrap.
    let (_, w): (Vec<u8>, Vec<i32>) = cpu.reduce_by_key_vec(&[0u8, 0], &[i32::MAX, 1], RunOp::Sum).unwrap();
    assert_eq!(w, [i32::MIN]);
}

#[test]
fn bad_arguments_are_invalid() {
    let cpu = Backend::cpu();
    let r = cpu.reduce_by_key::<u8, f32, f32>(&[1u8, 2], &[1.0f32], RunOp::Sum);
    assert!(matches!(r, Err(Error::InvalidArgument(_))));
    let r = cpu.reduce_by_key::<u8, i32, u64>(&[1u8, 2], &[1i32, 2], RunOp::Sum);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "i32 sums are not written as u64");
    let r = cpu.reduce_by_key::<u8, f32, f32>(&[1u8, 2], &[1.0f32, 2.0], RunOp::Count);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "counts are u64");
    let (_, c): (Vec<u8>, Vec<u64>) = cpu.reduce_by_key_vec(&[1u8, 1, 2], &[1.0f32, 2.0, 3.0], RunOp::Count).unwrap();
    assert_eq!(c, [2, 1]);
}
