//! What the scan tests of both backends share: inputs of every type, and the checks of every
//! op, inclusive and exclusive, plain and by key, against the sequential reference.
#![allow(dead_code)] // each test binary uses its own subset

use tally::scan::reference;
use tally::{Backend, ScanInto, ScanKey, ScanOp, ScanOptions, ScanValue};

pub use crate::common::Rng;

/// Elements from random bits: integers over their whole range (64-bit ones over 40 bits, so
/// that checked sums of a few million of them stay in range), floats in [-1, 1).
pub trait Gen: ScanValue {
    fn gen(r: &mut Rng) -> Self;
}
crate::common::gen_truncated!(Gen: u8, i8, u16, i16, u32, i32);
impl Gen for u64 {
    fn gen(r: &mut Rng) -> Self {
        r.next() >> 24
    }
}
impl Gen for i64 {
    fn gen(r: &mut Rng) -> Self {
        (r.next() as i64) >> 24
    }
}
impl Gen for f32 {
    fn gen(r: &mut Rng) -> Self {
        (r.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}
impl Gen for f64 {
    fn gen(r: &mut Rng) -> Self {
        (r.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

pub fn data<T: Gen>(n: usize, seed: u64) -> Vec<T> {
    crate::common::draw(n, seed, T::gen)
}

/// Keys in runs of random lengths (1 to `max_run`).
pub fn runs(n: usize, max_run: u64, seed: u64) -> Vec<u32> {
    let mut r = Rng(seed);
    let mut keys = Vec::with_capacity(n);
    let mut key = 0u32;
    while keys.len() < n {
        let len = 1 + r.next() % max_run;
        for _ in 0..len.min((n - keys.len()) as u64) {
            keys.push(key);
        }
        key = key.wrapping_add(1 + (r.next() % 3) as u32);
    }
    keys
}

/// `got` against `want`: bit for bit for integers, min and max; float sums within a relative
/// tolerance of the running sum of magnitudes.
pub fn compare<T: ScanInto<O>, O: ScanValue>(xs: &[T], got: &[O], want: &[O], op: ScanOp, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if op != ScanOp::Sum || !O::TYPE.is_float() {
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let same = g.to_f64().to_bits() == w.to_f64().to_bits() || (g.is_nan() && w.is_nan());
            assert!(same && g.to_i128() == w.to_i128(), "{what}: element {i}: {g:?} != {w:?}");
        }
        return;
    }
    let eps = if O::TYPE == tally::reduce::ElementType::F32 { 1e-5 } else { 1e-13 };
    let mut mag = 0.0f64;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        mag += xs[i].to_f64().abs();
        let (g, w) = (g.to_f64(), w.to_f64());
        assert!((g - w).abs() <= eps * mag.max(1.0), "{what}: element {i}: {g} vs {w} (magnitude {mag})");
    }
}

/// Every op, inclusive and exclusive, into the input type; sums also into `W`.
pub fn check_ops<T: Gen + ScanInto<T> + ScanInto<W>, W: ScanValue>(backend: &Backend, xs: &[T], what: &str) {
    let none = None::<&[u32]>;
    for exclusive in [false, true] {
        let options = ScanOptions { exclusive, ..ScanOptions::default() }.with_wrapping(true);
        for op in [ScanOp::Sum, ScanOp::Min, ScanOp::Max] {
            let got: Vec<T> = backend.scan_vec(xs, op, options).unwrap();
            let want: Vec<T> = reference::scan(xs, none, op, &options).unwrap();
            compare(xs, &got, &want, op, &format!("{what} {op:?} exclusive={exclusive} n={}", xs.len()));
        }
        let options = ScanOptions { exclusive, ..ScanOptions::default() };
        let got: Vec<W> = backend.scan_vec(xs, ScanOp::Sum, options).unwrap();
        let want: Vec<W> = reference::scan(xs, none, ScanOp::Sum, &options).unwrap();
        compare(xs, &got, &want, ScanOp::Sum, &format!("{what} wide sum exclusive={exclusive} n={}", xs.len()));
    }
}

/// Scans by key of every op against the reference.
pub fn check_by_key<K: ScanKey, T: Gen + ScanInto<T> + ScanInto<W>, W: ScanValue>(
    backend: &Backend,
    keys: &[K],
    xs: &[T],
    what: &str,
) {
    for exclusive in [false, true] {
        let options = ScanOptions { exclusive, ..ScanOptions::default() }.with_wrapping(true);
        for op in [ScanOp::Sum, ScanOp::Min, ScanOp::Max] {
            let got: Vec<T> = backend.scan_by_key_vec(keys, xs, op, options).unwrap();
            let want: Vec<T> = reference::scan(xs, Some(keys), op, &options).unwrap();
            compare(xs, &got, &want, op, &format!("{what} by key {op:?} exclusive={exclusive} n={}", xs.len()));
        }
        let options = ScanOptions { exclusive, ..ScanOptions::default() };
        let got: Vec<W> = backend.scan_by_key_vec(keys, xs, ScanOp::Sum, options).unwrap();
        let want: Vec<W> = reference::scan(xs, Some(keys), ScanOp::Sum, &options).unwrap();
        compare(xs, &got, &want, ScanOp::Sum, &format!("{what} by key, wide sum exclusive={exclusive}"));
    }
}

/// Bitwise equality of two float vectors.
pub fn same_bits<O: ScanValue>(a: &[O], b: &[O]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_f64().to_bits() == y.to_f64().to_bits())
}
