//! The CPU backend's histogram: the same hierarchy as on the GPU, with threads for blocks.
//! Each rayon worker keeps private histograms (several copies, consecutive samples going to
//! different ones, so that runs of one bin do not stall on store-to-load forwarding), merged
//! once at the end.
//!
//! Counting is two passes over a small block of samples: first every sample becomes a counter
//! index (branch-free, with three extra counters per channel for below, above and NaN, so
//! that outliers never mispredict; this pass vectorizes, compiled for AVX-512 or AVX2 when the
//! CPU has them), then one increment per index, while the block after next is prefetched so
//! that memory keeps streaming. Bytes skip the first pass: they are counted by value and the
//! rule is applied to the 256 totals.
//!
//! The rule is the one in [`super::binning`], evaluated with the same operations in the same
//! order. Integer samples under the exact rule use a shift when the bin width is a power of
//! two (in 32-bit lanes for 16- and 32-bit samples when their type holds the bounds), else an
//! f64 reciprocal corrected by an exact remainder (when every product stays below 2^53), else
//! an exact multiply-high division.

use super::binning::{int_bounds, BinRule, IntBounds, ABOVE, BELOW};
use super::{Histogram, HistogramSpec, Strategy};
use crate::error::Result;
use crate::sample::Sample;
use rayon::prelude::*;
use std::any::TypeId;

/// Copies of the counters per worker, while one copy has at most SMALL_HISTOGRAM counters
/// (measured on 2^26 i32, 2 cores: 8 copies beat 1 up to 16000 bins, and beat 4 on skewed data).
const SUB_HISTOGRAMS: usize = 8;
const SMALL_HISTOGRAM: usize = 1 << 14;

/// Extra counters after each channel's bins: below, above, NaN.
const EXTRA: usize = 3;
const X_BELOW: u32 = 0;
const X_ABOVE: u32 = 1;
const X_NAN: u32 = 2;
// The branch-free outlier arithmetic below relies on this order.
const _: () = assert!(X_BELOW == 0 && X_ABOVE == 1 && X_NAN == 2);

struct Acc {
    /// `sub` copies of `width = slots * (bins + EXTRA)` 32-bit counters.
    counts: Vec<u32>,
    sub: usize,
    width: usize,
    /// 64-bit totals, flushed into before the 32-bit counters could overflow.
    totals: Vec<u64>,
    pending: u64,
}

impl Acc {
    /// `copies`: whether several copies pay for themselves (setting them up and merging them
    /// costs `SUB_HISTOGRAMS * width`).
    fn new(width: usize, copies: bool) -> Acc {
        let sub = if copies { SUB_HISTOGRAMS } else { 1 };
        Acc { counts: vec![0; sub * width], sub, width, totals: Vec::new(), pending: 0 }
    }

    fn flush(&mut self) {
        if self.totals.is_empty() {
            self.totals = vec![0; self.width];
        }
        for part in self.counts.chunks_exact_mut(self.width) {
            for (t, c) in self.totals.iter_mut().zip(part.iter_mut()) {
                *t += *c as u64;
                *c = 0;
            }
        }
        self.pending = 0;
    }

    fn finish(mut self) -> Vec<u64> {
        self.flush();
        self.totals
    }

    fn merge(mut self, mut other: Acc) -> Acc {
        self.flush();
        other.flush();
        for (a, b) in self.totals.iter_mut().zip(&other.totals) {
            *a += b;
        }
        self
    }
}

/// `floor(t / d)` for every `t < 2^63` by one multiply-high and a shift (Granlund and
/// Montgomery, "Division by invariant integers using multiplication", theorem 4.2 with
/// N = 63: `m = ceil(2^(63+l) / d)`, `l = ceil(log2 d)`, so `m < 2^64`).
#[derive(Clone, Copy, Debug)]
struct MagicDiv {
    m: u64,
    shift: u32,
}

impl MagicDiv {
    fn new(d: u64) -> MagicDiv {
        assert!(d > 0 && d < 1 << 63);
        let l = 64 - (d - 1).leading_zeros();
        let m = (1u128 << (63 + l)).div_ceil(d as u128);
        assert!(m < 1u128 << 64);
        MagicDiv { m: m as u64, shift: 63 + l }
    }

    #[inline(always)]
    fn div(self, t: u64) -> u64 {
        ((t as u128 * self.m as u128) >> self.shift) as u64
    }
}

