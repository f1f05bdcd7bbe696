//! The CPU backend: rayon over chunks of the input, in two passes. The first tests each chunk
//! once, keeps its mask as bits (one bit an element: an eighth of a byte input's size, bounded
//! by the input) and counts what it keeps; a prefix over the counts gives each chunk its place
//! in the output; the second copies each chunk's kept items there by its bits, whole 64-element
//! words at once where they are all kept. Within a chunk, blocks of elements are tested into a
//! byte mask by the predicate's block evaluator, then packed into bits.

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

/// Mask words of a chunk.
const CHUNK_WORDS: usize = CHUNK / 64;

const _: () = assert!(CHUNK.is_multiple_of(BLOCK) && BLOCK.is_multiple_of(64));

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

/// A mask of 0s and 1s (at most 64) as bits: bit i is `mask[i]`. Eight bytes at a time: a
/// multiply gathers the low bits of eight bytes into the top byte (the products' bits meet no
/// carries, every one of the 64 landing on its own position).
fn pack(mask: &[u8]) -> u64 {
    let mut word = 0u64;
    let mut eights = mask.chunks_exact(8);
    for (k, b) in eights.by_ref().enumerate() {
        let v = u64::from_le_bytes(b.try_into().expect("eight bytes"));
        debug_assert_eq!(v & !0x0101_0101_0101_0101, 0, "mask bytes are 0 or 1");
        word |= (v.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * k);
    }
    let done = mask.len() - eights.remainder().len();
    for (i, &b) in eights.remainder().iter().enumerate() {
        word |= (b as u64) << (done + i);
    }
    word
}

/// Tests every element of `range` once: its mask bits into `bits` (bit i of word i / 64 for
/// element `range.start + i`), and the number kept.
fn chunk_bits<K: Keep>(keep: &K, range: Range<usize>, bits: &mut [u64]) -> usize {
    let first = range.start;
    let mut kept = 0;
    for_blocks(keep, range, |block, m| {
        let words = &mut bits[(block.start - first) / 64..];
        for (w, m) in words.iter_mut().zip(m.chunks(64)) {
            *w = pack(m);
            kept += w.count_ones() as usize;
        }
    });
    kept
}

/// What a compaction writes for element i: the element itself, or its index.
trait Items<O: Copy>: Sync {
    fn item(&self, i: usize) -> O;
    /// The items of elements `start..start + dst.len()`, in order.
    fn run(&self, start: usize, dst: &mut [MaybeUninit<O>]) {
        for (j, d) in dst.iter_mut().enumerate() {
            d.write(self.item(start + j));
        }
    }
    /// The items of elements `start + i` for the set bits i of `word` (of `width` elements, at
    /// least one of them clear), into `dst` (as long as the set bits).
    fn dense(&self, start: usize, word: u64, width: usize, dst: &mut [MaybeUninit<O>]) {
        compact_word(|i| self.item(start + i), word, width, dst);
    }
    /// A hint that element i will be read soon.
    fn prefetch(&self, _i: usize) {}
}

/// Without branches: every item goes to the next free place, which advances by the item's bit.
#[inline(always)]
fn compact_word<O: Copy>(item: impl Fn(usize) -> O, word: u64, width: usize, dst: &mut [MaybeUninit<O>]) {
    let mut buf = [MaybeUninit::<O>::uninit(); 64];
    let mut k = 0;
    for i in 0..width {
        buf[k & 63].write(item(i));
        k += (word >> i) as usize & 1;
    }
    for (d, b) in dst.iter_mut().zip(&buf) {
        *d = *b;
    }
}

/// The elements themselves.
struct Values<'a, T> {
    xs: &'a [T],
    /// AVX-512 compresses a word's kept elements (4- and 8-byte elements, where the CPU has it).
    compress: bool,
}

/// Whether this CPU has AVX-512F (the `compress` module's instructions).
fn has_avx512f() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx512f");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

impl<'a, T: Copy> Values<'a, T> {
    fn new(xs: &'a [T]) -> Self {
        Values { xs, compress: matches!(std::mem::size_of::<T>(), 4 | 8) && has_avx512f() }
    }
}

