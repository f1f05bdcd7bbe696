//! The CPU backend: rayon over chunks of the input, in two passes. The first counts what each
//! chunk keeps; a prefix over the counts gives each chunk its place in the output; the second
//! tests the chunk again and writes what it keeps there. Within a chunk, blocks of elements are
//! tested into a mask by the predicate's block evaluator and compacted without branches.

use super::SelectFlag;
use crate::error::{Error, Result};
use crate::predicate::eval::{Scratch, BLOCK};
use crate::predicate::Bound;
use crate::reduce::ReduceElement;
use rayon::prelude::*;
use std::mem::MaybeUninit;
use std::ops::Range;

/// Elements per chunk (a rayon task).
pub const CHUNK: usize = 1 << 16;

/// What decides which elements are kept.
trait Keep: Sync {
    /// `mask[i]`: 1 if element `start + i` is kept, else 0.
    fn mask(&self, start: usize, mask: &mut [u8], scratch: &mut Scratch);
}

struct ByPredicate<'a, T> {
    xs: &'a [T],
    bound: &'a Bound<T>,
}

impl<T: ReduceElement> Keep for ByPredicate<'_, T> {
    fn mask(&self, start: usize, mask: &mut [u8], scratch: &mut Scratch) {
        self.bound.eval_block(&self.xs[start..start + mask.len()], mask, scratch);
    }
}

struct ByFlags<'a, F>(&'a [F]);

impl<F: SelectFlag> Keep for ByFlags<'_, F> {
    fn mask(&self, start: usize, mask: &mut [u8], _: &mut Scratch) {
        for (m, f) in mask.iter_mut().zip(&self.0[start..]) {
            *m = f.keeps() as u8;
        }
    }
}

fn chunks(n: usize) -> impl IndexedParallelIterator<Item = Range<usize>> {
    (0..n.div_ceil(CHUNK)).into_par_iter().map(move |c| c * CHUNK..((c + 1) * CHUNK).min(n))
}

/// Calls `f(block range, mask)` for each block of `range`.
fn for_blocks<K: Keep>(keep: &K, range: Range<usize>, mut f: impl FnMut(Range<usize>, &[u8])) {
    let mut scratch = Scratch::default();
    let mut mask = vec![0u8; BLOCK];
    let mut start = range.start;
    while start < range.end {
        let end = (start + BLOCK).min(range.end);
        let m = &mut mask[..end - start];
        keep.mask(start, m, &mut scratch);
        f(start..end, m);
        start = end;
    }
}

/// What each chunk keeps.
fn chunk_counts<K: Keep>(n: usize, keep: &K) -> Vec<usize> {
    chunks(n)
        .map(|range| {
            let mut kept = 0usize;
            for_blocks(keep, range, |_, m| kept += m.iter().map(|&b| b as usize).sum::<usize>());
            kept
        })
        .collect()
}

/// `buf` cut into consecutive pieces of `lens`.
fn split_by<'a, O>(mut buf: &'a mut [MaybeUninit<O>], lens: &[usize]) -> Vec<&'a mut [MaybeUninit<O>]> {
    let mut pieces = Vec::with_capacity(lens.len());
    for &len in lens {
        let (head, tail) = buf.split_at_mut(len);
        pieces.push(head);
        buf = tail;
    }
    pieces
}

/// Appends `items` to `dst` from `*at` on; false where they do not fit.
fn put<O: Copy>(dst: &mut [MaybeUninit<O>], at: &mut usize, items: &[O]) -> bool {
    let Some(slot) = dst.get_mut(*at..*at + items.len()) else { return false };
    for (d, s) in slot.iter_mut().zip(items) {
        d.write(*s);
    }
    *at += items.len();
    true
}

fn inconsistent() -> Error {
    Error::invalid("the predicate answered differently when asked twice about the same elements")
}

