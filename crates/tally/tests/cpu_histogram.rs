//! The CPU backend against the reference, count for count (below, above and NaN included).
//!
//! Property tests draw the bins (even bins with integral, fractional, negative, huge and tiny
//! ranges, or custom edges), the channel layout (1..=4 interleaved, any non-empty subset in any
//! order), the size and a seed; the samples are then drawn from that seed so that they hit the
//! bins' edges on purpose: the bounds, one ulp either side of every edge, exact rational edges of
//! the integer rule, NaN, infinities, type extremes and random bit patterns.

use proptest::prelude::*;
use proptest::test_runner::Config;
use tally::{Bins, Channels};

mod histogram_common;
use histogram_common::*;

// ---------------------------------------------------------------------------------------------
// Strategies.

/// 64 cases per property (quick in a debug build); PROPTEST_CASES=n for a deeper run.
fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(64);
    Config { cases, failure_persistence: None, ..Config::default() }
}

fn even_bins() -> impl proptest::strategy::Strategy<Value = Bins> {
    let bins = prop_oneof![
        3 => 1u32..=5000,
        2 => 1u32..=16,
        1 => prop::sample::select(vec![1u32, 2, 3, 7, 10, 64, 100, 255, 256, 1000, 1024, 4096, 5000]),
    ];
    (bins, 0u8..13, -3000i64..3000, 1i64..20_000, -1e4f64..1e4, 1e-3f64..1e5, 0i32..62, 1i64..=4)
        .prop_map(|(bins, kind, l, w, x, y, e, m)| {
            let constants = [
                (0.0, 256.0),
                (0.0, 65536.0),
                (-0.5, 255.5),
                (0.1, 0.7),
                (-1e300, 1e300),
                // As wide as 5000 bins allow: (HI - LO) * bins must stay finite.
                (f64::MIN / 16384.0, f64::MAX / 16384.0),
                (1e-300, 2e-300),
                (i64::MIN as f64, i64::MAX as f64),
                (0.0, 4_294_967_296.0),
                (-2_147_483_648.0, 2_147_483_648.0),
                (-1.0, 3.0 * 2f64.powi(59)),
                (-0.25, -0.0),
            ];
            let (lo, hi) = match kind {
                // Integral bounds, range rarely a multiple of the bins.
                0 | 1 => (l as f64, (l + w) as f64),
                // Integral, range a multiple of the bins (once: one bin per integer).
                2 => (l as f64, (l + bins as i64 * m) as f64),
                // Integral, fewer integers than bins.
                3 => (l as f64, (l + 1 + w % bins as i64) as f64),
                // Fractional bounds.
                4 => (x, x + y),
                // Negative, fractional.
                5 => (-x.abs() - y, -x.abs()),
                // Negative, integral.
                6 => ((-l.abs() - w) as f64, (-l.abs()) as f64),
                // Symmetric powers of two: the integer rule up to 2^63 / bins, then the f64 rule.
                7 => (-(2f64.powi(e)), 2f64.powi(e)),
                // Large integral ranges, exactly representable: the integer quotient's correction.
                8 => {
                    let base = l as f64 * 2f64.powi(40);
                    (base, base + w as f64 * 2f64.powi(e % 21) + 1.0)
                }
                // Narrow fractional range.
                9 => (x, x + y * 1e-7),
                // Fractional lower, integral upper.
                10 => (l as f64 - y.fract() - 0.001, (l + w) as f64),
                _ => constants[(l.rem_euclid(constants.len() as i64)) as usize],
            };
            Bins::even(bins, lo, hi)
        })
        .prop_filter("valid even bins", |b| b.validate().is_ok())
}

fn edge_bins() -> impl proptest::strategy::Strategy<Value = Bins> {
    let specials = vec![
        -1e300,
        1e300,
        0.0,
        -0.0,
        0.1,
        0.2,
        0.1 + 0.2,
        0.3,
        1.0,
        1.0f64.next_up(),
        1.0f64.next_down(),
        255.0,
        255.5,
        256.0,
        65535.0,
        65536.0,
        2_147_483_648.0,
        -2_147_483_648.0,
        9_007_199_254_740_992.0,
        9_007_199_254_740_994.0,
        9_223_372_036_854_775_808.0,
        -9_223_372_036_854_775_808.0,
        16_777_216.0,
        16_777_218.0,
    ];
    let value = prop_oneof![
        3 => (-1000i64..1000).prop_map(|v| v as f64),
        3 => -1e4f64..1e4,
        1 => -1e6f64..-1.0,
        1 => prop::sample::select(specials),
    ];
    prop::collection::vec(value, 2..=60)
        .prop_map(|mut v| {
            v.sort_by(f64::total_cmp);
            v.dedup_by(|a, b| a == b);
            Bins::Edges(v)
        })
        .prop_filter("valid edges", |b| b.validate().is_ok())
}

fn channels() -> impl proptest::strategy::Strategy<Value = Channels> {
    (1u32..=4).prop_flat_map(|c| {
        prop::sample::subsequence((0..c).collect::<Vec<u32>>(), 1..=c as usize)
            .prop_shuffle()
            .prop_map(move |selected| Channels { interleave: c, selected })
    })
}

fn sizes() -> impl proptest::strategy::Strategy<Value = usize> {
    prop_oneof![
        5 => prop::sample::select(vec![0usize, 1, 2, 3, 4, 5, 31, 32, 33, 1023, 1024, 1025]),
        3 => 0usize..3000,
        1 => prop::sample::select(vec![4099usize, 65_537, 70_001, 140_003]),
    ]
}

macro_rules! prop_tests {
    ($($t:ty => $even:ident, $edges:ident;)*) => {
        proptest! {
            #![proptest_config(config())]
            $(
                #[test]
                fn $even(bins in even_bins(), channels in channels(), n in sizes(), seed in any::<u64>()) {
                    check_case::<$t>(bins, channels, n, seed)?;
                }

                #[test]
                fn $edges(bins in edge_bins(), channels in channels(), n in sizes(), seed in any::<u64>()) {
                    check_case::<$t>(bins, channels, n, seed)?;
                }
            )*
        }
    };
}

prop_tests! {
    u8 => prop_even_u8, prop_edges_u8;
    u16 => prop_even_u16, prop_edges_u16;
    i32 => prop_even_i32, prop_edges_i32;
    u32 => prop_even_u32, prop_edges_u32;
    i64 => prop_even_i64, prop_edges_i64;
    f32 => prop_even_f32, prop_edges_f32;
    f64 => prop_even_f64, prop_edges_f64;
}
