//! The CPU backend: a two-pass blocked scan on rayon. Fixed chunks of [`CHUNK`] elements (the
//! same whatever the thread count): pass 1 combines each chunk in parallel, the chunk totals
//! are combined left to right, and pass 2 rescans each chunk in parallel from its carry. Every
//! combination order is fixed, so float results repeat on every run and machine.

use super::element::{ScanInto, ScanKey, ScanValue};
use super::{overflow_error, CpuOp, ScanOp, ScanOptions};
use crate::error::Result;
use rayon::prelude::*;

/// Elements per chunk.
pub const CHUNK: usize = 1 << 16;

/// Independent accumulators of pass 1 for plain sums (a chain of dependent adds runs at the
/// adder's latency; eight of them keep it busy).
const LANES: usize = 8;

/// A chunk's total: the combination of its elements from its last segment start on, and
/// whether a segment starts inside it (scans by key).
#[derive(Clone, Copy)]
struct Carry<O> {
    value: O,
    starts: bool,
    /// Whether the value holds anything (only the first chunk's carry does not).
    some: bool,
}

/// Whether element `i` starts a segment.
#[inline(always)]
fn head<K: ScanKey>(keys: Option<&[K]>, i: usize) -> bool {
    match keys {
        Some(k) => i == 0 || k[i] != k[i - 1],
        None => false,
    }
}

/// Pass 1: the total of one chunk (elements `base..base + c.len()`).
fn chunk_total<T: ScanInto<O>, O: ScanValue, K: ScanKey>(
    c: &[T],
    base: usize,
    keys: Option<&[K]>,
    op: &CpuOp<'_, O>,
) -> Carry<O> {
    if keys.is_none() && matches!(op, CpuOp::Builtin(ScanOp::Sum)) && O::TYPE.is_float() {
        let mut lanes = [O::ZERO; LANES];
        let mut body = c.chunks_exact(LANES);
        for v in &mut body {
            for (l, &x) in lanes.iter_mut().zip(v) {
                *l = l.add(x.convert());
            }
        }
        let mut total = lanes.iter().fold(O::ZERO, |a, &b| a.add(b));
        for &x in body.remainder() {
            total = total.add(x.convert());
        }
        return Carry { value: total, starts: false, some: true };
    }
    let mut value = op.identity();
    let mut starts = false;
    for (j, &x) in c.iter().enumerate() {
        if head(keys, base + j) {
            starts = true;
            value = x.convert();
        } else {
            value = op.apply(value, x.convert());
        }
    }
    Carry { value, starts, some: true }
}

/// The carries into every chunk: the chunk totals combined left to right.
fn carries<O: ScanValue>(totals: &[Carry<O>], op: &CpuOp<'_, O>) -> Vec<Carry<O>> {
    let mut out = Vec::with_capacity(totals.len());
    let mut run = Carry { value: op.identity(), starts: false, some: false };
    for t in totals {
        out.push(run);
        run = if t.starts || !run.some { *t } else { Carry { value: op.apply(run.value, t.value), ..*t } };
    }
    out
}

/// The carry into every chunk of `xs`: pass 1, then the chunk totals combined left to right.
fn chunk_carries<T: ScanInto<O>, O: ScanValue, K: ScanKey>(
    xs: &[T],
    keys: Option<&[K]>,
    op: &CpuOp<'_, O>,
) -> Vec<Carry<O>> {
    let totals: Vec<Carry<O>> =
        xs.par_chunks(CHUNK).enumerate().map(|(c, chunk)| chunk_total(chunk, c * CHUNK, keys, op)).collect();
    carries(&totals, op)
}

/// One chunk of pass 2: its length, the index of its first element, and the carry into it.
struct ChunkPass<'k, O, K> {
    len: usize,
    base: usize,
    carry: Carry<O>,
    keys: Option<&'k [K]>,
}

impl<O: ScanValue, K: ScanKey> ChunkPass<'_, O, K> {
    /// Chunk `c` of `len` elements.
    fn new<'k>(c: usize, len: usize, carries: &[Carry<O>], keys: Option<&'k [K]>) -> ChunkPass<'k, O, K> {
        ChunkPass { len, base: c * CHUNK, carry: carries[c], keys }
    }

    /// Rescans the chunk: `get(j)` is element `j` of the chunk, `put(j, y)` writes its result
    /// (get(j) is always called before put(j)), for every j below the chunk's length (`scan`
    /// relies on that). Returns whether a checked sum overflowed.
    #[inline(always)]
    fn rescan(
        &self,
        op: &CpuOp<'_, O>,
        options: &ScanOptions,
        get: impl FnMut(usize) -> O,
        put: impl FnMut(usize, O),
    ) -> bool {
        // The common cases get loops of their own, with the operation known at compile time.
        let (identity, exclusive) = (op.identity(), options.exclusive);
        match (self.keys.is_none(), op, op.checked(options)) {
            (true, CpuOp::Builtin(ScanOp::Sum), false) => {
                self.rescan_with(identity, exclusive, false, |a: O, b| a.add(b), get, put)
            }
            (true, CpuOp::Builtin(ScanOp::Sum), true) => {
                self.rescan_with(identity, exclusive, true, |a: O, b| a.add(b), get, put)
            }
            (true, CpuOp::Builtin(b), _) => {
                let b = *b;
                self.rescan_with(identity, exclusive, false, move |x, y| b.apply(x, y), get, put)
            }
            (_, _, checked) => self.rescan_with(identity, exclusive, checked, |a, b| op.apply(a, b), get, put),
        }
    }

    #[inline(always)]
    fn rescan_with(
        &self,
        identity: O,
        exclusive: bool,
        checked: bool,
        f: impl Fn(O, O) -> O,
        mut get: impl FnMut(usize) -> O,
        mut put: impl FnMut(usize, O),
    ) -> bool {
        let (len, base, carry, keys) = (self.len, self.base, self.carry, self.keys);
        let (mut run, mut start) = (carry.value, 0);
        if !carry.some && len > 0 {
            run = get(0);
            put(0, if exclusive { identity } else { run });
            start = 1;
        }
        let mut overflowed = false;
        for j in start..len {
            let x = get(j);
            let before = run;
            if keys.is_some() && head(keys, base + j) {
                run = x;
                put(j, if exclusive { identity } else { run });
            } else {
                run = f(run, x);
                if checked {
                    overflowed |= O::sum_overflowed(before, x, run);
                }
                put(j, if exclusive { before } else { run });
            }
        }
        overflowed
    }
}