/// Index of the last of `e[0..m]` that is `<= v`, for `e[0] <= v` (any `v` is safe: the
/// result is then only meaningless). Branch-free: a fixed number of conditional moves.
#[inline(always)]
fn last_at_or_below(e: &[f64], v: f64) -> u32 {
    let mut base = 0usize;
    let mut len = e.len();
    while len > 1 {
        let half = len / 2;
        // A conditional move, not a branch: the comparison is as good as random.
        base = std::hint::select_unpredictable(e[base + half] <= v, base + half, base);
        len -= half;
    }
    base as u32
}

/// Counts `samples` on the calling thread pool. Strategy names are accepted for symmetry with
/// the GPU; the CPU has one way of counting.
pub fn histogram<T: Sample>(samples: &[T], spec: &HistogramSpec) -> Result<Histogram> {
    spec.validate()?;
    let nbins = spec.bins.count() as u32;
    let rule = BinRule::new::<T>(spec);
    let (below, above, nan) = (nbins + X_BELOW, nbins + X_ABOVE, nbins + X_NAN);
    let layout = Layout::new(spec);

    if let Some(bytes) = same_type::<T, u8>(samples) {
        // Count the 256 byte values, then apply the whole rule once per value.
        let lut: Vec<u32> = (0u32..256)
            .map(|v| match rule.bin(v as u8) {
                b if b >= 0 => b as u32,
                BELOW => below,
                ABOVE => above,
                _ => nan,
            })
            .collect();
        let bytes_layout = layout.with_stride(256);
        let raw = bytes_layout.count(bytes, count_bytes::<1>, count_bytes::<SUB_HISTOGRAMS>);
        let mut totals = vec![0u64; layout.width()];
        for k in 0..layout.slots {
            for v in 0..256 {
                totals[k * layout.stride + lut[v] as usize] += raw[k * 256 + v];
            }
        }
        return Ok(layout.histogram(spec, &totals));
    }

    let totals = match rule {
        BinRule::Int { b, .. } => {
            debug_assert_eq!(int_bounds(&spec.bins), Some(b));
            let (lower, upper, range, bins) = (b.lower, b.upper, b.range, b.bins);
            if range % bins as u64 == 0 && (range / bins as u64).is_power_of_two() {
                // Bin width 2^k: floor(d * bins / range) = d >> k.
                let k = (range / bins as u64).trailing_zeros();
                if let Some(totals) = narrow_shift(samples, &layout, b, k, below) {
                    return Ok(layout.histogram(spec, &totals));
                }
                layout.count_binned(samples, move |x: T| {
                    let v = x.to_i64().unwrap_or(0);
                    let q = (v.wrapping_sub(lower) as u64 >> k) as u32;
                    // Outside [lower, upper): below, or above when v >= lower.
                    let out = below + (v >= lower) as u32;
                    if v >= lower && v < upper {
                        q
                    } else {
                        out
                    }
                })
            } else if range as u128 * bins as u128 <= 1 << 53 {
                // floor(t / range) for t = d * bins < 2^53: every integer here is exact in an
                // f64, the reciprocal's estimate is off by at most one, and the exact remainder
                // t - q * range corrects it. Vectorizes, unlike a 64-bit divide.
                let (rangef, inv) = (range as f64, 1.0 / range as f64);
                layout.count_binned(samples, move |x: T| {
                    let v = x.to_i64().unwrap_or(0);
                    let inside = v >= lower && v < upper;
                    let d = if inside { v.wrapping_sub(lower) as u64 } else { 0 };
                    let t = (d * bins as u64) as f64;
                    // SAFETY: t * inv is in [0, bins + 1), so the conversion is in range.
                    let q = unsafe { (t * inv).to_int_unchecked::<i64>() };
                    let r = t - q as f64 * rangef;
                    let q = q - (r < 0.0) as i64 + (r >= rangef) as i64;
                    let out = below + (v >= lower) as u32;
                    if inside {
                        q as u32
                    } else {
                        out
                    }
                })
            } else {
                // floor(d * bins / range), d * bins < range * bins < 2^63 (int_bounds).
                let div = MagicDiv::new(range);
                layout.count_binned(samples, move |x: T| {
                    let v = x.to_i64().unwrap_or(0);
                    let inside = v >= lower && v < upper;
                    let d = if inside { v.wrapping_sub(lower) as u64 } else { 0 };
                    let q = div.div(d * bins as u64) as u32;
                    let out = below + (v >= lower) as u32;
                    if inside {
                        q
                    } else {
                        out
                    }
                })
            }
        }
        BinRule::Float { lower, upper, range, bins, last } => {
            // Bins fit an i32 (validate: bins x channels <= i32::MAX).
            let lastf = last as f64;
            layout.count_binned(samples, move |x: T| {
                let v = x.to_f64();
                // The rule's operations in the rule's order. For lower <= v the quotient is
                // >= 0, so truncation is floor. Clamped to [0, last] first (NaN to 0; unused
                // then), so that the conversion is in range and needs no saturation, which
                // would not vectorize.
                let t = ((v - lower) * bins) / range;
                let t = if t >= 0.0 { t } else { 0.0 };
                let t = if t <= lastf { t } else { lastf };
                // SAFETY: t is in [0, last] and last < 2^31.
                let q = unsafe { t.to_int_unchecked::<i32>() } as u32;
                // Outside [lower, upper): below, above, or NaN when neither compares.
                let out = nan - 2 * (v < lower) as u32 - (v >= upper) as u32;
                if v >= lower && v < upper {
                    q
                } else {
                    out
                }
            })
        }
        BinRule::Edges(ref e) => {
            let (first, last) = (e[0], e[e.len() - 1]);
            // Bin i holds e[i] <= v < e[i+1]: the last of e[0..bins] at or below v.
            let lows = &e[..e.len() - 1];
            layout.count_binned(samples, move |x: T| {
                let v = x.to_f64();
                let q = last_at_or_below(lows, v);
                let out = nan - 2 * (v < first) as u32 - (v >= last) as u32;
                if v >= first && v < last {
                    q
                } else {
                    out
                }
            })
        }
    };
    Ok(layout.histogram(spec, &totals))
}

