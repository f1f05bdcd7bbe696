//! The CPU backend: fixed chunks of [`CHUNK`] keys on rayon. Pass 1 counts the run heads of
//! every chunk in parallel; their prefix gives each chunk the position of its first run in the
//! output; pass 2 writes every chunk's runs in parallel. A run belongs to the chunk holding its
//! head, which reads past its own end until the run ends, so each run's values are combined
//! left to right by one thread: the same bits as the sequential reference, for float sums too.

use super::element::{ReduceByKeyInto, RunKey};
use super::overflow_error;
use crate::error::Result;
use crate::scan::{ScanOp, ScanValue};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// Keys per chunk.
pub const CHUNK: usize = 1 << 16;

/// How many runs start in `keys[base..base + len]`.
fn heads_in<K: RunKey>(keys: &[K], base: usize, len: usize) -> usize {
    let chunk = &keys[base..base + len];
    let first = len > 0 && (base == 0 || keys[base] != keys[base - 1]);
    first as usize + chunk.windows(2).filter(|w| w[0] != w[1]).count()
}

/// Calls `each(start, end)` for every run whose head lies in `keys[base..base + len]`, in order;
/// the last may end past the chunk.
fn runs_in_chunk<K: RunKey>(keys: &[K], base: usize, len: usize, mut each: impl FnMut(usize, usize)) {
    let mut i = base;
    if i > 0 {
        // The run open at the chunk's start belongs to an earlier chunk.
        while i < base + len && keys[i] == keys[i - 1] {
            i += 1;
        }
    }
    while i < base + len {
        let mut j = i + 1;
        while j < keys.len() && keys[j] == keys[j - 1] {
            j += 1;
        }
        each(i, j);
        i = j;
    }
}

/// `out` cut into consecutive pieces of `lengths`.
fn split_by<'a, T>(mut out: &'a mut [T], lengths: &[usize]) -> Vec<&'a mut [T]> {
    let mut pieces = Vec::with_capacity(lengths.len());
    for &l in lengths {
        let (head, rest) = std::mem::take(&mut out).split_at_mut(l);
        pieces.push(head);
        out = rest;
    }
    pieces
}

/// The first key of every run and `per_run(start, end)` of it.
fn collect_runs<K: RunKey, A: Copy + Default + Send>(
    keys: &[K],
    per_run: impl Fn(usize, usize) -> A + Sync,
) -> (Vec<K>, Vec<A>) {
    let n = keys.len();
    let counts: Vec<usize> =
        (0..n.div_ceil(CHUNK)).into_par_iter().map(|c| heads_in(keys, c * CHUNK, CHUNK.min(n - c * CHUNK))).collect();
    let total = counts.iter().sum();
    let mut out_keys = vec![K::default(); total];
    let mut out_values = vec![A::default(); total];
    split_by(&mut out_keys, &counts).into_par_iter().zip(split_by(&mut out_values, &counts)).enumerate().for_each(
        |(c, (ks, vs))| {
            let mut r = 0;
            runs_in_chunk(keys, c * CHUNK, CHUNK.min(n - c * CHUNK), |s, e| {
                ks[r] = keys[s];
                vs[r] = per_run(s, e);
                r += 1;
            });
        },
    );
    (out_keys, out_values)
}

/// The first key of every run.
pub(crate) fn unique<K: RunKey>(keys: &[K]) -> Vec<K> {
    collect_runs(keys, |_, _| ()).0
}

/// The first key and the length of every run.
pub(crate) fn run_length_encode<K: RunKey>(keys: &[K]) -> (Vec<K>, Vec<u64>) {
    collect_runs(keys, |s, e| (e - s) as u64)
}

/// `values[s..e]` combined left to right by `f`; `checked`: flags a 64-bit sum that left its
/// range in `overflowed`.
#[inline(always)]
fn fold_run<V: ReduceByKeyInto<O>, O: ScanValue>(
    run: &[V],
    checked: bool,
    overflowed: &AtomicBool,
    f: impl Fn(O, O) -> O,
) -> O {
    let mut acc: O = run[0].convert();
    let mut bad = false;
    for &v in &run[1..] {
        let (before, x) = (acc, v.convert());
        acc = f(acc, x);
        if checked {
            bad |= O::sum_overflowed(before, x, acc);
        }
    }
    if bad {
        overflowed.store(true, Ordering::Relaxed);
    }
    acc
}

/// The first key of every run and `op` (sum, min or max) over its values.
pub(crate) fn reduce_by_key<K: RunKey, V: ReduceByKeyInto<O>, O: ScanValue>(
    keys: &[K],
    values: &[V],
    op: ScanOp,
) -> Result<(Vec<K>, Vec<O>)> {
    let overflowed = AtomicBool::new(false);
    let of = &overflowed;
    let out = match op {
        ScanOp::Sum => collect_runs(keys, |s, e| fold_run(&values[s..e], O::CHECKED, of, |a: O, b| a.add(b))),
        ScanOp::Min => collect_runs(keys, |s, e| fold_run(&values[s..e], false, of, |a, b| ScanOp::Min.apply(a, b))),
        ScanOp::Max => collect_runs(keys, |s, e| fold_run(&values[s..e], false, of, |a, b| ScanOp::Max.apply(a, b))),
    };
    if overflowed.into_inner() {
        return Err(overflow_error::<O>());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_cross_chunks_and_end_at_their_edges() {
        // Runs of 1, a run over three chunks, and runs ending exactly at chunk edges.
        let n = 4 * CHUNK + 3;
        let keys: Vec<u32> = (0..n)
            .map(|i| if (CHUNK / 2..3 * CHUNK).contains(&i) { 7 } else { (i / (CHUNK / 4)) as u32 * 10 + 1 })
            .collect();
        assert_eq!(unique(&keys), super::super::reference::unique(&keys));
        assert_eq!(run_length_encode(&keys), super::super::reference::run_length_encode(&keys));
        let values: Vec<f32> = (0..n).map(|i| 1.0 / (1 + i % 97) as f32).collect();
        let got = reduce_by_key::<_, _, f32>(&keys, &values, ScanOp::Sum).unwrap();
        let want =
            super::super::reference::reduce_by_key::<_, _, f32>(&keys, &values, super::super::RunOp::Sum).unwrap();
        assert_eq!(got.0, want.0);
        assert_eq!(
            got.1.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            want.1.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
    }
}
