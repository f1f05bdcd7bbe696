//! Exact weighted sums ([`Accumulation::Exact`](super::Accumulation::Exact)): each key's sum is
//! the exact sum of its weights, rounded once to f64, half to even. A float is an integer
//! mantissa times a power of two, so the sums are integers in units of 2^-1074; the reductions'
//! [`ExactSum`] holds such an integer and rounds it, and the GPU kernel keeps the same integer as
//! 32-bit digits per key ([`ExactLayout`]). Integer additions commute, so every order and every
//! split of the input give the same bits. NaN and infinite weights are counted per key and give
//! IEEE's answer (NaN in, or +inf and -inf: NaN; else the infinity); a finite sum beyond the
//! largest f64 rounds to an infinity.

use super::weighted::{KeySpace, Raw};
use crate::error::{Error, Result};
use crate::reduce::ExactSum;
use crate::sample::DType;
use rayon::prelude::*;

/// Most samples one exact weighted histogram takes (the CPU backend groups sample indices as
/// u32).
pub const MAX_EXACT_SAMPLES: u64 = u32::MAX as u64;

/// Refuses inputs longer than [`MAX_EXACT_SAMPLES`].
pub(crate) fn check_samples(n: usize) -> Result<()> {
    if n as u64 > MAX_EXACT_SAMPLES {
        return Err(Error::invalid(format!(
            "exact weighted sums take at most {MAX_EXACT_SAMPLES} samples, not {n}: split the input and add the sums"
        )));
    }
    Ok(())
}

/// The CPU backend: each sample's key, the sample indices grouped by key (a counting sort), then
/// one exact sum per key in parallel. Memory is linear in the samples and the keys (12 bytes a
/// sample, 8 a key), not a private accumulator per key and thread.
pub(crate) fn cpu_accumulate_exact(
    n: usize,
    keys: &KeySpace,
    key: impl Fn(usize) -> usize + Sync,
    weight: impl Fn(usize) -> f64 + Sync,
) -> Raw {
    let total = keys.width + keys.outs + 1;
    let key_of: Vec<usize> = (0..n).into_par_iter().with_min_len(1 << 14).map(&key).collect();
    let mut start = vec![0usize; total + 1];
    for &k in &key_of {
        start[k + 1] += 1;
    }
    for k in 0..total {
        start[k + 1] += start[k];
    }
    let mut next = start.clone();
    let mut order = vec![0u32; n];
    for (i, &k) in key_of.iter().enumerate() {
        order[next[k]] = i as u32;
        next[k] += 1;
    }
    drop(key_of);
    // Every key but the trash (the last).
    let values: Vec<u64> = (0..total - 1)
        .into_par_iter()
        .map_init(ExactSum::new, |sum, k| {
            *sum = ExactSum::new();
            order[start[k]..start[k + 1]].iter().for_each(|&i| sum.add_f64(weight(i as usize)));
            sum.to_f64().to_bits()
        })
        .collect();
    let w = keys.width;
    Raw {
        values: values[..w].to_vec(),
        outlier_values: values[w..].to_vec(),
        outlier_counts: (w..w + keys.outs).map(|k| (start[k + 1] - start[k]) as u64).collect(),
    }
}

/// How the GPU keeps exact sums: per key, `digits` signed 128-bit digit sums (two u64 words each,
/// low then high, two's complement), digit `d` standing for units of `2^(32 (first + d) - 1074)`,
/// then four u64 counters: NaN weights, +inf weights, -inf weights, samples. The weights' digits
/// are those of `exact.cuh`: a finite f64 `m * 2^(q - 1074)` adds `m << (q % 32)` as three 32-bit
/// chunks to digits `q / 32 ..= q / 32 + 2`; f32 weights use only the digits their exponents
/// reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExactLayout {
    /// The lowest digit the weights reach.
    pub first: u32,
    /// Digits per key.
    pub digits: u32,
}

impl ExactLayout {
    /// The layout for weights of `dtype` (f32 or f64).
    pub fn of(dtype: DType) -> ExactLayout {
        match dtype {
            // f32 as f64: q runs from 873 (2^-149) to 1149 (below 2^128): digits 27..=35, + 2.
            DType::F32 => ExactLayout { first: 27, digits: 11 },
            // q = max(e, 1) - 1 runs to 2045: digits 0..=63, + 2.
            _ => ExactLayout { first: 0, digits: 66 },
        }
    }