/// `samples` as a slice of `U`, when `T` is `U`.
fn same_type<T: 'static, U: 'static>(samples: &[T]) -> Option<&[U]> {
    if TypeId::of::<T>() == TypeId::of::<U>() {
        // SAFETY: T and U are the same type (equal TypeIds), so the pointer, length and
        // lifetime of `samples` describe a valid `[U]` too.
        Some(unsafe { std::slice::from_raw_parts(samples.as_ptr() as *const U, samples.len()) })
    } else {
        None
    }
}

/// The power-of-two width rule in 32-bit lanes (twice as many per vector as i64), for 16- and
/// 32-bit samples whose type holds both bounds, with a range below 2^32. Then
/// `d = (x - lower) mod 2^32` is the exact offset for samples inside, and at least the range
/// for samples below (`upper <= MAX + 1`), so one unsigned comparison tells inside from out.
fn narrow_shift<T: Sample>(samples: &[T], layout: &Layout, b: IntBounds, k: u32, below: u32) -> Option<Vec<u64>> {
    macro_rules! narrow {
        ($t:ty) => {
            if let Some(s) = same_type::<T, $t>(samples) {
                if b.lower < <$t>::MIN as i64 || b.upper > <$t>::MAX as i64 + 1 || b.range >> 32 != 0 {
                    return None;
                }
                let lower = b.lower as $t;
                let (lo, range) = (lower as u32, b.range as u32);
                return Some(layout.count_binned(s, move |x: $t| {
                    let d = (x as u32).wrapping_sub(lo);
                    let out = below + (x >= lower) as u32;
                    if d < range {
                        d >> k
                    } else {
                        out
                    }
                }));
            }
        };
    }
    narrow!(i32);
    narrow!(u32);
    narrow!(u16);
    None
}

/// Where each selected channel's counters live.
#[derive(Clone, Debug)]
struct Layout {
    /// Interleaved channels.
    c: usize,
    slots: usize,
    bins: usize,
    /// Counters per channel.
    stride: usize,
    selected: Vec<usize>,
    /// (channel within an interleaved group, offset of its counters), per selected channel.
    lanes: Vec<(usize, usize)>,
}

impl Layout {
    fn new(spec: &HistogramSpec) -> Layout {
        let bins = spec.bins.count();
        Layout {
            c: spec.channels.interleave as usize,
            slots: spec.channels.selected.len(),
            bins,
            selected: spec.channels.selected.iter().map(|&ch| ch as usize).collect(),
            stride: 0,
            lanes: Vec::new(),
        }
        .with_stride(bins + EXTRA)
    }

    fn with_stride(&self, stride: usize) -> Layout {
        let lanes = self.selected.iter().enumerate().map(|(k, &ch)| (ch, k * stride)).collect();
        Layout { stride, lanes, ..self.clone() }
    }

