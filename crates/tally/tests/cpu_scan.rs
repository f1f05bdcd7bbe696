//! The CPU backend's scans against the plain sequential reference: every op and type,
//! inclusive and exclusive, plain, by key, in place, custom; overflow; repeatability.

mod common;
mod scan_common;

use scan_common::*;
use tally::scan::cpu::CHUNK;
use tally::scan::reference;
use tally::{Backend, CustomOp, Error, ScanOp, ScanOptions};

const SIZES: [usize; 7] = [0, 1, 31, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5];

macro_rules! every_type {
    ($($name:ident: $t:ty => $w:ty),*) => {$(
        #[test]
        fn $name() {
            let cpu = Backend::cpu();
            for (k, &n) in SIZES.iter().enumerate() {
                let xs: Vec<$t> = data(n, 11 + k as u64);
                check_ops::<$t, $w>(&cpu, &xs, stringify!($t));
                let keys = runs(n, 50, k as u64);
                check_by_key::<u32, $t, $w>(&cpu, &keys, &xs, stringify!($t));
            }
        }
    )*};
}
every_type!(u8_scans: u8 => u64, i8_scans: i8 => i64, u16_scans: u16 => u64, i16_scans: i16 => i64,
            u32_scans: u32 => u64, i32_scans: i32 => i64, u64_scans: u64 => u64, i64_scans: i64 => i64,
            f32_scans: f32 => f32, f64_scans: f64 => f64);

#[test]
fn cumsum_follows_numpy_types_and_values() {
    let cpu = Backend::cpu();
    assert_eq!(cpu.cumsum_vec(&[250u8, 10, 1]).unwrap(), vec![250u64, 260, 261]);
    assert_eq!(cpu.cumsum_vec(&[-128i8, -128]).unwrap(), vec![-128i64, -256]);
    assert_eq!(cpu.cumsum_vec(&[0.5f32, 0.25]).unwrap(), vec![0.5f32, 0.75]);
    let wrapped: Vec<u8> = cpu.scan_vec(&[250u8, 10], ScanOp::Sum, ScanOptions::default()).unwrap();
    assert_eq!(wrapped, vec![250, 4], "into the input type: wraps, as documented");
    let empty: Vec<i64> = cpu.cumsum_vec(&[] as &[i32]).unwrap();
    assert!(empty.is_empty());
}

#[test]
fn exclusive_starts_with_the_identity() {
    let cpu = Backend::cpu();
    let xs = [3.0f64, -1.0, 2.0];
    let s: Vec<f64> = cpu.scan_vec(&xs, ScanOp::Sum, ScanOptions::exclusive()).unwrap();
    assert_eq!(s, vec![0.0, 3.0, 2.0]);
    let m: Vec<f64> = cpu.scan_vec(&xs, ScanOp::Min, ScanOptions::exclusive()).unwrap();
    assert_eq!(m, vec![f64::INFINITY, 3.0, -1.0]);
    let x: Vec<u16> = cpu.scan_vec(&[5u16, 9], ScanOp::Max, ScanOptions::exclusive()).unwrap();
    assert_eq!(x, vec![0, 5]);
}

#[test]
fn nan_propagates_through_min_and_max() {
    let cpu = Backend::cpu();
    let xs = [1.0f32, f32::NAN, 0.0, 2.0];
    let m: Vec<f32> = cpu.scan_vec(&xs, ScanOp::Max, ScanOptions::default()).unwrap();
    assert!(m[0] == 1.0 && m[1..].iter().all(|v| v.is_nan()));
}

#[test]
fn in_place_equals_out_of_place() {
    let cpu = Backend::cpu();
    for &n in &SIZES {
        let xs: Vec<f32> = data(n, 5);
        for op in [ScanOp::Sum, ScanOp::Min] {
            for options in [ScanOptions::default(), ScanOptions::exclusive()] {
                let want: Vec<f32> = cpu.scan_vec(&xs, op, options).unwrap();
                let mut ys = xs.clone();
                cpu.scan_in_place(&mut ys, op, options).unwrap();
                assert!(same_bits(&ys, &want), "{op:?} {options:?} n={n}");
            }
        }
    }
}

