//! The CPU backend against the reference on chosen cases: large inputs of every type, exact
//! integer edges, type limits, NaN, invalid specs, thread counts, wide ranges and printed edges.

use tally::data::splitmix64;
use tally::histogram::binning::int_bounds;
use tally::histogram::{bin_edges, cpu, reference};
use tally::{Backend, Bins, Channels, Error, HistogramSpec, Strategy};

mod histogram_common;
use histogram_common::*;

// ---------------------------------------------------------------------------------------------
// Deterministic tests.

const BIG: usize = (1 << 20) + 7;

fn big_case<T: TestSample>(bins: Bins, channels: Channels, seed: u64) {
    let spec = HistogramSpec { bins, channels };
    let samples: Vec<T> = make_samples(&spec.bins, BIG, seed);
    assert_same(&samples, &spec);
}

#[test]
fn big_input_every_type() {
    let three = Channels { interleave: 3, selected: vec![2, 0] };
    big_case::<u8>(Bins::even(256, 0.0, 256.0), Channels::single(), 1);
    big_case::<u8>(Bins::even(10, -0.5, 200.25), three.clone(), 2);
    big_case::<u16>(Bins::Edges(vec![0.0, 1.0, 255.5, 1000.0, 40000.0, 65535.0]), Channels::all(4), 3);
    big_case::<i32>(Bins::even(37, -1000.0, 1000.0), three.clone(), 4);
    big_case::<i32>(Bins::even(256, 0.0, 256.0), Channels::single(), 5);
    big_case::<u32>(Bins::even(4999, 17.0, 4_000_000_000.0), Channels::single(), 6);
    big_case::<i64>(Bins::even(3, -1.0, 3.0 * 2f64.powi(59)), three.clone(), 7);
    big_case::<f32>(Bins::even(1000, -3.5, 7.25), Channels::all(2), 8);
    big_case::<f64>(Bins::Edges(vec![-1e300, -1.0, 0.0, 0.1, 0.30000000000000004, 1.0, 1e300]), three, 9);
}

#[test]
fn every_sample_is_accounted_for() {
    let layouts = [
        Channels::single(),
        Channels { interleave: 3, selected: vec![2, 0] },
        Channels { interleave: 4, selected: vec![3, 1, 0, 2] },
        Channels { interleave: 2, selected: vec![1] },
        Channels { interleave: 16, selected: vec![15, 0, 7] },
    ];
    for channels in layouts {
        for n in [0usize, 1, 2, 1001, 70_001] {
            let spec = HistogramSpec { bins: Bins::even(13, -7.5, 99.0), channels: channels.clone() };
            let samples: Vec<f64> = make_samples(&spec.bins, n, n as u64);
            let h = Backend::Cpu.histogram(&samples, &spec, Strategy::Auto).unwrap();
            assert_eq!(h.total(), in_selected(n, &channels), "{channels:?} n={n}");
            let c = channels.interleave as usize;
            for (k, &ch) in channels.selected.iter().enumerate() {
                let in_channel = (0..n).filter(|i| i % c == ch as usize).count() as u64;
                let seen = h.counts[k].iter().sum::<u64>() + h.below[k] + h.above[k] + h.nan[k];
                assert_eq!(seen, in_channel, "{channels:?} n={n} slot {k}");
            }
            assert_same(&samples, &spec);
        }
    }
}

fn even_three_of_nine<T: TestSample>() {
    let spec = HistogramSpec::even(3, 0.0, 9.0);
    let signed = T::from_i128(-1) < T::from_i128(0);
    let mut values: Vec<T> = (0i128..=10).map(T::from_i128).collect();
    if signed {
        values.push(T::from_i128(-1));
    }
    let h = Backend::Cpu.histogram(&values, &spec, Strategy::Auto).unwrap();
    let (want_below, want_above) = (signed as u64, 2);
    assert_eq!(h.counts, vec![vec![3, 3, 3]], "{}", T::DTYPE);
    assert_eq!((h.below[0], h.above[0], h.nan[0]), (want_below, want_above, 0), "{}", T::DTYPE);
    assert_same(&values, &spec);

    // One at a time: 3 starts bin 1, 6 starts bin 2, 8 is the last of bin 2, 9 is above.
    for (v, want) in [(3i128, Some(1usize)), (6, Some(2)), (8, Some(2)), (2, Some(0)), (5, Some(1)), (0, Some(0))] {
        let h = cpu::histogram(&[T::from_i128(v)], &spec).unwrap();
        let bin = h.counts[0].iter().position(|&c| c == 1);
        assert_eq!(bin, want, "{} value {v}", T::DTYPE);
    }
    let h = cpu::histogram(&[T::from_i128(9)], &spec).unwrap();
    assert_eq!((h.above[0], h.total()), (1, 1), "{} value 9", T::DTYPE);
}

