//! The CPU backend's selections against the plain sequential reference: every entry point,
//! element type and predicate of the shared list, sizes around the block and the chunk, kept
//! shares from none to all; the predicate evaluators against the reference's own evaluation of
//! the parsed expression (a property test over random expressions and values).

mod common;
mod select_common;

use proptest::prelude::*;
use select_common::*;

use tally::select::cpu::CHUNK;
use tally::select::reference;
use tally::{Backend, Error, Predicate, SelectElement, SelectOptions};

const SIZES: [usize; 13] = [0, 1, 31, 63, 64, 65, 1023, 1024, 1025, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5];

/// Every predicate (a rotating few on the large sizes) and alternating inputs, every size.
fn every_predicate_and_size<T: SelectElement>() {
    let cpu = Backend::cpu();
    for (k, &n) in SIZES.iter().enumerate() {
        let xs: Vec<T> = data(n, 7 + k as u64);
        for (j, p) in PREDICATES.iter().enumerate() {
            if n < CHUNK || j % 4 == k % 4 {
                check_all(&cpu, &xs, p, "cpu");
            }
        }
        check_all(&cpu, &alternating::<T>(n, 1), "x == 1", "cpu alternating");
        check_all(&cpu, &alternating::<T>(n, 5000), "x == 1", "cpu runs");
    }
}
common::test_every_type!(every_predicate_and_size: u8_select: u8, i8_select: i8, u16_select: u16, i16_select: i16,
                         u32_select: u32, i32_select: i32, u64_select: u64, i64_select: i64, f32_select: f32,
                         f64_select: f64, f16_select: half::f16, bf16_select: half::bf16);

#[test]
fn custom_predicates_and_errors() {
    let cpu = Backend::cpu();
    let xs: Vec<f32> = data(100_000, 3);
    let custom = Predicate::custom_cpp::<f32, _>("x * x < 100.0f", |x| x * x < 100.0).unwrap();
    let want: Vec<f32> = xs.iter().copied().filter(|x| x * x < 100.0).collect();
    assert!(same_bits(&cpu.select_vec(&xs, &custom, SelectOptions::default()).unwrap(), &want));
    assert_eq!(reference::select(&xs, &custom).len(), want.len());
    let ints: Vec<i32> = data(10, 1);
    assert!(matches!(cpu.select_vec(&ints, &custom, SelectOptions::default()), Err(Error::InvalidArgument(_))));
    let r = cpu.select_flagged_vec(&xs, &[1u8, 0, 1]);
    assert!(matches!(r, Err(Error::InvalidArgument(m)) if m.contains("3 flags for 100000 elements")));
    assert_eq!(cpu.nonzero_vec(&[0i32, 3, 0, -1]).unwrap(), vec![1, 3]);
    assert_eq!(cpu.nonzero_vec(&[0.0f64, f64::NAN, -0.0]).unwrap(), vec![1]);
}

/// The CPU asks a predicate once per element, so even a closure that changes its mind gives a
/// consistent answer: its yeses, in order, and nothing else.
#[test]
fn a_closure_is_asked_once_per_element() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let calls = std::sync::Arc::new(AtomicU64::new(0));
    let c = calls.clone();
    let fickle =
        Predicate::custom_cpp::<u32, _>("true", move |_| c.fetch_add(1, Ordering::Relaxed).is_multiple_of(3)).unwrap();
    let n = 300_007u32;
    let xs: Vec<u32> = (0..n).collect();
    let kept = Backend::cpu().select_vec(&xs, &fickle, SelectOptions::default()).unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), n as u64);
    // Answers 0, 3, 6, ... of n were yes, whichever elements they fell on.
    assert_eq!(kept.len(), n.div_ceil(3) as usize);
    assert!(kept.windows(2).all(|w| w[0] < w[1]), "kept in the input's order");
    calls.store(0, Ordering::Relaxed);
    let (parted, k) = Backend::cpu().partition_vec(&xs, &fickle).unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), n as u64);
    assert_eq!(k, n.div_ceil(3) as u64);
    let mut all = parted.clone();
    all.sort_unstable();
    assert_eq!(all, xs, "a partition is a permutation");
    assert!(
        parted[..k as usize].windows(2).all(|w| w[0] < w[1]) && parted[k as usize..].windows(2).all(|w| w[0] < w[1])
    );
}

/// Random expressions (as text) over x.
fn expression() -> impl Strategy<Value = String> {
    let number = prop_oneof![
        (-300i64..300).prop_map(|v| v.to_string()),
        (-3000i64..3000).prop_map(|v| format!("{}", v as f64 / 8.0)),
        Just("inf".to_string()),
        Just("-inf".to_string()),
        Just("nan".to_string()),
        Just("1e30".to_string()),
        Just("0x7f".to_string()),
        Just("-9223372036854775808".to_string()),
        Just("18446744073709551615".to_string()),
    ];
    let op = prop_oneof![Just("<"), Just("<="), Just(">"), Just(">="), Just("=="), Just("!=")];
    let leaf = prop_oneof![
        (op.clone(), number.clone()).prop_map(|(o, v)| format!("x {o} {v}")),
        (number, op).prop_map(|(v, o)| format!("{v} {o} x")),
        Just("isnan(x)".to_string()),
        Just("isfinite(x)".to_string()),
        Just("x".to_string()),
        Just("true".to_string()),
    ];
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|a| format!("!({a})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} && {b}")),
            (inner.clone(), inner).prop_map(|(a, b)| format!("({a}) || ({b})")),
        ]
    })
}

fn values_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        (-400i64..400).prop_map(|v| v as f64),
        (-4000i64..4000).prop_map(|v| v as f64 / 8.0),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-0.0),
        Just(0.1),
        Just(1e30),
        any::<f64>(),
    ]
}

fn agree<T: tally::SelectElement>(text: &str, xs: &[T]) -> Result<(), TestCaseError> {
    let p = Predicate::parse(text).unwrap();
    let bound = p.bind::<T>().unwrap();
    let want: Vec<u64> = (0..xs.len() as u64).filter(|&i| reference::passes(&p, xs[i as usize])).collect();
    for (i, &x) in xs.iter().enumerate() {
        prop_assert_eq!(bound.test(x), reference::passes(&p, x), "{} on {:?} ({})", text, x, i);
    }
    // The block evaluator, through the CPU backend.
    prop_assert_eq!(Backend::cpu().select_indices_vec(xs, &p).unwrap(), want, "{}", text);
    // The canonical text means the same.
    let again = Predicate::parse(&p.canonical()).unwrap();
    for &x in xs {
        prop_assert_eq!(again.test(x).unwrap(), bound.test(x), "{} vs {}", text, p.canonical());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn evaluators_agree_with_the_reference(text in expression(), vs in prop::collection::vec(values_f64(), 1..300), ints in prop::collection::vec(any::<i64>(), 1..300)) {
        let f32s: Vec<f32> = vs.iter().map(|&v| v as f32).collect();
        agree(&text, &f32s)?;
        agree(&text, &vs)?;
        let small: Vec<i64> = ints.iter().map(|&v| v % 400).chain(ints.iter().copied()).collect();
        agree(&text, &small)?;
        let u8s: Vec<u8> = ints.iter().map(|&v| v as u8).collect();
        agree(&text, &u8s)?;
        let u64s: Vec<u64> = ints.iter().map(|&v| v as u64).chain([u64::MAX, 0, 127, 128]).collect();
        agree(&text, &u64s)?;
        let i16s: Vec<i16> = ints.iter().map(|&v| v as i16 % 500).collect();
        agree(&text, &i16s)?;
    }
}
