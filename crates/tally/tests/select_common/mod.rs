//! What the select tests of both backends share: inputs of every type with a chosen share of
//! elements kept (small values, NaNs and infinities among the floats), the predicates, and the
//! checks of every entry point against the sequential reference.
#![allow(dead_code)] // each test binary uses its own subset

use tally::select::reference;
use tally::{Backend, Predicate, SelectElement, SelectOptions};

/// A small deterministic generator (splitmix64).
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// `v` as an element (signed and float types get it shifted down by 50).
pub fn element<T: SelectElement>(v: i64) -> T {
    let v = if T::TYPE.is_signed_int() || T::TYPE.is_float() { v - 50 } else { v };
    T::from_value(v as f64, Some(v as i128))
}

/// Values 0 to 100 (shifted for signed types and floats), floats with a NaN about every 17th
/// element, an infinity every 97th and -0.0 every 89th.
pub fn data<T: SelectElement>(n: usize, seed: u64) -> Vec<T> {
    let mut r = Rng(seed);
    (0..n)
        .map(|i| {
            let v = r.next();
            if T::TYPE.is_float() {
                match v % 97 {
                    0 => return T::from_value(f64::INFINITY, None),
                    1 => return T::from_value(f64::NEG_INFINITY, None),
                    _ if v % 17 == 3 => return T::from_value(f64::NAN, None),
                    _ if v % 89 == 5 => return T::from_value(-0.0, None),
                    _ if i % 5 == 0 => return T::from_value((v % 2000) as f64 / 20.0 - 50.0, None),
                    _ => {}
                }
            }
            element((v % 101) as i64)
        })
        .collect()
}

/// 0 and 1 in turns, in runs of `run` elements (keep them with `x == 1`).
pub fn alternating<T: SelectElement>(n: usize, run: usize) -> Vec<T> {
    (0..n).map(|i| T::from_value(((i / run) % 2) as f64, Some(((i / run) % 2) as i128))).collect()
}

/// Predicates that keep from none to all of [`data`].
pub const PREDICATES: [&str; 12] = [
    "x > 10",
    "x >= -3 && x < 20.5",
    "x == 7 || x == 99 || x == 0",
    "!(x < 50)",
    "isnan(x) || x > 90",
    "!isnan(x) && x != 3",
    "x",
    "true",
    "false",
    "x < 0.5 || x >= inf",
    "x > -inf && isfinite(x)",
    "x <= 1e10 && x != -2.5",
];

/// Every entry point on `backend` against the reference, for `predicate` on `xs`.
pub fn check_all<T: SelectElement>(backend: &Backend, xs: &[T], predicate: &str, what: &str) {
    let p = Predicate::parse(predicate).unwrap();
    let label = format!("{what} {} n={} {predicate:?}", T::TYPE, xs.len());
    let want = reference::select(xs, &p);
    let got = backend.select_vec(xs, &p, SelectOptions::default()).unwrap();
    assert!(same_bits(&got, &want), "select: {label}");
    let mut unordered = backend.select_vec(xs, &p, SelectOptions::unordered()).unwrap();
    assert_eq!(unordered.len(), want.len(), "unordered count: {label}");
    let mut sorted = want.clone();
    sort_bits(&mut unordered);
    sort_bits(&mut sorted);
    assert!(same_bits(&unordered, &sorted), "unordered as a multiset: {label}");
    assert_eq!(backend.select_indices_vec(xs, &p).unwrap(), reference::select_indices(xs, &p), "indices: {label}");
    assert_eq!(backend.count_if(xs, &p).unwrap(), want.len() as u64, "count_if: {label}");
    let (parted, kept) = backend.partition_vec(xs, &p).unwrap();
    let (want_parted, want_kept) = reference::partition(xs, &p);
    assert_eq!(kept, want_kept, "partition count: {label}");
    assert!(same_bits(&parted, &want_parted), "partition: {label}");
    let (reversed, kept) =
        backend.partition_with(xs, &p, SelectOptions { rejected_reversed: true, ..Default::default() }).unwrap();
    let reversed = to_host(backend, reversed);
    let mut want_reversed = want_parted;
    want_reversed[want_kept as usize..].reverse();
    assert_eq!(kept, want_kept);
    assert!(same_bits(&reversed, &want_reversed), "partition, rejected reversed: {label}");
    let flags: Vec<u8> =
        xs.iter().map(|&x| if reference::passes(&p, x) { 1 + (x.to_f64() as u8 % 3) * 100 } else { 0 }).collect();
    assert!(same_bits(&backend.select_flagged_vec(xs, &flags).unwrap(), &want), "flagged (u8): {label}");
    let bools: Vec<bool> = flags.iter().map(|&f| f != 0).collect();
    assert!(same_bits(&backend.select_flagged_vec(xs, &bools).unwrap(), &want), "flagged (bool): {label}");
}

pub fn to_host<T: SelectElement>(backend: &Backend, b: tally::Buffer<T>) -> Vec<T> {
    match (backend, b) {
        (_, tally::Buffer::Host(v)) => v,
        (Backend::Cuda(d), tally::Buffer::Cuda(b)) => d.stream().download(&b.view()).unwrap(),
        _ => panic!("a device buffer from the CPU backend"),
    }
}

/// Element-wise equality of the bits (NaN equals NaN; -0.0 differs from 0.0).
pub fn same_bits<T: SelectElement>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| bits(*x) == bits(*y))
}

fn bits<T: SelectElement>(x: T) -> u64 {
    if T::TYPE.is_float() {
        x.to_f64().to_bits()
    } else {
        x.to_i128() as u64
    }
}

pub fn sort_bits<T: SelectElement>(v: &mut [T]) {
    v.sort_by_key(|x| bits(*x));
}
