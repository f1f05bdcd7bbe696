//! What the run tests of both backends share: keys of every type in runs of chosen lengths,
//! special keys (NaN, -0.0), and the checks of unique, run-length encoding and every
//! reduce-by-key op against the sequential reference.
#![allow(dead_code)] // each test binary uses its own subset

use crate::scan_common::{data, Gen};
use tally::runs::reference;
use tally::{Backend, ReduceByKeyInto, RunKey, RunOp, ScanValue};

/// A key type the tests make from run numbers.
pub trait KeyGen: RunKey {
    fn from_id(id: u32) -> Self;
}
macro_rules! key_gen {
    ($($t:ty),*) => {$(
        impl KeyGen for $t {
            fn from_id(id: u32) -> Self { id as $t }
        }
    )*};
}
key_gen!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64);

/// Keys in runs of 1 to `max_run` (neighbouring runs differ, also after narrowing to u8).
pub fn keys<K: KeyGen>(n: usize, max_run: u64, seed: u64) -> Vec<K> {
    crate::scan_common::runs(n, max_run, seed).into_iter().map(K::from_id).collect()
}

/// Keys whose runs end exactly at multiples of `edge` and around them (lengths edge - 1,
/// 1, edge, 2 * edge + 1, 3, ...), then one run over several edges.
pub fn edge_keys<K: KeyGen>(n: usize, edge: usize) -> Vec<K> {
    let lengths = [edge - 1, 1, edge, 2 * edge + 1, 3, edge - 4, 5 * edge];
    let mut out = Vec::with_capacity(n);
    for (id, &l) in lengths.iter().cycle().enumerate() {
        if out.len() >= n {
            break;
        }
        out.extend(std::iter::repeat_n(K::from_id(id as u32), l.min(n - out.len())));
    }
    out
}

/// Float keys with NaNs (each a run of its own), -0.0 next to +0.0 (one run), and infinities.
pub fn special_keys<F: KeyGen + From<f32>>(n: usize) -> Vec<F> {
    let pattern = [f32::NAN, f32::NAN, 0.0, -0.0, -0.0, 0.0, 1.0, f32::INFINITY, f32::INFINITY, f32::NAN, -0.0, 2.0];
    (0..n).map(|i| F::from(pattern[(i / 3) % pattern.len()])).collect()
}

/// Whether two outputs are the same bits (NaN payloads aside).
pub fn same<O: ScanValue>(got: &[O], want: &[O]) -> bool {
    got.len() == want.len()
        && got.iter().zip(want).all(|(g, w)| {
            (g.to_f64().to_bits() == w.to_f64().to_bits() && g.to_i128() == w.to_i128()) || (g.is_nan() && w.is_nan())
        })
}

/// The first run whose float sum `got` is not close to `want`: the same value, both NaN, or
/// within 2 (len - 1) u sum(|x|) of the run, the bound any two orders of additions satisfy
/// (u: the unit roundoff of the output type; a run holding an infinity sums to it, or to NaN,
/// in every order where its finite values cannot overflow).
pub fn far_sum<V: ScanValue, O: ScanValue>(values: &[V], lengths: &[u64], got: &[O], want: &[O]) -> Option<usize> {
    let u = if O::TYPE == tally::ElementType::F32 { 1.0 / (1u64 << 24) as f64 } else { 1.0 / (1u64 << 53) as f64 };
    let mut start = 0usize;
    for (r, (&g, &w)) in got.iter().zip(want).enumerate() {
        let len = lengths[r] as usize;
        let mag: f64 = values[start..start + len].iter().map(|x| x.to_f64().abs()).sum();
        let (g, w) = (g.to_f64(), w.to_f64());
        let bound = 2.0 * (len.saturating_sub(1)) as f64 * u * mag;
        if !(g == w || (g.is_nan() && w.is_nan()) || (g - w).abs() <= bound) {
            return Some(r);
        }
        start += len;
    }
    None
}

/// Float sums against the reference ([`far_sum`]).
pub fn close_sums<V: ScanValue, O: ScanValue>(values: &[V], lengths: &[u64], got: &[O], want: &[O], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: runs");
    if let Some(r) = far_sum(values, lengths, got, want) {
        panic!("{what}: run {r}: {} vs {}", got[r].to_f64(), want[r].to_f64());
    }
}

/// Unique and run-length encoding of `keys` on `backend` against the reference, exactly.
pub fn check_runs<K: RunKey>(backend: &Backend, keys: &[K], what: &str) {
    let (want_keys, want_lengths) = reference::run_length_encode(keys);
    assert!(same(&backend.unique_vec(keys).unwrap(), &want_keys), "{what}: unique");
    let (got_keys, got_lengths) = backend.run_length_encode_vec(keys).unwrap();
    assert!(same(&got_keys, &want_keys), "{what}: encode keys");
    assert_eq!(got_lengths, want_lengths, "{what}: encode lengths");
}

/// Reduce-by-key of every op into `V` itself (sums wrap for narrow types) and sums into `W`,
/// against the reference: exactly, except float sums where `float_sums_exact` is false.
pub fn check_reduce<
    K: RunKey,
    V: Gen + ReduceByKeyInto<V> + ReduceByKeyInto<W> + ReduceByKeyInto<u64>,
    W: ScanValue,
>(
    backend: &Backend,
    keys: &[K],
    seed: u64,
    float_sums_exact: bool,
    what: &str,
) {
    let values: Vec<V> = data(keys.len(), seed);
    let (want_keys, lengths) = reference::run_length_encode(keys);
    for op in [RunOp::Sum, RunOp::Min, RunOp::Max] {
        let what = format!("{what} {} of {}", op.name(), V::TYPE);
        let (k, got): (Vec<K>, Vec<V>) = backend.reduce_by_key_vec(keys, &values, op).unwrap();
        let (_, want) = reference::reduce_by_key::<K, V, V>(keys, &values, op).unwrap();
        assert!(same(&k, &want_keys), "{what}: keys");
        if op == RunOp::Sum && V::TYPE.is_float() && !float_sums_exact {
            close_sums(&values, &lengths, &got, &want, &what);
        } else {
            assert!(same(&got, &want), "{what}: values");
        }
    }
    let (k, got): (Vec<K>, Vec<W>) = backend.reduce_by_key_vec(keys, &values, RunOp::Sum).unwrap();
    let (_, want) = reference::reduce_by_key::<K, V, W>(keys, &values, RunOp::Sum).unwrap();
    assert!(same(&k, &want_keys), "{what}: wide sum keys");
    if W::TYPE.is_float() && !float_sums_exact {
        close_sums(&values, &lengths, &got, &want, &format!("{what} wide sum"));
    } else {
        assert!(same(&got, &want), "{what}: wide sums of {}", V::TYPE);
    }
    let (k, counts): (Vec<K>, Vec<u64>) = backend.reduce_by_key_vec(keys, &values, RunOp::Count).unwrap();
    assert!(same(&k, &want_keys), "{what}: count keys");
    assert_eq!(counts, lengths, "{what}: counts");
}