#[test]
fn integer_bin_edges_are_exact() {
    even_three_of_nine::<u8>();
    even_three_of_nine::<u16>();
    even_three_of_nine::<i32>();
    even_three_of_nine::<u32>();
    even_three_of_nine::<i64>();
    even_three_of_nine::<f32>();
    even_three_of_nine::<f64>();

    let spec = HistogramSpec::even(3, 0.0, 9.0);
    let h = cpu::histogram(&[-1i32], &spec).unwrap();
    assert_eq!((h.below[0], h.total()), (1, 1));

    // 7 integers in 3 bins: [0, 7/3) [7/3, 14/3) [14/3, 7): 0 1 2 | 3 4 | 5 6.
    let spec = HistogramSpec::even(3, 0.0, 7.0);
    let h = cpu::histogram(&[0i32, 1, 2, 3, 4, 5, 6, 7], &spec).unwrap();
    assert_eq!(h.counts, vec![vec![3, 2, 2]]);
    assert_eq!(h.above, vec![1]);

    // Where f64 arithmetic would be wrong: range 3*2^59 + 1 is not an f64, and 2^60 - 1 rounds
    // to 2^60, so the f64 formula says bin 2; the exact rule says floor(3*2^60 / (3*2^59+1)) = 1.
    let spec = HistogramSpec::even(3, -1.0, 3.0 * 2f64.powi(59));
    let x = (1i64 << 60) - 1;
    let float_bin = ((((x as f64) - -1.0) * 3.0) / (3.0 * 2f64.powi(59) - -1.0)).floor();
    assert_eq!(float_bin, 2.0, "the example no longer shows the difference");
    let h = cpu::histogram(&[x], &spec).unwrap();
    assert_eq!(h.counts, vec![vec![0, 1, 0]]);
    assert_same(&[x, x - 1, x + 1, x + 2, i64::MIN, i64::MAX, -1, -2, 0], &spec);
}

/// Every integer of small integral ranges against every bin count with and without common
/// factors: the bins' first integers, where `d * bins` is an exact multiple of the range, are
/// where an estimated quotient goes wrong (49 * (1/49) < 1 in f64, for one).
#[test]
fn integer_rule_small_ranges_exhaustively() {
    let bin_counts = [1u32, 2, 3, 4, 5, 7, 8, 10, 12, 16, 37, 49, 64, 100, 255, 256];
    for range in 1i64..=300 {
        for &bins in &bin_counts {
            let lower = if range % 2 == 0 { -7 } else { 3 };
            let spec = HistogramSpec::even(bins, lower as f64, (lower + range) as f64);
            let samples: Vec<i32> = (lower - 2..lower + range + 2).map(|v| v as i32).collect();
            let want = reference::histogram(&samples, &spec);
            let got = cpu::histogram(&samples, &spec).unwrap();
            assert!(got.same_counts(&want), "{}", explain(&samples, &spec, &want, &got));
        }
    }
}

/// Integral ranges where `range * bins` is beyond 2^53 (so no f64 shortcut is exact) but below
/// 2^63 (so the exact rule applies), at every bin's first integer and its neighbours.
#[test]
fn integer_rule_large_ranges_at_bin_starts() {
    let two = |e: i32| 2f64.powi(e);
    let specs = [
        (3u32, 0.0, 15.0 * two(50)),
        (7, -two(60), -two(60) + 21.0 * two(52)),
        (100, 0.0, 300.0 * two(44)),
        (3, 0.0, two(55) + 8.0),
        (5, -two(61), -two(61) + 5.0 * 7.0 * two(54)),
        (1, -two(62), two(62) - 1024.0),
    ];
    for (bins, lower, upper) in specs {
        let spec = HistogramSpec::even(bins, lower, upper);
        let b = int_bounds(&spec.bins).expect("the exact rule applies");
        assert!(b.range as u128 * bins as u128 > 1 << 53, "{spec:?}");
        let mut samples: Vec<i64> = i64::extremes();
        for k in 0..=bins as i128 {
            let first = b.lower as i128 + (k * b.range as i128 + bins as i128 - 1) / bins as i128;
            for x in [first - 1, first, first + 1] {
                samples.push(i64::from_i128(x));
            }
        }
        samples.extend(make_samples::<i64>(&spec.bins, 2000, bins as u64));
        assert_same(&samples, &spec);
    }
}

