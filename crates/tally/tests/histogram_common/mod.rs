//! What the CPU histogram tests share: sample types with their edge values, samples drawn to
//! hit the bins' edges on purpose, and the comparison with the reference.
#![allow(dead_code)] // each test binary uses its own subset

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use tally::data::splitmix64;
use tally::histogram::binning::int_bounds;
use tally::histogram::{bin_edges, cpu, reference};
use tally::{Backend, Bins, Channels, Histogram, HistogramSpec, Sample, Strategy};

// ---------------------------------------------------------------------------------------------
// Sample types under test, and values of each near a given f64.

pub trait TestSample: Sample {
    /// `as` conversion: saturating for integers, NaN to 0.
    fn from_f64(v: f64) -> Self;
    /// Saturating for integers.
    fn from_i128(v: i128) -> Self;
    /// Any bit pattern (floats: NaN payloads, subnormals, infinities included).
    fn from_bits64(r: u64) -> Self;
    /// Values of this type at and right around `v`.
    fn around(v: f64, out: &mut Vec<Self>);
    fn extremes() -> Vec<Self>;
    fn bits(self) -> u64;
}

macro_rules! int_test_sample {
    ($($t:ty),*) => {$(
        impl TestSample for $t {
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn from_i128(v: i128) -> Self {
                v.clamp(<$t>::MIN as i128, <$t>::MAX as i128) as $t
            }
            fn from_bits64(r: u64) -> Self {
                r as $t
            }
            fn around(v: f64, out: &mut Vec<Self>) {
                if v.is_nan() {
                    return;
                }
                let (f, c) = (v.floor() as i128, v.ceil() as i128);
                for x in [f.saturating_sub(1), f, c, c.saturating_add(1)] {
                    out.push(Self::from_i128(x));
                }
            }
            fn extremes() -> Vec<Self> {
                vec![
                    <$t>::MIN,
                    <$t>::MIN.wrapping_add(1),
                    <$t>::MAX,
                    <$t>::MAX - 1,
                    0,
                    1,
                    (-1i64) as $t,
                    (i64::MIN / 2) as $t,
                ]
            }
            fn bits(self) -> u64 {
                self as u64
            }
        }
    )*};
}
int_test_sample!(u8, u16, i32, u32, i64);

impl TestSample for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
    fn from_i128(v: i128) -> Self {
        v as f64
    }
    fn from_bits64(r: u64) -> Self {
        f64::from_bits(r)
    }
    fn around(v: f64, out: &mut Vec<Self>) {
        out.extend([v, v.next_up(), v.next_down()]);
    }
    fn extremes() -> Vec<Self> {
        vec![
            f64::NAN,
            -f64::NAN,
            f64::from_bits(0x7ff0_0000_0000_0001), // signalling NaN
            f64::from_bits(0xfff8_dead_beef_0001), // negative NaN with a payload
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            f64::from_bits(1),
            0.0,
            -0.0,
            1e300,
            -1e300,
            i64::MAX as f64,
            i64::MIN as f64,
        ]
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

impl TestSample for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn from_i128(v: i128) -> Self {
        v as f32
    }
    fn from_bits64(r: u64) -> Self {
        f32::from_bits(r as u32)
    }
    fn around(v: f64, out: &mut Vec<Self>) {
        let w = v as f32;
        out.extend([w, w.next_up(), w.next_down()]);
    }
    fn extremes() -> Vec<Self> {
        vec![
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7f80_0001),
            f32::from_bits(0xffc0_beef),
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            f32::from_bits(1),
            0.0,
            -0.0,
            1e30,
            -1e30,
            16_777_217.0,
        ]
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}

// ---------------------------------------------------------------------------------------------
// Sample generation aimed at the edges of `bins`.

pub struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(1);
        splitmix64(self.0)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

pub fn range_of(bins: &Bins) -> (f64, f64) {
    match bins {
        Bins::Even { lower, upper, .. } => (*lower, *upper),
        Bins::Edges(e) => (e[0], e[e.len() - 1]),
    }
}

