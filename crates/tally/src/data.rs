//! Synthetic inputs for demos, benchmarks and tests: the distributions that stress a histogram.
//! Deterministic for a given seed, generated in parallel.

use rayon::prelude::*;
use std::str::FromStr;

/// How synthetic samples spread over the bins: from no contention (uniform) to every thread
/// hitting one counter (hot100), the cases that separate histogram strategies.
///
/// ```
/// use tally::data::Distribution;
/// assert_eq!("zipf".parse::<Distribution>().unwrap(), Distribution::Zipf);
/// assert_eq!(Distribution::Hot90.name(), "hot90");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// Every bin equally likely.
    Uniform,
    /// 90% of samples in bin 0, the rest uniform.
    Hot90,
    /// Every sample in bin 0.
    Hot100,
    /// Zipf with exponent 1.1 over the bins (bin 0 the most frequent).
    Zipf,
}

impl Distribution {
    /// Every distribution, in the order benchmarks report them.
    pub const ALL: [Distribution; 4] =
        [Distribution::Uniform, Distribution::Hot90, Distribution::Hot100, Distribution::Zipf];

    /// The name the CLI and reports use (`uniform`, `hot90`, `hot100`, `zipf`); what
    /// [`FromStr`] parses.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform",
            Distribution::Hot90 => "hot90",
            Distribution::Hot100 => "hot100",
            Distribution::Zipf => "zipf",
        }
    }
}

impl FromStr for Distribution {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Distribution::ALL.into_iter().find(|d| d.name() == s).ok_or_else(|| {
            crate::Error::invalid(format!("unknown distribution '{s}' (expected uniform, hot90, hot100 or zipf)"))
        })
    }
}