/// Power-of-two bin widths with bounds at and beyond the limits of 16- and 32-bit types, where
/// offsets computed in the sample's own width would wrap.
#[test]
fn integer_bounds_at_type_limits() {
    fn check_type<T: TestSample>(specs: &[(u32, f64, f64)]) {
        for &(bins, lower, upper) in specs {
            let spec = HistogramSpec::even(bins, lower, upper);
            let mut samples: Vec<T> = make_samples(&spec.bins, 5000, bins as u64);
            samples.extend(T::extremes());
            for v in [lower, upper, 0.0, 2147483648.0, 4294967296.0, 65536.0] {
                T::around(v, &mut samples);
            }
            assert_same(&samples, &spec);
        }
    }
    let two = |e: i32| 2f64.powi(e);
    check_type::<i32>(&[
        (1, -two(31), two(31)),
        (2, -two(31), two(31)),
        (256, -two(31), two(31)),
        (4, -two(31), 0.0),
        (1, -two(31) - 1.0, two(31) - 1.0),
        (2, -two(30), two(31) + two(30)),
        (8, two(31) - 8.0, two(31)),
        (1, two(31), two(32)),
    ]);
    check_type::<u32>(&[
        (1, 0.0, two(32)),
        (256, 0.0, two(32)),
        (3, two(31), two(32) + two(30)),
        (1, 1.0, two(32) + 1.0),
        (2, -two(31), two(31)),
        (4, two(32) - 4.0, two(32)),
    ]);
    check_type::<u16>(&[
        (256, 0.0, 65536.0),
        (1, 1.0, 65537.0),
        (1, -1.0, 65535.0),
        (3, 32768.0, 65536.0 + 16384.0),
        (1, 65535.0, 131071.0),
    ]);
}

#[test]
fn f32_nan_is_counted_as_nan() {
    let samples = [
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001),
        1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        3.999_999_8,
        4.0,
        0.0,
        -0.0,
    ];
    for bins in [Bins::even(4, 0.0, 4.0), Bins::Edges(vec![0.0, 1.0, 2.0, 3.0, 4.0])] {
        let spec = single(&bins);
        let h = Backend::Cpu.histogram(&samples[..], &spec, Strategy::Auto).unwrap();
        assert_eq!(h.nan, vec![3], "{bins:?}");
        assert_eq!(h.below, vec![1], "{bins:?}");
        assert_eq!(h.above, vec![2], "{bins:?}");
        assert_eq!(h.counts, vec![vec![2, 1, 0, 1]], "{bins:?}");
        assert_same(&samples, &spec);
    }
    // NaN in one channel only.
    let spec = HistogramSpec::even(2, 0.0, 1.0).with_channels(Channels::all(2));
    let h = cpu::histogram(&[f32::NAN, 0.25, f32::NAN, 0.75, 0.5, f32::NAN], &spec).unwrap();
    assert_eq!(h.nan, vec![2, 1]);
    assert_eq!(h.counts, vec![vec![0, 1], vec![1, 1]]);
}