/// Scans `xs` (with `keys`, one per element, for a scan by key) into a new vector.
pub(crate) fn scan<T: ScanInto<O>, O: ScanValue, K: ScanKey>(
    xs: &[T],
    keys: Option<&[K]>,
    op: CpuOp<'_, O>,
    options: &ScanOptions,
) -> Result<Vec<O>> {
    let carry = chunk_carries(xs, keys, &op);
    // A fresh output (huge pages where large: its page faults cost more than the scan).
    let mut out = crate::host_alloc::output_vec::<O>(xs.len());
    let overflowed = out.spare_capacity_mut()[..xs.len()]
        .par_chunks_mut(CHUNK)
        .zip(xs.par_chunks(CHUNK))
        .enumerate()
        .map(|(c, (dst, src))| {
            ChunkPass::new(c, src.len(), &carry, keys).rescan(
                &op,
                options,
                |j| src[j].convert(),
                |j, y| {
                    dst[j].write(y);
                },
            )
        })
        .reduce(|| false, |a, b| a | b);
    // SAFETY: `rescan` puts every element of its chunk (`put(j)` for each j below the chunk's
    // length), and the chunks tile the first `xs.len()` slots; a panic in a custom operation
    // unwinds before this, leaving the vector empty.
    unsafe { out.set_len(xs.len()) };
    if overflowed {
        return Err(overflow_error::<O>());
    }
    Ok(out)
}

/// Scans `data` in place (the output type is the input type).
pub(crate) fn scan_in_place<T: ScanInto<T>, K: ScanKey>(
    data: &mut [T],
    keys: Option<&[K]>,
    op: CpuOp<'_, T>,
    options: &ScanOptions,
) -> Result<()> {
    let carry = chunk_carries(data, keys, &op);
    let overflowed = data
        .par_chunks_mut(CHUNK)
        .enumerate()
        .map(|(c, chunk)| {
            let len = chunk.len();
            let cell = std::cell::Cell::from_mut(chunk).as_slice_of_cells();
            ChunkPass::new(c, len, &carry, keys).rescan(&op, options, |j| cell[j].get(), |j, y| cell[j].set(y))
        })
        .reduce(|| false, |a, b| a | b);
    if overflowed {
        return Err(overflow_error::<T>());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_carry_across_and_keys_restart() {
        let n = 3 * CHUNK + 17;
        let xs: Vec<i32> = (0..n as i32).map(|i| i % 7 - 3).collect();
        let got: Vec<i64> = scan(&xs, None::<&[u32]>, CpuOp::Builtin(ScanOp::Sum), &ScanOptions::default()).unwrap();
        let mut run = 0i64;
        for (i, &x) in xs.iter().enumerate() {
            run += x as i64;
            assert_eq!(got[i], run, "{i}");
        }
        let keys: Vec<u32> = (0..n as u32).map(|i| i / 1000).collect();
        let got: Vec<i32> = scan(&xs, Some(&keys), CpuOp::Builtin(ScanOp::Max), &ScanOptions::exclusive()).unwrap();
        assert_eq!(got[0], i32::MIN);
        assert_eq!(got[1000], i32::MIN);
        assert_eq!(got[1001], xs[1000]);
        let mut inplace = xs.clone();
        scan_in_place(&mut inplace, Some(&keys), CpuOp::Builtin(ScanOp::Max), &ScanOptions::exclusive()).unwrap();
        assert_eq!(inplace, got);
    }

    /// A custom identity neutral only on the op's results (0 for the largest magnitude): element
    /// 0 is itself, as in the reference (and the GPU), not `op(identity, x0)`.
    #[test]
    fn custom_first_element_is_itself() {
        let n = 2 * CHUNK + 5;
        let xs: Vec<f32> = (0..n).map(|i| ((i * 37 % 101) as f32 - 60.0) / 64.0).collect();
        assert!(xs[0] < 0.0);
        let f = |a: f32, b: f32| a.abs().max(b.abs());
        for options in [ScanOptions::default(), ScanOptions::exclusive()] {
            let got: Vec<f32> = scan(&xs, None::<&[u32]>, CpuOp::Custom(0.0, &f), &options).unwrap();
            let want = super::super::reference::scan_with(&xs, None::<&[u32]>, 0.0f32, options.exclusive, f);
            assert_eq!(
                got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                want.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
            );
            assert_eq!(got[options.exclusive as usize].to_bits(), xs[0].to_bits());
        }
    }
}