    /// u64 words per key.
    pub fn words_per_key(&self) -> usize {
        2 * self.digits as usize + 4
    }

    /// One key's rounded sum (f64 bits) and sample count from its words.
    pub fn decode(&self, words: &[u64]) -> (u64, u64) {
        let mut sum = ExactSum::new();
        for d in 0..self.digits as usize {
            let v = ((words[2 * d + 1] as u128) << 64 | words[2 * d] as u128) as i128;
            if v != 0 {
                sum.add_scaled(v, 32 * (self.first + d as u32));
            }
        }
        let s = &words[2 * self.digits as usize..];
        sum.add_special_counts(s[0], s[1], s[2]);
        (sum.to_f64().to_bits(), s[3])
    }

    /// Raw accumulators from the words of `width + outs` keys.
    pub(crate) fn raw(&self, words: &[u64], width: usize, outs: usize) -> Raw {
        let per = self.words_per_key();
        let decoded: Vec<(u64, u64)> = words.par_chunks(per).take(width + outs).map(|w| self.decode(w)).collect();
        Raw {
            values: decoded[..width].iter().map(|d| d.0).collect(),
            outlier_values: decoded[width..].iter().map(|d| d.0).collect(),
            outlier_counts: decoded[width..].iter().map(|d| d.1).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words a key's accumulator holds after these weights, added as the kernel adds them.
    fn words_of(layout: ExactLayout, weights: &[f64]) -> Vec<u64> {
        let mut w = vec![0u64; layout.words_per_key()];
        let mut digit = vec![0i128; layout.digits as usize];
        let base = 2 * layout.digits as usize;
        for &x in weights {
            let bits = x.to_bits();
            let e = ((bits >> 52) & 0x7ff) as u32;
            if e == 0x7ff {
                let k = if bits & ((1 << 52) - 1) != 0 {
                    0
                } else if x < 0.0 {
                    2
                } else {
                    1
                };
                w[base + k] += 1;
            } else if x != 0.0 {
                let m = (bits & ((1 << 52) - 1)) | if e != 0 { 1 << 52 } else { 0 };
                let q = e.max(1) - 1;
                let v = (m as u128) << (q % 32);
                let sign = if x.is_sign_negative() { -1 } else { 1 };
                for c in 0..3 {
                    let d = (q / 32 + c) as usize - layout.first as usize;
                    digit[d] += sign * ((v >> (32 * c)) as u32 as i128);
                }
            }
            w[base + 3] += 1;
        }
        for (d, v) in digit.into_iter().enumerate() {
            w[2 * d] = v as u64;
            w[2 * d + 1] = (v >> 64) as u64;
        }
        w
    }

    #[test]
    fn digit_words_decode_to_the_exact_sum() {
        let cases: [&[f64]; 6] = [
            &[1e308, 1.0, -1e308],
            &[f64::MAX, f64::MAX, -f64::MAX],
            &[5e-324, -1e-310, 3.0],
            &[0.1, -0.1, 0.0, -0.0],
            &[f64::INFINITY, 1.0],
            &[f64::INFINITY, f64::NEG_INFINITY],
        ];
        for ws in cases {
            let (bits, count) = ExactLayout::of(DType::F64).decode(&words_of(ExactLayout::of(DType::F64), ws));
            let mut e = ExactSum::new();
            ws.iter().for_each(|&x| e.add_f64(x));
            assert_eq!(bits, e.to_f64().to_bits(), "{ws:?}");
            assert_eq!(count, ws.len() as u64);
        }
        // f32 weights stay inside the f32 layout's digits, the extremes included.
        let f32s = [f32::MAX, f32::MIN_POSITIVE, 1e-45, -f32::MAX, 3.5];
        let ws: Vec<f64> = f32s.iter().map(|&x| x as f64).collect();
        let (bits, _) = ExactLayout::of(DType::F32).decode(&words_of(ExactLayout::of(DType::F32), &ws));
        assert_eq!(f64::from_bits(bits), 1e-45f32 as f64 + f32::MIN_POSITIVE as f64 + 3.5);
    }
}