impl<T: Copy + Sync> Items<T> for Values<'_, T> {
    #[inline(always)]
    fn item(&self, i: usize) -> T {
        self.xs[i]
    }
    fn run(&self, start: usize, dst: &mut [MaybeUninit<T>]) {
        let len = dst.len();
        for (d, &x) in dst.iter_mut().zip(&self.xs[start..start + len]) {
            d.write(x);
        }
    }
    #[inline(always)]
    fn dense(&self, start: usize, word: u64, width: usize, dst: &mut [MaybeUninit<T>]) {
        let src = &self.xs[start..start + width];
        #[cfg(target_arch = "x86_64")]
        if self.compress {
            // SAFETY: `compress` is set only where the CPU has AVX-512F; T is 4 or 8 bytes
            // (checked in `new`) and plain data (Copy), so its bits move as u32 or u64; `src`
            // holds `width` elements, and `dst` holds as many as `word` has set bits, which is
            // what the compress writes.
            unsafe { compress::word(src, word, dst) };
            return;
        }
        compact_word(|i| src[i], word, width, dst);
    }
    #[inline(always)]
    fn prefetch(&self, i: usize) {
        #[cfg(target_arch = "x86_64")]
        if let Some(x) = self.xs.get(i) {
            // SAFETY: a prefetch is a hint that reads nothing into the program and writes
            // nothing, of an address inside `xs`; SSE is part of every x86-64 CPU.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((x as *const T).cast()) };
        }
    }
}

/// AVX-512 compaction of one word of 4- or 8-byte elements.
#[cfg(target_arch = "x86_64")]
mod compress {
    use std::arch::x86_64::*;
    use std::mem::{size_of, MaybeUninit};

    /// The elements of `src` (at most 64) whose bits are set in `word`, in order, into `dst`
    /// (exactly as long as the set bits). Compressed in registers and stored under a mask:
    /// nothing past `dst` is written (a compress straight to memory is microcoded on some
    /// CPUs).
    ///
    /// # Safety
    /// The CPU has AVX-512F; `T` is 4 or 8 bytes of plain data; `dst.len()` is the number of
    /// set bits of `word` below `src.len()` (and `word` has none above it).
    #[target_feature(enable = "avx512f")]
    pub unsafe fn word<T: Copy>(src: &[T], word: u64, dst: &mut [MaybeUninit<T>]) {
        // Checked in every build: the stores' bounds rest on it (one compare a word).
        assert!(src.len() <= 64 && (src.len() == 64 || word >> src.len() == 0));
        assert_eq!(dst.len(), word.count_ones() as usize);
        let (src_p, dst_p) = (src.as_ptr(), dst.as_mut_ptr());
        let lanes = 64 / size_of::<T>();
        let mut k = 0usize;
        let mut q = 0usize;
        while q < src.len() {
            let n = (src.len() - q).min(lanes);
            let bits = (word >> q) & ((1u64 << n) - 1);
            if bits != 0 {
                let kept = bits.count_ones() as usize;
                // SAFETY (of each access): the masked load reads lanes < n of src[q..], which
                // exist; the masked store writes `kept` lanes at dst[k..], within dst since k +
                // kept is at most the set bits so far.
                if size_of::<T>() == 4 {
                    let v = _mm512_maskz_loadu_epi32(((1u32 << n) - 1) as u16, src_p.add(q).cast());
                    let c = _mm512_maskz_compress_epi32(bits as u16, v);
                    _mm512_mask_storeu_epi32(dst_p.add(k).cast(), ((1u32 << kept) - 1) as u16, c);
                } else {
                    let v = _mm512_maskz_loadu_epi64(((1u32 << n) - 1) as u8, src_p.add(q).cast());
                    let c = _mm512_maskz_compress_epi64(bits as u8, v);
                    _mm512_mask_storeu_epi64(dst_p.add(k).cast(), ((1u32 << kept) - 1) as u8, c);
                }
                k += kept;
            }
            q += n;
        }
    }