#[test]
fn custom_operations_need_not_commute() {
    let cpu = Backend::cpu();
    let xs: Vec<i64> = data(3 * CHUNK + 9, 2);
    // "the later one": associative, not commutative; every inclusive output is the element.
    let last = CustomOp::new("b", "0", 0i64, |_a: i64, b: i64| b);
    assert_eq!(cpu.scan_custom_vec(&xs, &last, ScanOptions::default()).unwrap(), xs);
    let xor = CustomOp::new("a ^ b", "0", 0i64, |a: i64, b: i64| a ^ b);
    let got = cpu.scan_custom_vec(&xs, &xor, ScanOptions::exclusive()).unwrap();
    let none = None::<&[u32]>;
    assert_eq!(got, reference::scan_with(&xs, none, 0i64, true, |a, b| a ^ b));
}

/// A custom operation that panics part-way through a parallel scan: the panic reaches the
/// caller (the scan's output, filled in place, is never handed out half-written).
#[test]
fn a_panicking_custom_operation_unwinds_to_the_caller() {
    let xs: Vec<i64> = (0..3 * CHUNK as i64 + 9).collect();
    let boom = CustomOp::new("a + b", "0", 0i64, |a: i64, b: i64| {
        assert!(b != 2 * CHUNK as i64 + 5, "the caller's operation panicked");
        a + b
    });
    let r = std::panic::catch_unwind(|| Backend::cpu().scan_custom_vec(&xs, &boom, ScanOptions::default()));
    assert!(r.is_err());
    // The same operation over elements it accepts still scans.
    let ok = Backend::cpu().scan_custom_vec(&xs[..CHUNK + 3], &boom, ScanOptions::default()).unwrap();
    assert_eq!(ok[CHUNK + 2], (CHUNK as i64 + 2) * (CHUNK as i64 + 3) / 2);
}

#[test]
fn sixty_four_bit_overflow_is_an_error_not_a_wrap() {
    let cpu = Backend::cpu();
    let mut xs = vec![1i64 << 40; 3 * CHUNK];
    xs[2 * CHUNK + 7] = i64::MAX - (1 << 50);
    let err = cpu.scan_vec::<i64, i64>(&xs, ScanOp::Sum, ScanOptions::default());
    assert!(matches!(err, Err(Error::Overflow(_))), "{err:?}");
    assert!(matches!(
        reference::scan::<i64, i64, u32>(&xs, None, ScanOp::Sum, &ScanOptions::default()),
        Err(Error::Overflow(_))
    ));
    let wrapped: Vec<i64> = cpu.scan_vec(&xs, ScanOp::Sum, ScanOptions::default().with_wrapping(true)).unwrap();
    let none = None::<&[u32]>;
    assert_eq!(wrapped, reference::scan_with(&xs, none, 0i64, false, |a, b| a.wrapping_add(b)));
    let us = vec![u64::MAX / 2, u64::MAX / 2, 2];
    assert!(matches!(cpu.cumsum_vec(&us), Err(Error::Overflow(_))));
    // A negative running sum that comes back into range still overflowed on the way.
    let swing = vec![i64::MIN, -1, 1];
    assert!(matches!(cpu.cumsum_vec(&swing), Err(Error::Overflow(_))));
    // Restarting segments keep every running sum in range.
    let keys: Vec<u64> = (0..4).collect();
    let big = vec![i64::MAX; 4];
    let by_key: Vec<i64> = cpu.scan_by_key_vec(&keys, &big, ScanOp::Sum, ScanOptions::default()).unwrap();
    assert_eq!(by_key, big);
}

#[test]
fn float_scans_repeat_bit_for_bit_whatever_the_thread_count() {
    let xs: Vec<f32> = data(5 * CHUNK + 3, 9);
    let keys = runs(xs.len(), 10_000, 1);
    let cpu = Backend::cpu();
    let first: Vec<f32> = cpu.scan_vec(&xs, ScanOp::Sum, ScanOptions::default()).unwrap();
    let by_key: Vec<f32> = cpu.scan_by_key_vec(&keys, &xs, ScanOp::Sum, ScanOptions::default()).unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let (single, single_key): (Vec<f32>, Vec<f32>) = pool.install(|| {
        (
            cpu.scan_vec(&xs, ScanOp::Sum, ScanOptions::default()).unwrap(),
            cpu.scan_by_key_vec(&keys, &xs, ScanOp::Sum, ScanOptions::default()).unwrap(),
        )
    });
    assert!(same_bits(&first, &single) && same_bits(&by_key, &single_key));
}

#[test]
fn keys_must_match_values() {
    let cpu = Backend::cpu();
    let r = cpu.scan_by_key_vec::<u32, f32, f32>(&[1u32, 2], &[1.0f32], ScanOp::Sum, ScanOptions::default());
    assert!(matches!(r, Err(Error::InvalidArgument(_))));
}