#[test]
fn invalid_specs_are_errors_not_panics() {
    let ch = |interleave: u32, selected: Vec<u32>| {
        HistogramSpec::even(4, 0.0, 1.0).with_channels(Channels { interleave, selected })
    };
    let cases: Vec<(&str, HistogramSpec)> = vec![
        ("0 bins", HistogramSpec::even(0, 0.0, 1.0)),
        ("lower == upper", HistogramSpec::even(4, 1.0, 1.0)),
        ("lower > upper", HistogramSpec::even(4, 2.0, 1.0)),
        ("NaN lower", HistogramSpec::even(4, f64::NAN, 1.0)),
        ("NaN upper", HistogramSpec::even(4, 0.0, f64::NAN)),
        ("infinite upper", HistogramSpec::even(4, 0.0, f64::INFINITY)),
        ("infinite lower", HistogramSpec::even(4, f64::NEG_INFINITY, 0.0)),
        ("range overflows", HistogramSpec::even(4, f64::MIN, f64::MAX)),
        ("too many bins", HistogramSpec::even(u32::MAX, 0.0, 1.0)),
        ("no edges", HistogramSpec::edges(vec![])),
        ("one edge", HistogramSpec::edges(vec![1.0])),
        ("repeated edge", HistogramSpec::edges(vec![0.0, 1.0, 1.0, 2.0])),
        ("decreasing edges", HistogramSpec::edges(vec![0.0, 2.0, 1.0])),
        ("NaN edge", HistogramSpec::edges(vec![0.0, f64::NAN, 1.0])),
        ("infinite edge", HistogramSpec::edges(vec![0.0, f64::INFINITY])),
        ("channel out of range", ch(2, vec![2])),
        ("channel selected twice", ch(3, vec![1, 0, 1])),
        ("no channel selected", ch(2, vec![])),
        ("zero channels", ch(0, vec![0])),
        ("too many channels", ch(17, vec![0])),
        ("too many counters", HistogramSpec::even(1 << 30, 0.0, 1.0).with_channels(Channels::all(2))),
    ];
    for (what, spec) in cases {
        for n in [0usize, 5] {
            let samples = vec![0.5f64; n];
            let r = std::panic::catch_unwind(|| Backend::Cpu.histogram(&samples, &spec, Strategy::Auto));
            match r {
                Ok(Err(Error::InvalidArgument(_))) => {}
                Ok(Err(e)) => panic!("{what}: wrong error kind: {e}"),
                Ok(Ok(_)) => panic!("{what}: accepted {spec:?}"),
                Err(_) => panic!("{what}: panicked instead of returning an error"),
            }
            let ints = vec![1i32; n];
            let r = std::panic::catch_unwind(|| cpu::histogram(&ints, &spec));
            assert!(matches!(r, Ok(Err(Error::InvalidArgument(_)))), "{what}: cpu::histogram did not return an error");
            let bytes = vec![1u8; n];
            let r = std::panic::catch_unwind(|| cpu::histogram(&bytes, &spec));
            assert!(
                matches!(r, Ok(Err(Error::InvalidArgument(_)))),
                "{what}: cpu::histogram::<u8> did not return an error"
            );
        }
    }
}

#[test]
fn large_u8_input() {
    let n = 300_001; // several 2^16-sample chunks
    let samples: Vec<u8> = (0..n as u64).map(|i| (splitmix64(i) >> 56) as u8).collect();
    let mut want = vec![0u64; 256];
    for &x in &samples {
        want[x as usize] += 1;
    }
    let spec = HistogramSpec::even(256, 0.0, 256.0);
    let h = Backend::Cpu.histogram(&samples, &spec, Strategy::Auto).unwrap();
    assert_eq!(h.counts, vec![want]);
    assert_eq!((h.below[0], h.above[0], h.nan[0]), (0, 0, 0));
    assert_same(&samples, &spec);

    // All in one bin: the worst case for the sub-histograms.
    let hot = vec![200u8; n];
    let h = cpu::histogram(&hot, &spec).unwrap();
    assert_eq!(h.counts[0][200], n as u64);
    assert_eq!(h.total(), n as u64);

    // Fewer bins than values, and values outside the range.
    let spec = HistogramSpec::even(7, 10.0, 250.0);
    assert_same(&samples, &spec);
}

#[test]
fn large_four_channel_input() {
    let pixels = 100_003;
    let samples: Vec<u8> = (0..4 * pixels as u64).map(|i| (splitmix64(i ^ 0xabc) >> 56) as u8).collect();
    let selected = vec![3, 1, 0, 2];
    let spec =
        HistogramSpec::even(256, 0.0, 256.0).with_channels(Channels { interleave: 4, selected: selected.clone() });
    let mut want = vec![vec![0u64; 256]; 4];
    for (i, &x) in samples.iter().enumerate() {
        let k = selected.iter().position(|&c| c as usize == i % 4).unwrap();
        want[k][x as usize] += 1;
    }
    let h = Backend::Cpu.histogram(&samples, &spec, Strategy::Auto).unwrap();
    assert_eq!(h.counts, want);
    assert_eq!(h.total(), 4 * pixels as u64);
    assert_same(&samples, &spec);

    // The same layout as i32, with a partial last pixel, and a subset of channels.
    let ints: Vec<i32> = samples.iter().map(|&x| x as i32 * 3 - 100).take(4 * pixels - 2).collect();
    let spec = HistogramSpec::even(50, -100.0, 500.0).with_channels(Channels { interleave: 4, selected: vec![2, 0] });
    assert_same(&ints, &spec);
    let h = cpu::histogram(&ints, &spec).unwrap();
    assert_eq!(h.total(), in_selected(ints.len(), &spec.channels));
}

#[test]
fn thread_count_does_not_change_counts() {
    let n = 3 * 90_001;
    let spec = HistogramSpec::even(100, -3.0, 1000.5).with_channels(Channels { interleave: 3, selected: vec![1, 2] });
    let samples: Vec<f32> = make_samples(&spec.bins, n, 42);
    let want = reference::histogram(&samples, &spec);
    for threads in [1, 3, 8] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let got = pool.install(|| cpu::histogram(&samples, &spec)).unwrap();
        assert!(got.same_counts(&want), "{threads} threads: {}", explain(&samples, &spec, &want, &got));
    }
}

