//! Synthetic inputs for demos, benchmarks and tests: the distributions that stress a histogram.
//! Deterministic for a given seed, generated in parallel.

use rayon::prelude::*;
use std::str::FromStr;

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
    pub const ALL: [Distribution; 4] =
        [Distribution::Uniform, Distribution::Hot90, Distribution::Hot100, Distribution::Zipf];

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
            crate::Error::invalid(format!(
                "unknown distribution '{s}' (expected uniform, hot90, hot100 or zipf)"
            ))
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
                    (cdf.partition_point(|&c| c <= u) as u32).min(bins - 1)
                }
            }
        })
        .collect()
}

/// Turns bin indices into samples of type T for even bins over `[0, bins)`: integers are the
/// index itself, floats the middle of the bin.
pub trait FromBin: Sized {
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
impl FromBin for f64 {
    fn from_bin(b: u32) -> Self {
        b as f64 + 0.5
    }
}

pub fn samples<T: FromBin + Send>(dist: Distribution, bins: u32, n: usize, seed: u64) -> Vec<T> {
    bin_indices(dist, bins, n, seed).into_par_iter().map(T::from_bin).collect()
}