/// The kept items of `n` elements (`items(range)`: the items of a range of elements), in
/// order; with `rejected`, then the others in order. Returns the output and the kept count.
fn compact<O, K, I>(
    n: usize,
    keep: &K,
    items: impl Fn(Range<usize>) -> I + Sync,
    rejected: bool,
) -> Result<(Vec<O>, u64)>
where
    O: Copy + Default + Send + Sync,
    K: Keep,
    I: Iterator<Item = O>,
{
    let counts = chunk_counts(n, keep);
    let kept: usize = counts.iter().sum();
    let total = if rejected { n } else { kept };
    let mut out: Vec<O> = Vec::with_capacity(total);
    let (front, back) = out.spare_capacity_mut()[..total].split_at_mut(kept);
    let kept_pieces = split_by(front, &counts);
    let rejected_lens: Vec<usize> =
        if rejected { chunks(n).zip(&counts).map(|(r, c)| r.len() - c).collect() } else { vec![0; counts.len()] };
    let rejected_pieces = split_by(back, &rejected_lens);
    let filled = chunks(n).zip(kept_pieces).zip(rejected_pieces).all(|((range, kd), rd)| {
        let (mut kb, mut rb) = (vec![O::default(); BLOCK], vec![O::default(); if rejected { BLOCK } else { 0 }]);
        let (mut ka, mut ra, mut ok) = (0, 0, true);
        for_blocks(keep, range, |block, m| {
            let (mut k, mut r) = (0, 0);
            if rejected {
                for (x, &b) in items(block).zip(m) {
                    kb[k] = x;
                    rb[r] = x;
                    k += b as usize;
                    r += 1 - b as usize;
                }
                ok &= put(rd, &mut ra, &rb[..r]);
            } else {
                for (x, &b) in items(block).zip(m) {
                    kb[k] = x;
                    k += b as usize;
                }
            }
            ok &= put(kd, &mut ka, &kb[..k]);
        });
        ok && ka == kd.len() && ra == rd.len()
    });
    if !filled {
        return Err(inconsistent());
    }
    // SAFETY: each chunk wrote exactly its piece of the first `total` slots (checked above:
    // every piece was filled to its length, and the pieces tile the range), so all of them
    // hold initialised values.
    unsafe { out.set_len(total) };
    Ok((out, kept as u64))
}

/// The passing elements, in order.
pub fn select<T: ReduceElement>(xs: &[T], bound: &Bound<T>) -> Result<Vec<T>> {
    let keep = ByPredicate { xs, bound };
    Ok(compact(xs.len(), &keep, |r| xs[r].iter().copied(), false)?.0)
}

/// The indices of the passing elements.
pub fn select_indices<T: ReduceElement>(xs: &[T], bound: &Bound<T>) -> Result<Vec<u64>> {
    let keep = ByPredicate { xs, bound };
    Ok(compact(xs.len(), &keep, |r| r.map(|i| i as u64), false)?.0)
}

/// The flagged elements, in order (`flags` as long as `xs`).
pub fn select_flagged<T: ReduceElement, F: SelectFlag>(xs: &[T], flags: &[F]) -> Result<Vec<T>> {
    Ok(compact(xs.len(), &ByFlags(flags), |r| xs[r].iter().copied(), false)?.0)
}

/// The passing elements, then the others (in order, or reversed with `rejected_reversed`).
pub fn partition<T: ReduceElement>(xs: &[T], bound: &Bound<T>, rejected_reversed: bool) -> Result<(Vec<T>, u64)> {
    let keep = ByPredicate { xs, bound };
    let (mut out, kept) = compact(xs.len(), &keep, |r| xs[r].iter().copied(), true)?;
    if rejected_reversed {
        out[kept as usize..].reverse();
    }
    Ok((out, kept))
}

/// How many elements pass.
pub fn count_if<T: ReduceElement>(xs: &[T], bound: &Bound<T>) -> u64 {
    chunk_counts(xs.len(), &ByPredicate { xs, bound }).iter().sum::<usize>() as u64
}