    fn width(&self) -> usize {
        self.stride * self.slots
    }

    fn histogram(&self, spec: &HistogramSpec, totals: &[u64]) -> Histogram {
        let mut h = Histogram::zeroed(spec, "cpu", Strategy::ThreadPrivate);
        let bins = self.bins;
        for k in 0..self.slots {
            let t = &totals[k * self.stride..(k + 1) * self.stride];
            h.counts[k].copy_from_slice(&t[..bins]);
            h.below[k] = t[bins + X_BELOW as usize];
            h.above[k] = t[bins + X_ABOVE as usize];
            h.nan[k] = t[bins + X_NAN as usize];
        }
        h
    }

    /// Counts with `bin` mapping each sample to its counter within its channel.
    fn count_binned<T, F>(&self, samples: &[T], bin: F) -> Vec<u64>
    where
        T: Sample,
        F: Fn(T) -> u32 + Copy + Sync,
    {
        let fill = fill_fn::<T, F>();
        self.count(
            samples,
            move |counts: &mut [u32], l: &Layout, part: &[T]| count_binned::<T, F, 1>(counts, l, part, bin, fill),
            move |counts: &mut [u32], l: &Layout, part: &[T]| {
                count_binned::<T, F, SUB_HISTOGRAMS>(counts, l, part, bin, fill)
            },
        )
    }

    /// Runs `one` (one private copy) or `many` (SUB_HISTOGRAMS copies) over chunks of
    /// `samples` on the thread pool, and returns the totals of every counter.
    fn count<T: Sync, A, B>(&self, samples: &[T], one: A, many: B) -> Vec<u64>
    where
        A: Fn(&mut [u32], &Layout, &[T]) + Sync,
        B: Fn(&mut [u32], &Layout, &[T]) + Sync,
    {
        let width = self.width();
        let c = self.c;
        let threads = rayon::current_num_threads().max(1);
        // A few chunks per worker for balance; a multiple of the channel count so that a
        // chunk's first sample is channel 0; small enough that 32-bit counters cannot overflow.
        // Large histograms: one private copy per worker, not per chunk (memory).
        let per_worker = if width > 1 << 20 { 1 } else { 4 };
        let mut chunk = (samples.len() / (threads * per_worker)).clamp(1 << 16, 1 << 30);
        chunk -= chunk % c;
        let chunk = chunk.max(c);
        let l = self;
        let copies = width <= SMALL_HISTOGRAM && samples.len() >= 4 * SUB_HISTOGRAMS * width;
        samples
            .par_chunks(chunk)
            .fold(
                || Acc::new(width, copies),
                |mut acc, part| {
                    if acc.pending + part.len() as u64 > u32::MAX as u64 {
                        acc.flush();
                    }
                    acc.pending += part.len() as u64;
                    if acc.sub == SUB_HISTOGRAMS {
                        many(&mut acc.counts, l, part);
                    } else {
                        one(&mut acc.counts, l, part);
                    }
                    acc
                },
            )
            .reduce_with(Acc::merge)
            .map(Acc::finish)
            .unwrap_or_else(|| vec![0; width])
    }
}

/// Samples binned per block into this buffer, then counted.
const BLOCK: usize = 1024;
/// How many blocks ahead of the one being counted to prefetch.
const PREFETCH_BLOCKS: usize = 2;

/// A hint to fetch the cache line at `p` (any address: a prefetch never faults).
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unused_unsafe)] // the intrinsic is a safe function in newer Rust releases
    // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 CPU has; it reads nothing and cannot
    // fault, whatever the address (the pointer is never dereferenced).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

type Fill<T, F> = unsafe fn(&[T], &mut [u32], F);

#[inline(always)]
fn fill_plain<T: Sample, F: Fn(T) -> u32>(xs: &[T], out: &mut [u32], bin: F) {
    for (o, &x) in out.iter_mut().zip(xs) {
        *o = bin(x);
    }
}