pub fn make_samples<T: TestSample>(bins: &Bins, n: usize, seed: u64) -> Vec<T> {
    let mut rng = Rng(seed);
    let (lo, hi) = range_of(bins);

    let mut pool = T::extremes();
    for v in [lo, hi, 0.0, -1.0, 1.0, -1e18, 1e18, 9.007_199_254_740_992e15] {
        T::around(v, &mut pool);
    }
    let edges = bin_edges(bins);
    if edges.len() <= 80 {
        for &e in &edges {
            T::around(e, &mut pool);
        }
    } else {
        for _ in 0..64 {
            T::around(edges[rng.below(edges.len())], &mut pool);
        }
    }
    // The integer rule's own edges: the least integer of each bin, and the one before it.
    if !T::DTYPE.is_float() {
        if let Some(b) = int_bounds(bins) {
            let picks = (b.bins as usize + 1).min(64);
            for j in 0..picks {
                let k = if (b.bins as usize) < 64 { j as i128 } else { rng.below(b.bins as usize + 1) as i128 };
                let (r, nb) = (b.range as i128, b.bins as i128);
                let first = b.lower as i128 + (k * r + nb - 1) / nb;
                pool.extend([T::from_i128(first - 1), T::from_i128(first), T::from_i128(first + 1)]);
            }
        }
    }

    (0..n)
        .map(|_| match rng.below(100) {
            0..=49 => pool[rng.below(pool.len())],
            50..=84 => {
                let u = rng.unit();
                T::from_f64(lo * (1.0 - u) + hi * u)
            }
            85..=92 => {
                let u = rng.unit() * 1.5 - 0.25;
                T::from_f64(lo * (1.0 - u) + hi * u)
            }
            _ => T::from_bits64(rng.next()),
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The comparison.

pub fn single(bins: &Bins) -> HistogramSpec {
    HistogramSpec { bins: bins.clone(), channels: Channels::single() }
}

/// Where two histograms differ, and the first sample that by itself is counted differently.
pub fn explain<T: TestSample>(samples: &[T], spec: &HistogramSpec, want: &Histogram, got: &Histogram) -> String {
    let mut s = format!("type {}, {} samples, spec {:?}\n", T::DTYPE, samples.len(), spec);
    for k in 0..want.counts.len() {
        let diff: Vec<(usize, u64, u64)> = want.counts[k]
            .iter()
            .zip(&got.counts[k])
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .map(|(i, (a, b))| (i, *a, *b))
            .take(8)
            .collect();
        s += &format!(
            "slot {k}: bins differing (bin, reference, cpu): {diff:?}; below {} vs {}, above {} vs {}, nan {} vs {}\n",
            want.below[k], got.below[k], want.above[k], got.above[k], want.nan[k], got.nan[k]
        );
    }
    let one = single(&spec.bins);
    for &x in samples {
        let w = reference::histogram(&[x], &one);
        let g = cpu::histogram(&[x], &one).unwrap();
        if !w.same_counts(&g) {
            let where_ = |h: &Histogram| {
                if h.below[0] == 1 {
                    "below".to_string()
                } else if h.above[0] == 1 {
                    "above".to_string()
                } else if h.nan[0] == 1 {
                    "nan".to_string()
                } else {
                    format!("bin {}", h.counts[0].iter().position(|&c| c == 1).unwrap())
                }
            };
            s += &format!(
                "first sample counted differently: {x:?} (bits {:#x}): reference {}, cpu {}\n",
                x.bits(),
                where_(&w),
                where_(&g)
            );
            return s;
        }
    }
    s + "no single sample is counted differently: the difference is in chunking or merging\n"
}

pub fn in_selected(n: usize, channels: &Channels) -> u64 {
    let c = channels.interleave as usize;
    (0..n).filter(|i| channels.selected.contains(&((i % c) as u32))).count() as u64
}

pub fn check<T: TestSample>(samples: &[T], spec: &HistogramSpec) -> Result<(), TestCaseError> {
    let want = reference::histogram(samples, spec);
    let got = Backend::Cpu
        .histogram(samples, spec, Strategy::Auto)
        .map_err(|e| TestCaseError::fail(format!("cpu backend failed: {e} for {spec:?}")))?;
    prop_assert!(got.same_counts(&want), "{}", explain(samples, spec, &want, &got));
    let direct = cpu::histogram(samples, spec)
        .map_err(|e| TestCaseError::fail(format!("cpu::histogram failed: {e} for {spec:?}")))?;
    prop_assert!(direct.same_counts(&want), "{}", explain(samples, spec, &want, &direct));
    prop_assert_eq!(got.total(), in_selected(samples.len(), &spec.channels));
    prop_assert_eq!(got.counts.len(), spec.channels.selected.len());
    Ok(())
}

pub fn check_case<T: TestSample>(bins: Bins, channels: Channels, n: usize, seed: u64) -> Result<(), TestCaseError> {
    let spec = HistogramSpec { bins, channels };
    let samples: Vec<T> = make_samples(&spec.bins, n, seed);
    check(&samples, &spec)
}

pub fn assert_same<T: TestSample>(samples: &[T], spec: &HistogramSpec) {
    if let Err(e) = check(samples, spec) {
        panic!("{e}");
    }
}