    /// The indices `start + i` for the set bits i of `word` below `width`, in order, into `dst`
    /// (exactly as long as those bits), eight lanes at a time.
    ///
    /// # Safety
    /// The CPU has AVX-512F; `dst.len()` is the number of set bits of `word` (none at or above
    /// `width`, which is at most 64).
    #[target_feature(enable = "avx512f")]
    pub unsafe fn indices(start: u64, word: u64, width: usize, dst: &mut [MaybeUninit<u64>]) {
        // Checked in every build: the stores' bounds rest on it (one compare a word).
        assert!(width <= 64 && (width == 64 || word >> width == 0));
        assert_eq!(dst.len(), word.count_ones() as usize);
        let dst_p = dst.as_mut_ptr();
        let lanes = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
        let mut k = 0usize;
        let mut q = 0usize;
        while q < width {
            let bits = ((word >> q) & 0xff) as u8;
            if bits != 0 {
                let kept = bits.count_ones() as usize;
                let v = _mm512_add_epi64(_mm512_set1_epi64((start + q as u64) as i64), lanes);
                let c = _mm512_maskz_compress_epi64(bits, v);
                // SAFETY: `kept` lanes at dst[k..], within dst since k + kept is at most the set
                // bits so far.
                _mm512_mask_storeu_epi64(dst_p.add(k).cast(), ((1u32 << kept) - 1) as u8, c);
                k += kept;
            }
            q += 8;
        }
    }
}

/// The elements' indices.
struct Indices {
    /// AVX-512 compresses a word's kept indices, where the CPU has it.
    compress: bool,
}

impl Indices {
    fn new() -> Self {
        Indices { compress: has_avx512f() }
    }
}

impl Items<u64> for Indices {
    #[inline(always)]
    fn item(&self, i: usize) -> u64 {
        i as u64
    }
    #[inline(always)]
    fn dense(&self, start: usize, word: u64, width: usize, dst: &mut [MaybeUninit<u64>]) {
        #[cfg(target_arch = "x86_64")]
        if self.compress {
            // SAFETY: `compress` is set only where the CPU has AVX-512F; `dst` holds as many
            // indices as `word` has set bits below `width`, which is what the compress writes.
            unsafe { compress::indices(start as u64, word, width, dst) };
            return;
        }
        compact_word(|i| (start + i) as u64, word, width, dst);
    }
}

/// Words with at most this many kept elements are walked bit by bit; denser ones are compacted
/// whole.
const SPARSE_WORD: u32 = 12;

/// How many words ahead the compaction asks for the elements of sparse words: their reads are
/// scattered, which the hardware's prefetcher does not follow (at 1% kept the compaction
/// waited on them for twice the time of the whole first pass).
const PREFETCH_WORDS: usize = 8;

/// Appends to `dst` from `*at` on the items of elements `start + i` for the set bits i of
/// `word` (of `width` elements); false where they do not fit.
#[inline(always)]
fn put_word<O: Copy, I: Items<O>>(
    items: &I,
    start: usize,
    word: u64,
    width: usize,
    dst: &mut [MaybeUninit<O>],
    at: &mut usize,
) -> bool {
    let kept = word.count_ones();
    let Some(slot) = dst.get_mut(*at..*at + kept as usize) else { return false };
    *at += kept as usize;
    if kept as usize == width {
        items.run(start, slot);
    } else if kept <= SPARSE_WORD {
        let mut w = word;
        for d in slot {
            d.write(items.item(start + w.trailing_zeros() as usize));
            w &= w - 1;
        }
    } else {
        items.dense(start, word, width, slot);
    }
    true
}