// ---------------------------------------------------------------------------------------------
// Hardening: ranges too wide for the f64 rule, and printed edges that are the rule's own.

/// `(x - lower) * bins` overflowed to infinity for ranges wider than f64::MAX / bins and the
/// clamp put the sample in the last bin; such ranges are now refused, and the widest accepted
/// ones bin as the rule says.
#[test]
fn ranges_too_wide_for_the_bins_are_refused() {
    for (bins, lo, hi) in [(4u32, 1e307, 1.5e308), (4, 0.0, 1e308), (2, -1e308, 0.0), (1 << 20, 0.0, 1e303)] {
        let spec = HistogramSpec::even(bins, lo, hi);
        let e = cpu::histogram(&[lo], &spec).unwrap_err().to_string();
        assert!(e.contains("too wide") && e.contains("bins"), "{e}");
        assert!(!e.contains("00000000000000000000"), "numbers in short form: {e}");
    }
    // Just inside the limit every sample lands where numpy puts it.
    let spec = HistogramSpec::even(4, 0.0, 4e307);
    let h = cpu::histogram(&[0.5e307, 1.5e307, 2.5e307, 3.5e307, 3.9999e307], &spec).unwrap();
    assert_eq!(h.counts, vec![vec![1, 1, 1, 2]]);
    assert_same(&[0.5e307f64, 1.5e307, 2.5e307, 3.5e307, 3.9999e307, 1e307, 2e307, 3e307], &spec);
}

#[test]
fn edge_errors_name_the_right_edge() {
    let e = HistogramSpec::edges(vec![f64::NEG_INFINITY, 0.0, 1.0]).validate().unwrap_err().to_string();
    assert!(e.contains("edge 0 "), "{e}");
    let e = HistogramSpec::edges(vec![0.0, 1.0, f64::NAN]).validate().unwrap_err().to_string();
    assert!(e.contains("edge 2 "), "{e}");
}

/// Every printed edge is where the rule starts the bin: the edge itself is in bin i, the value
/// just below it is not.
fn check_rule_edges(bins: &Bins, dtype: tally::DType) {
    use tally::histogram::{rule_edge, Edge};
    let n = bins.count();
    for i in 1..n {
        match rule_edge(bins, dtype, i) {
            Edge::Float(e) => {
                let (at, below) = (reference::place(bins, e), reference::place(bins, e.next_down()));
                let bin = |p| match p {
                    reference::Place::Bin(b) => b,
                    reference::Place::Above => n,
                    _ => 0,
                };
                assert!(bin(at) >= i && bin(below) < i, "{bins:?} edge {i} = {e:e}: {at:?}, below {below:?}");
            }
            Edge::Int(v) => {
                let place = |x: i64| reference::place(bins, x);
                assert_eq!(place(v), reference::Place::Bin(i), "{bins:?} edge {i} = {v}");
                assert_eq!(place(v - 1), reference::Place::Bin(i - 1), "{bins:?} edge {i} = {v}");
            }
        }
    }
}

#[test]
fn printed_edges_are_the_rules_boundaries() {
    // 0.8999999999999999 * 10 rounds to 9: it is in bin 9, so bin 9 starts below 0.9.
    let bins = Bins::even(10, 0.0, 1.0);
    let h =
        cpu::histogram(&[0.8999999999999999f64], &HistogramSpec { bins: bins.clone(), channels: Channels::single() })
            .unwrap();
    assert_eq!(h.counts[0][9], 1);
    let edges = bin_edges(&bins);
    assert!(edges[9] <= 0.8999999999999999, "edge 9 printed as {}", edges[9]);
    for b in [
        Bins::even(10, 0.0, 1.0),
        Bins::even(7, -3.3, 1e-3),
        Bins::even(1000, -1e300, 1e300),
        Bins::even(3, 5.0, 5.000000000000002),
        Bins::even(256, 0.1, 0.7),
        Bins::even(100, 1e-300, 3e-300),
    ] {
        check_rule_edges(&b, tally::DType::F64);
    }
    for b in [Bins::even(3, 0.0, 7.0), Bins::even(7, -100.0, 1000.0), Bins::even(3, -1.0, 3.0 * 2f64.powi(59))] {
        check_rule_edges(&b, tally::DType::I64);
    }
}
