//! Inputs for the exact weighted sums, shared by the CPU and CUDA tests: adversarial weights
//! (huge of both signs around small ones, subnormals, cancellation to zero, halfway cases,
//! NaN and infinities) over a few bins, and the bitwise comparison with the reference.
#![allow(dead_code)] // each test binary uses its own subset

use tally::data::splitmix64;
use tally::histogram::WeightedHistogram;

/// 4 even bins over [0, 4).
pub const BINS: usize = 4;

/// A named case: samples in [0, 4) (bin = floor) and out of range, and one weight each.
pub struct Case {
    pub name: &'static str,
    pub samples: Vec<f64>,
    pub weights: Vec<f64>,
}

fn case(name: &'static str, pairs: &[(f64, f64)]) -> Case {
    Case { name, samples: pairs.iter().map(|p| p.0).collect(), weights: pairs.iter().map(|p| p.1).collect() }
}

/// The hand-picked cases; each also runs shuffled and repeated by the callers.
pub fn cases() -> Vec<Case> {
    let two53 = 9007199254740992.0;
    let tiny = 5e-324;
    vec![
        case("huge both signs around small", &[(0.5, 1e308), (0.5, 1.0), (0.5, -1e308), (1.5, 3.0), (1.5, 1e-300)]),
        case("max twice minus max", &[(0.5, f64::MAX), (0.5, f64::MAX), (0.5, -f64::MAX), (2.5, 1.0)]),
        case("overflow to infinity", &[(0.5, f64::MAX), (0.5, f64::MAX), (1.5, -f64::MAX), (1.5, -f64::MAX)]),
        case("subnormals", &[(0.5, tiny), (0.5, tiny), (1.5, -tiny), (1.5, 2.2e-308), (2.5, -1e-310), (2.5, 1e-310)]),
        case("cancellation to zero", &[(0.5, 0.1), (0.5, 0.2), (0.5, -0.3), (0.5, -0.1), (0.5, -0.2), (0.5, 0.3)]),
        case(
            "halfway to even",
            &[(0.5, two53), (0.5, 1.0), (1.5, two53), (1.5, 3.0), (2.5, two53), (2.5, 1.0), (2.5, 1e-300)],
        ),
        case("nan weight", &[(0.5, f64::NAN), (0.5, 1.0), (1.5, 2.0)]),
        case(
            "infinities",
            &[
                (0.5, f64::INFINITY),
                (0.5, -1e308),
                (1.5, f64::INFINITY),
                (1.5, f64::NEG_INFINITY),
                (2.5, f64::NEG_INFINITY),
            ],
        ),
        case(
            "outliers",
            &[(-1.0, 1e308), (-1.0, -1e308), (-1.0, 2.5), (9.0, f64::NAN), (f64::NAN, 0.25), (f64::NAN, 0.5)],
        ),
        case("signed zeros", &[(0.5, -0.0), (0.5, -0.0), (1.5, 0.0), (1.5, -0.0)]),
    ]
}

/// `n` samples over [-0.5, 4.5) (some out of range, some NaN) with weights of both signs from
/// 2^-899 to f64::MAX (what the reference sums exactly), and a few non-finite ones where
/// `specials`.
pub fn random(n: usize, seed: u64, specials: bool) -> Case {
    let mut s = seed;
    let mut next = || {
        s = splitmix64(s);
        s
    };
    let mut samples = Vec::with_capacity(n);
    let mut weights = Vec::with_capacity(n);
    for _ in 0..n {
        let r = next();
        samples.push(if r % 97 == 0 { f64::NAN } else { (r >> 11) as f64 / (1u64 << 53) as f64 * 5.0 - 0.5 });
        let r = next();
        let mantissa = (r >> 12) | 1;
        let exponent = match r % 8 {
            0 => 2046,                          // near f64::MAX
            1 => 124 + (r >> 3) % 8,            // near 2^-899 (subnormals: the fixed cases)
            2 => 124 + (r >> 3) % (2047 - 124), // anywhere above that
            _ => 1023 + (r >> 3) % 20,
        };
        let mut w = f64::from_bits((exponent << 52) | (mantissa & ((1 << 52) - 1)));
        if r & (1 << 63) != 0 {
            w = -w;
        }
        if specials && r % 1009 == 0 {
            w = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][(r >> 20) as usize % 3];
        }
        weights.push(w);
    }
    Case { name: "random", samples, weights }
}

/// Every sum's bits and every count the same as the reference's.
pub fn assert_same(got: &WeightedHistogram, want: &WeightedHistogram, what: &str) {
    assert!(got.same_bits(want), "{what}: {:?}\n  want {:?}", summary(got), summary(want));
    assert_eq!(got.weighting.accumulation, tally::Accumulation::Exact, "{what}");
    assert!(got.weighting.deterministic && got.weighting.error_bound == Some(0.0), "{what}");
}

fn summary(h: &WeightedHistogram) -> String {
    format!(
        "sums {:?} below {:?} above {:?} nan {:?} counts {:?}",
        h.sums,
        h.below,
        h.above,
        h.nan,
        (&h.below_count, &h.above_count, &h.nan_count)
    )
}
