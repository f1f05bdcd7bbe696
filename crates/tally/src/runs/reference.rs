//! The plain sequential statements of the run primitives that the tests hold every backend to:
//! one element at a time, left to right. A run starts at element 0 and wherever
//! `keys[i] != keys[i - 1]` (IEEE `==` for floats: a NaN starts a run of its own).

use super::element::{ReduceByKeyInto, RunKey};
use super::{overflow_error, RunOp};
use crate::error::{Error, Result};
use crate::scan::{ScanOp, ScanValue};

/// The start of every run, in order.
pub fn heads<K: RunKey>(keys: &[K]) -> Vec<usize> {
    (0..keys.len()).filter(|&i| i == 0 || keys[i] != keys[i - 1]).collect()
}

/// The first key of every run (consecutive duplicates dropped).
pub fn unique<K: RunKey>(keys: &[K]) -> Vec<K> {
    heads(keys).into_iter().map(|i| keys[i]).collect()
}

/// The first key and the length of every run.
pub fn run_length_encode<K: RunKey>(keys: &[K]) -> (Vec<K>, Vec<u64>) {
    let starts = heads(keys);
    let lengths = (0..starts.len()).map(|r| (starts.get(r + 1).copied().unwrap_or(keys.len()) - starts[r]) as u64);
    (starts.iter().map(|&i| keys[i]).collect(), lengths.collect())
}

/// The first key of every run and `op` over its values, left to right (sums wrap, except that
/// a 64-bit integer sum whose exact running value leaves its type is an overflow error).
pub fn reduce_by_key<K: RunKey, V: ReduceByKeyInto<O>, O: ScanValue>(
    keys: &[K],
    values: &[V],
    op: RunOp,
) -> Result<(Vec<K>, Vec<O>)> {
    if keys.len() != values.len() {
        return Err(Error::invalid("one value per key"));
    }
    let starts = heads(keys);
    let ends = |r: usize| starts.get(r + 1).copied().unwrap_or(keys.len());
    let scan_op = match op {
        RunOp::Count => {
            let counts = (0..starts.len()).map(|r| O::from_bits64((ends(r) - starts[r]) as u64)).collect();
            return Ok((unique(keys), counts));
        }
        RunOp::Sum => ScanOp::Sum,
        RunOp::Min => ScanOp::Min,
        RunOp::Max => ScanOp::Max,
    };
    let mut out = Vec::with_capacity(starts.len());
    for (r, &s) in starts.iter().enumerate() {
        let run = &values[s..ends(r)];
        if scan_op == ScanOp::Sum && O::CHECKED {
            let (lo, hi) = O::TYPE.int_range();
            let mut exact = 0i128;
            for &v in run {
                exact += v.to_i128();
                if exact < lo || exact > hi {
                    return Err(overflow_error::<O>());
                }
            }
        }
        let first: O = run[0].convert();
        out.push(run[1..].iter().fold(first, |a, &v| scan_op.apply(a, v.convert())));
    }
    Ok((unique(keys), out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_a_small_input() {
        let keys = [3i32, 3, 1, 1, 1, 3, 7];
        assert_eq!(unique(&keys), [3, 1, 3, 7]);
        assert_eq!(run_length_encode(&keys), (vec![3, 1, 3, 7], vec![2, 3, 1, 1]));
        let values = [1i32, 2, 3, 4, 5, 6, 7];
        let (k, s) = reduce_by_key::<_, _, i64>(&keys, &values, RunOp::Sum).unwrap();
        assert_eq!((k, s), (vec![3, 1, 3, 7], vec![3, 12, 6, 7]));
        let (_, m) = reduce_by_key::<_, _, i32>(&keys, &values, RunOp::Max).unwrap();
        assert_eq!(m, [2, 5, 6, 7]);
        let (_, c) = reduce_by_key::<_, _, u64>(&keys, &values, RunOp::Count).unwrap();
        assert_eq!(c, [2, 3, 1, 1]);
        let nan = [f32::NAN, f32::NAN, 0.0, -0.0];
        assert_eq!(run_length_encode(&nan).1, [1, 1, 2]);
        let big = [i64::MAX, 1, -5];
        assert!(reduce_by_key::<_, _, i64>(&[0u8; 3], &big, RunOp::Sum).is_err());
        assert!(run_length_encode::<u8>(&[]).0.is_empty());
    }
}