/// SplitMix64: a counter-based generator, so element i needs no state from element i-1.
#[inline]
pub fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Uniform in [0, 1) from the top 53 bits.
#[inline]
fn unit(x: u64) -> f64 {
    (x >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// `n` bin indices in `[0, bins)` drawn from `dist`.
pub fn bin_indices(dist: Distribution, bins: u32, n: usize, seed: u64) -> Vec<u32> {
    assert!(bins > 0);
    let cdf: Vec<f64> = if dist == Distribution::Zipf {
        let mut acc = 0.0;
        let mut c: Vec<f64> = (1..=bins as u64)
            .map(|k| {
                acc += (k as f64).powf(-1.1);
                acc
            })
            .collect();
        let total = acc;
        c.iter_mut().for_each(|v| *v /= total);
        c
    } else {
        Vec::new()
    };
    // A guide table (Chen and Asau): the first candidate bin for each of `guide.len()` equal
    // slices of [0, 1), so that a draw walks a step or two instead of a binary search over a
    // CDF that at millions of bins no cache holds. Same result as the search.
    let guide: Vec<u32> = if dist == Distribution::Zipf {
        let m = cdf.len().min(1 << 22);
        (0..m).into_par_iter().map(|j| cdf.partition_point(|&c| c <= j as f64 / m as f64) as u32).collect()
    } else {
        Vec::new()
    };
    (0..n)
        .into_par_iter()
        .map(|i| {
            let r = splitmix64(seed ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
            match dist {
                Distribution::Uniform => (r % bins as u64) as u32,
                Distribution::Hot90 => {
                    if !r.is_multiple_of(10) {
                        0
                    } else {
                        ((r >> 8) % bins as u64) as u32
                    }
                }
                Distribution::Hot100 => 0,
                Distribution::Zipf => {
                    let u = unit(r);
                    // guide[j - 1] <= the answer: every CDF value before it is <= (j - 1) / m < u
                    // (one slice back, so that rounding in u * m cannot overshoot).
                    let j = ((u * guide.len() as f64) as usize).min(guide.len() - 1);
                    let mut k = guide[j.saturating_sub(1)] as usize;
                    while k < cdf.len() && cdf[k] <= u {
                        k += 1;
                    }
                    (k as u32).min(bins - 1)
                }
            }
        })
        .collect()
}

/// Turns bin indices into samples of type T for even bins over `[0, bins)`: integers are the
/// index itself, floats the middle of the bin.
pub trait FromBin: Sized {
    /// The sample that falls in bin `b` of `bins` even bins over `[0, bins)`.
    fn from_bin(b: u32) -> Self;
}
macro_rules! from_bin_int {
    ($($t:ty),*) => {$(impl FromBin for $t { fn from_bin(b: u32) -> Self { b as $t } })*};
}
from_bin_int!(u8, u16, i32, u32, i64);
impl FromBin for f32 {
    fn from_bin(b: u32) -> Self {
        b as f32 + 0.5
    }
}
impl FromBin for half::f16 {
    fn from_bin(b: u32) -> Self {
        half::f16::from_f32(b as f32 + 0.5)
    }
}
impl FromBin for half::bf16 {
    fn from_bin(b: u32) -> Self {
        half::bf16::from_f32(b as f32 + 0.5)
    }
}
impl FromBin for f64 {
    fn from_bin(b: u32) -> Self {
        b as f64 + 0.5
    }
}

/// `n` samples of type `T` drawn from `dist` over even bins `[0, bins)`: the demo's and the
/// benchmarks' input. The same seed gives the same samples on every machine.
///
/// ```
/// use tally::data::{samples, Distribution};
/// let xs: Vec<u8> = samples(Distribution::Hot100, 256, 1000, 7);
/// assert!(xs.iter().all(|&x| x == 0));
/// let ys: Vec<f32> = samples(Distribution::Uniform, 10, 1000, 7);
/// assert!(ys.iter().all(|&y| (0.0..10.0).contains(&y) && y.fract() == 0.5));
/// ```
pub fn samples<T: FromBin + Send>(dist: Distribution, bins: u32, n: usize, seed: u64) -> Vec<T> {
    bin_indices(dist, bins, n, seed).into_par_iter().map(T::from_bin).collect()
}

/// `n` interleaved (x, y) pairs uniform in [0, 1)^2.
pub fn uniform_pairs(n: usize, seed: u64) -> Vec<f32> {
    (0..2 * n)
        .into_par_iter()
        .map(|i| unit(splitmix64(seed ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d))) as f32)
        .collect()
}

/// `n` interleaved (x, y) pairs from a round Gaussian blob at (centre, centre) with standard
/// deviation `sigma` on each axis (Box-Muller): the clustered case of a 2-D histogram.
pub fn gaussian_pairs(n: usize, centre: f64, sigma: f64, seed: u64) -> Vec<f32> {
    (0..n)
        .into_par_iter()
        .flat_map_iter(|i| {
            let r1 = splitmix64(seed ^ (2 * i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
            let r2 = splitmix64(seed ^ (2 * i as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d));
            let (u1, u2) = (1.0 - unit(r1), unit(r2)); // u1 in (0, 1]: ln is finite
            let r = (-2.0 * u1.ln()).sqrt() * sigma;
            let t = std::f64::consts::TAU * u2;
            [(centre + r * t.cos()) as f32, (centre + r * t.sin()) as f32]
        })
        .collect()
}

/// `n` weights in [0, 1) (f32), for weighted demos and benchmarks.
pub fn unit_weights(n: usize, seed: u64) -> Vec<f32> {
    (0..n)
        .into_par_iter()
        .map(|i| unit(splitmix64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))) as f32)
        .collect()
}

// The seeds of the benches' data (`tally bench`; the Python benchmark reads the same data to
// compare its calls with the Rust library's).
/// The seed of `tally bench reduce`'s values ([`bench_values`]).
pub const REDUCE_SEED: u64 = 0x5eed;
/// The seed of `tally bench scan`'s f32 values ([`bench_values`]).
pub const SCAN_SEED_F32: u64 = 0x5ca9;
/// The seed of `tally bench scan`'s i32 values ([`bench_values`]).
pub const SCAN_SEED_I32: u64 = 0x1d;
/// The seed of `tally bench hist`'s samples ([`samples`] with `HIST_SEED ^ bins`).
pub const HIST_SEED: u64 = 0x7a11;

/// Benchmark values from 64 random bits: f32 in [0, 1) on a 2^-24 grid, f64 in [0, 1) on a
/// 2^-53 grid, i32 in [-2^20, 2^20) (sums neither overflow nor round), 16-bit floats as the f32.
pub trait BenchValue: Sized + Send {
    /// The value of the random bits `r`.
    fn from_random(r: u64) -> Self;
}
impl BenchValue for f32 {
    fn from_random(r: u64) -> Self {
        (r >> 40) as f32 / (1u64 << 24) as f32
    }
}
impl BenchValue for f64 {
    fn from_random(r: u64) -> Self {
        (r >> 11) as f64 / (1u64 << 53) as f64
    }
}
impl BenchValue for i32 {
    fn from_random(r: u64) -> Self {
        (r >> 43) as i32 - (1 << 20)
    }
}
impl BenchValue for half::f16 {
    fn from_random(r: u64) -> Self {
        half::f16::from_f32(f32::from_random(r))
    }
}
impl BenchValue for half::bf16 {
    fn from_random(r: u64) -> Self {
        half::bf16::from_f32(f32::from_random(r))
    }
}

/// `n` benchmark values, element `i` from `splitmix64(seed ^ i)` (the reduction and scan
/// benches' data; the Python benchmark uses the same, to compare like with like).
pub fn bench_values<T: BenchValue>(n: usize, seed: u64) -> Vec<T> {
    (0..n).into_par_iter().map(|i| T::from_random(splitmix64(seed ^ i as u64))).collect()
}

/// The CUB peers' 32-bit hash (their `mix`): the data of the select and run benches.
pub fn mix(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

/// The peers' keys: runs of exactly `run`, each key hashed from its run's number into
/// [0, 100000) (neighbours rarely equal).
pub fn peer_keys(n: usize, run: usize) -> Vec<i32> {
    (0..n).into_par_iter().map(|i| (mix(((i / run) as u32).wrapping_mul(2_654_435_761)) % 100_000) as i32).collect()
}

/// The peers' f32 values, uniform in [-0.5, 0.5) (their `fill_f32` with seed 7), one value per
/// run of `run` elements (1: every element its own).
pub fn peer_values(n: usize, run: usize) -> Vec<f32> {
    (0..n)
        .into_par_iter()
        .map(|i| (mix(((i / run) as u32).wrapping_mul(2_654_435_761) ^ 7) & 0xff_ffff) as f32 / 16_777_216.0 - 0.5)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guide table gives exactly what a binary search over the CDF gives.
    #[test]
    fn zipf_guide_table_matches_the_search() {
        for bins in [1u32, 2, 3, 1000, 70_000] {
            let got = bin_indices(Distribution::Zipf, bins, 20_000, 9);
            let mut acc = 0.0;
            let mut cdf: Vec<f64> = (1..=bins as u64)
                .map(|k| {
                    acc += (k as f64).powf(-1.1);
                    acc
                })
                .collect();
            cdf.iter_mut().for_each(|v| *v /= acc);
            for (i, &b) in got.iter().enumerate() {
                let u = unit(splitmix64(9 ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d)));
                assert_eq!(b, (cdf.partition_point(|&c| c <= u) as u32).min(bins - 1));
            }
        }
    }
}