/// Asks for the elements of `word` (elements from `start`) if it is sparse.
#[inline(always)]
fn prefetch_word<O: Copy, I: Items<O>>(items: &I, start: usize, word: u64) {
    if word != 0 && word.count_ones() <= SPARSE_WORD {
        let mut w = word;
        while w != 0 {
            items.prefetch(start + w.trailing_zeros() as usize);
            w &= w - 1;
        }
    }
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

/// The kept items of `n` elements, in order; with `rejected`, then the others in order.
/// Returns the output and the kept count. Each element is tested once.
fn compact<O, K, I>(n: usize, keep: &K, items: &I, rejected: bool) -> Result<(Vec<O>, u64)>
where
    O: Copy + Send + Sync,
    K: Keep,
    I: Items<O>,
{
    let mut bits = vec![0u64; n.div_ceil(64)];
    let counts: Vec<usize> =
        chunks(n).zip(bits.par_chunks_mut(CHUNK_WORDS)).map(|(range, b)| chunk_bits(keep, range, b)).collect();
    let kept: usize = counts.iter().sum();
    let total = if rejected { n } else { kept };
    let mut out: Vec<O> = crate::host_alloc::output_vec(total);
    let (front, back) = out.spare_capacity_mut()[..total].split_at_mut(kept);
    let kept_pieces = split_by(front, &counts);
    let rejected_lens: Vec<usize> =
        if rejected { chunks(n).zip(&counts).map(|(r, c)| r.len() - c).collect() } else { vec![0; counts.len()] };
    let rejected_pieces = split_by(back, &rejected_lens);
    let filled = chunks(n).zip(bits.par_chunks(CHUNK_WORDS)).zip(kept_pieces).zip(rejected_pieces).all(
        |(((range, words), kd), rd)| {
            let (mut ka, mut ra, mut ok) = (0, 0, true);
            for (w, &word) in words.iter().enumerate() {
                let start = range.start + 64 * w;
                if let Some(&ahead) = words.get(w + PREFETCH_WORDS) {
                    prefetch_word(items, start + 64 * PREFETCH_WORDS, ahead);
                }
                let width = (range.end - start).min(64);
                ok &= put_word(items, start, word, width, kd, &mut ka);
                if rejected {
                    let others = !word & (u64::MAX >> (64 - width));
                    ok &= put_word(items, start, others, width, rd, &mut ra);
                }
            }
            ok && ka == kd.len() && ra == rd.len()
        },
    );
    // The counts and the bits come from the same tests, so every piece fills exactly; this
    // guards the unsafe below against a slip in that bookkeeping.
    if !filled {
        return Err(Error::WrongResult("select: the kept items did not fill the output they were counted for".into()));
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
    Ok(compact(xs.len(), &keep, &Values::new(xs), false)?.0)
}

/// The indices of the passing elements.
pub fn select_indices<T: ReduceElement>(xs: &[T], bound: &Bound<T>) -> Result<Vec<u64>> {
    let keep = ByPredicate { xs, bound };
    Ok(compact(xs.len(), &keep, &Indices::new(), false)?.0)
}

/// The flagged elements, in order (`flags` as long as `xs`).
pub fn select_flagged<T: ReduceElement, F: SelectFlag>(xs: &[T], flags: &[F]) -> Result<Vec<T>> {
    Ok(compact(xs.len(), &ByFlags(flags), &Values::new(xs), false)?.0)
}

/// The passing elements, then the others (in order, or reversed with `rejected_reversed`).
pub fn partition<T: ReduceElement>(xs: &[T], bound: &Bound<T>, rejected_reversed: bool) -> Result<(Vec<T>, u64)> {
    let keep = ByPredicate { xs, bound };
    let (mut out, kept) = compact(xs.len(), &keep, &Values::new(xs), true)?;
    if rejected_reversed {
        reverse_in_parallel(&mut out[kept as usize..]);
    }
    Ok((out, kept))
}

/// `v` reversed, its two halves swapped pairwise on every thread (a middle element stays).
fn reverse_in_parallel<T: Send>(v: &mut [T]) {
    let half = v.len() / 2;
    let (front, back) = v.split_at_mut(v.len() - half);
    front[..half]
        .par_iter_mut()
        .zip(back.par_iter_mut().rev())
        .with_min_len(1 << 14)
        .for_each(|(a, b)| std::mem::swap(a, b));
}

/// How many elements pass.
pub fn count_if<T: ReduceElement>(xs: &[T], bound: &Bound<T>) -> u64 {
    chunk_counts(xs.len(), &ByPredicate { xs, bound }).iter().sum::<usize>() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words() -> Vec<(u64, usize)> {
        // Every number of kept elements from none to all, in scattered places, at full and
        // partial widths (the last word of an input).
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut out = Vec::new();
        for width in [64usize, 63, 33, 8, 7, 1] {
            for kept in 0..=width {
                let mut places: Vec<usize> = (0..width).collect();
                for i in (1..places.len()).rev() {
                    state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    places.swap(i, (state >> 33) as usize % (i + 1));
                }
                out.push((places[..kept].iter().fold(0u64, |w, &p| w | 1 << p), width));
            }
        }
        out
    }

    /// The values of a destination whose every slot was initialised when it was made.
    fn read<T: Copy>(dst: &[MaybeUninit<T>]) -> Vec<T> {
        // SAFETY: the tests make each destination with `MaybeUninit::new` in every slot, and
        // `put_word` only ever writes initialised values over them.
        dst.iter().map(|d| unsafe { d.assume_init() }).collect()
    }

    #[test]
    fn reverses_in_parallel_like_reverse() {
        for n in [0usize, 1, 2, 3, 64, 65, (1 << 15) + 1, 1 << 16] {
            let mut got: Vec<u32> = (0..n as u32).collect();
            let mut want = got.clone();
            reverse_in_parallel(&mut got);
            want.reverse();
            assert_eq!(got, want, "n={n}");
        }
    }

    #[test]
    fn pack_gathers_every_byte() {
        for (word, width) in words() {
            let mask: Vec<u8> = (0..width).map(|i| (word >> i) as u8 & 1).collect();
            assert_eq!(pack(&mask), word, "width {width}");
        }
    }

    #[test]
    fn put_word_keeps_the_set_bits_in_order() {
        let xs: Vec<u32> = (0..200).map(|i| i * 7 + 3).collect();
        let wide: Vec<f64> = xs.iter().map(|&x| x as f64 + 0.5).collect();
        for (word, width) in words() {
            // 8-byte elements, by AVX-512's compress where the CPU has it and without.
            for compress in [false, Values::new(&wide).compress] {
                let values = Values { xs: &wide[..], compress };
                let want: Vec<f64> = (0..width).filter(|i| word >> i & 1 == 1).map(|i| wide[7 + i]).collect();
                let mut dst = vec![MaybeUninit::new(-1.0f64); want.len() + 1];
                let mut at = 0;
                assert!(put_word(&values, 7, word, width, &mut dst, &mut at));
                let got: Vec<f64> = read(&dst);
                assert_eq!(&got[..want.len()], &want[..]);
                assert_eq!(got[want.len()], -1.0, "nothing past the kept items");
            }
            for start in [0usize, 5, 100] {
                let want: Vec<u32> = (0..width).filter(|i| word >> i & 1 == 1).map(|i| xs[start + i]).collect();
                let mut dst = vec![MaybeUninit::new(u32::MAX); want.len() + 3];
                let mut at = 2;
                let compress = Values::new(&xs).compress && start != 5;
                assert!(put_word(&Values { xs: &xs[..], compress }, start, word, width, &mut dst, &mut at));
                assert_eq!(at, 2 + want.len());
                let got: Vec<u32> = read(&dst);
                assert_eq!(&got[2..2 + want.len()], &want[..], "word {word:#x} width {width}");
                assert_eq!(
                    (got[0], got[1], got[2 + want.len()]),
                    (u32::MAX, u32::MAX, u32::MAX),
                    "nothing else written"
                );
                // Indices, and a destination one short.
                let mut idx = vec![MaybeUninit::new(0u64); want.len()];
                let mut at = 0;
                let indices = Indices { compress: Indices::new().compress && start != 5 };
                assert!(put_word(&indices, start, word, width, &mut idx, &mut at));
                let got: Vec<u64> = read(&idx);
                let want_idx: Vec<u64> =
                    (0..width).filter(|i| word >> i & 1 == 1).map(|i| (start + i) as u64).collect();
                assert_eq!(got, want_idx);
                if !want.is_empty() {
                    let mut short = vec![MaybeUninit::new(0u32); want.len() - 1];
                    assert!(!put_word(&Values::new(&xs), start, word, width, &mut short, &mut 0));
                }
            }
        }
    }
}