unsafe fn fill_baseline<T: Sample, F: Fn(T) -> u32>(xs: &[T], out: &mut [u32], bin: F) {
    fill_plain(xs, out, bin)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fill_avx2<T: Sample, F: Fn(T) -> u32>(xs: &[T], out: &mut [u32], bin: F) {
    fill_plain(xs, out, bin)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
unsafe fn fill_avx512<T: Sample, F: Fn(T) -> u32>(xs: &[T], out: &mut [u32], bin: F) {
    fill_plain(xs, out, bin)
}

/// The widest vector instructions this CPU has, for binning a block.
fn fill_fn<T: Sample, F: Fn(T) -> u32>() -> Fill<T, F> {
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512vl")
        {
            return fill_avx512::<T, F>;
        }
        if is_x86_feature_detected!("avx2") {
            return fill_avx2::<T, F>;
        }
    }
    fill_baseline::<T, F>
}

fn count_binned<T: Sample, F: Fn(T) -> u32 + Copy, const SUB: usize>(
    counts: &mut [u32],
    l: &Layout,
    part: &[T],
    bin: F,
    fill: Fill<T, F>,
) {
    let width = l.width();
    debug_assert_eq!(counts.len(), SUB * width);
    let mut idx = [0u32; BLOCK];
    if l.c == 1 {
        // One channel: consecutive samples go to SUB different copies, each addressed from
        // its own base so that counting is one load and one increment per sample.
        let mut copies = split_copies::<SUB>(counts, width);
        // One prefetch per cache line of samples: every `line` groups of SUB.
        let line = (64 / std::mem::size_of::<T>() / SUB).max(1);
        for (b, block) in part.chunks(BLOCK).enumerate() {
            let ids = &mut idx[..block.len()];
            // SAFETY: fill_fn picked a version this CPU supports.
            unsafe { fill(block, ids, bin) };
            // While counting, keep memory busy with the block after next.
            let ahead = part.as_ptr().wrapping_add((b + PREFETCH_BLOCKS) * BLOCK);
            count_spread(&mut copies, ids, |j| {
                if j % line == 0 {
                    prefetch(ahead.wrapping_add(j * SUB));
                }
            });
        }
        return;
    }
    let mut s = 0;
    for block in part.chunks(BLOCK / l.c * l.c) {
        let ids = &mut idx[..block.len()];
        // SAFETY: fill_fn picked a version this CPU supports.
        unsafe { fill(block, ids, bin) };
        count_interleaved::<SUB, _>(counts, l, ids, &mut s);
    }
}

/// Bytes: the value itself is the counter (the rule is applied to the 256 totals).
fn count_bytes<const SUB: usize>(counts: &mut [u32], l: &Layout, part: &[u8]) {
    let width = l.width();
    debug_assert_eq!(counts.len(), SUB * width);
    if l.c == 1 {
        count_spread(&mut split_copies::<SUB>(counts, width), part, |_| {});
    } else {
        count_interleaved::<SUB, _>(counts, l, part, &mut 0);
    }
}

/// The SUB private copies of `width` counters each that `counts` holds.
#[inline(always)]
fn split_copies<const SUB: usize>(counts: &mut [u32], width: usize) -> [&mut [u32]; SUB] {
    let mut rest = counts.chunks_exact_mut(width);
    std::array::from_fn(|_| rest.next().expect("SUB copies"))
}

/// One channel: consecutive ids go to SUB different copies, each addressed from its own base,
/// so that counting is one load and one increment per id; the last few (fewer than SUB) go to
/// copy 0. `before_group(j)` runs before group j of SUB (a prefetch).
#[inline(always)]
fn count_spread<const SUB: usize, I: Copy + Into<u32>>(
    copies: &mut [&mut [u32]; SUB],
    ids: &[I],
    mut before_group: impl FnMut(usize),
) {
    let mut groups = ids.chunks_exact(SUB);
    for (j, g) in (&mut groups).enumerate() {
        before_group(j);
        for s in 0..SUB {
            copies[s][g[s].into() as usize] += 1;
        }
    }
    for &i in groups.remainder() {
        copies[0][i.into() as usize] += 1;
    }
}

/// Interleaved channels: one group of `c` ids at a time into copy `*s`, the copy rotating per
/// group (and carried over to the next call); a partial group, only at the very end of the
/// input, into copy 0.
#[inline(always)]
fn count_interleaved<const SUB: usize, I: Copy + Into<u32>>(counts: &mut [u32], l: &Layout, ids: &[I], s: &mut usize) {
    let width = l.width();
    let mut groups = ids.chunks_exact(l.c);
    for g in &mut groups {
        let copy = &mut counts[*s * width..(*s + 1) * width];
        for &(ch, off) in &l.lanes {
            copy[off + g[ch].into() as usize] += 1;
        }
        *s = if *s + 1 == SUB { 0 } else { *s + 1 };
    }
    let rest = groups.remainder();
    for &(ch, off) in &l.lanes {
        if ch < rest.len() {
            counts[off + rest[ch].into() as usize] += 1;
        }
    }
}
