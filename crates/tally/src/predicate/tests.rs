use super::*;

fn err(text: &str) -> String {
    Predicate::parse(text).unwrap_err().to_string()
}

#[test]
fn precedence_and_canonical_text() {
    let cases = [
        ("x>0&&x<1", "(x > 0) && (x < 1)"),
        ("x > 0 || x < -1 && !isnan(x)", "(x > 0) || ((x < -1) && !isnan(x))"),
        ("(x > 0 || x < -1) && x != 3", "((x > 0) || (x < -1)) && (x != 3)"),
        ("!!(x == 1.5)", "!!(x == 1.5)"),
        ("1 < x", "x > 1"),
        ("-2.5e3 >= x", "x <= -2500.0"),
        ("x", "x != 0"),
        ("x == 0x1F || x == inf || x != -nan", "(x == 31) || (x == inf) || (x != nan)"),
        ("true && isfinite( x )", "true && isfinite(x)"),
    ];
    for (text, canonical) in cases {
        let p = Predicate::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(p.canonical(), canonical, "{text}");
        // The canonical text is a fixed point.
        assert_eq!(Predicate::parse(canonical).unwrap().canonical(), canonical);
    }
}

#[test]
fn errors_name_the_byte() {
    let cases = [
        ("x > > 1", 5, "expected a number or x"),
        ("x > 1 &&", 9, "expected a number or x"),
        ("x = 1", 3, "'=' is not an operator"),
        ("x & 1", 3, "expected '&&'"),
        ("y > 1", 1, "unknown name 'y'"),
        ("x > 1)", 6, "unbalanced ')'"),
        ("(x > 1", 7, "expected ')'"),
        ("x > 1 x", 7, "expected '&&', '||' or the end"),
        ("3", 1, "a number alone is not a condition"),
        ("x < x", 3, "compare x with a number"),
        ("1 < 2", 1, "a comparison needs x on one side"),
        ("x > 1e", 7, "exponent"),
        ("x > 3y", 6, "after a number"),
        ("isnan(y)", 7, "the argument must be x"),
        ("x > 0x", 5, "needs digits"),
        ("x > -x", 6, "a sign before x"),
        ("x > 1 # 2", 7, "unexpected character '#'"),
        ("", 1, "expected a number or x"),
        ("x > 999999999999999999999999999999999999999999", 5, "too large"),
    ];
    for (text, byte, what) in cases {
        let e = err(text);
        let want = format!("at byte {byte} of {text:?}: ");
        assert!(e.contains(&want) && e.contains(what), "{text}: {e}");
    }
    let deep = format!("{}x{}", "(".repeat(100), ")".repeat(100));
    assert!(err(&deep).contains("nests too deeply"));
}

#[test]
fn nan_compares_false_except_not_equal() {
    for text in ["x < 1", "x <= 1", "x > 1", "x >= 1", "x == 1", "x == nan", "x < nan", "isfinite(x)"] {
        let p = Predicate::parse(text).unwrap();
        assert!(!p.test(f32::NAN).unwrap() && !p.test(f64::NAN).unwrap(), "{text}");
    }
    for text in ["x != 1", "x != nan", "isnan(x)", "!(x < 1)", "x"] {
        let p = Predicate::parse(text).unwrap();
        assert!(p.test(f32::NAN).unwrap() && p.test(f64::NAN).unwrap(), "{text}");
    }
    // A NaN constant makes the comparison constant, for every element.
    assert_eq!(Predicate::parse("x < nan").unwrap().bind::<f32>().unwrap().constant(), Some(false));
    assert_eq!(Predicate::parse("x != nan").unwrap().bind::<i32>().unwrap().constant(), Some(true));
}

#[test]
fn integers_compare_with_the_constants_value() {
    let t = |text: &str, x: i64| Predicate::parse(text).unwrap().test(x).unwrap();
    assert!(t("x > 2.5", 3) && !t("x > 2.5", 2));
    assert!(t("x < 2.5", 2) && !t("x < 2.5", 3));
    assert!(t("x >= -2.5", -2) && !t("x >= -2.5", -3));
    assert!(!t("x == 2.5", 2) && t("x != 2.5", 2));
    assert!(t("x == 2.0", 2) && t("x <= 2.0", 2));
    assert!(t("x < 1e300", i64::MAX) && !t("x > 1e300", i64::MAX) && t("x > -inf", i64::MIN));
    assert!(t("x == 9223372036854775807", i64::MAX) && !t("x == 9223372036854775806", i64::MAX));
    // Out of the type's range: constant, never wrapped.
    let bound = |text: &str| Predicate::parse(text).unwrap().bind::<u8>().unwrap().constant();
    assert_eq!(bound("x < 300"), Some(true));
    assert_eq!(bound("x > 255"), Some(false));
    assert_eq!(bound("x > -1"), Some(true));
    assert_eq!(bound("x == 256"), Some(false));
    assert_eq!(bound("isnan(x) || x >= 0"), Some(true));
    assert_eq!(bound("x > 3"), None);
    let u = |text: &str, x: u64| Predicate::parse(text).unwrap().test(x).unwrap();
    assert!(u("x == 18446744073709551615", u64::MAX) && u("x > 1.8e19", u64::MAX) && !u("x < 0", 0));
}

#[test]
fn floats_compare_in_their_own_precision() {
    // numpy: float32 array > 0.1 compares with float32(0.1).
    let p = Predicate::parse("x == 0.1").unwrap();
    assert!(p.test(0.1f32).unwrap() && p.test(0.1f64).unwrap());
    assert!(!p.test(0.1f32 as f64).unwrap());
    let big = Predicate::parse("x == 16777217").unwrap();
    assert!(big.test(16777216.0f32).unwrap() && !big.test(16777216.0f64).unwrap());
    assert!(Predicate::parse("x < inf").unwrap().test(f32::MAX).unwrap());
    assert!(!Predicate::parse("x > 1e39").unwrap().test(f32::INFINITY).unwrap());
    assert!(Predicate::parse("x >= 1e39").unwrap().test(f32::INFINITY).unwrap());
}

#[test]
fn equal_predicates_share_their_cpp() {
    let cpp = |text: &str| Predicate::parse(text).unwrap().bind::<f32>().unwrap().cpp();
    assert_eq!(cpp("x>0&&x<1"), cpp("(x > 0.0) && (x < 1e0)"));
    assert_eq!(cpp("x > 0.1"), "(x > __int_as_float(0x3dcccccd))");
    assert_eq!(cpp("!isnan(x) && x != 3"), "(!isnan(x) && (x != __int_as_float(0x40400000)))");
    let int = |text: &str| Predicate::parse(text).unwrap().bind::<i64>().unwrap().cpp();
    assert_eq!(int("x > 2.5"), "(x > 2ll)");
    assert_eq!(int("x >= -9223372036854775807"), "(x >= (-9223372036854775807ll))");
    assert_eq!(int("x != -9223372036854775808"), "(x != (-9223372036854775807ll - 1))");
    assert_eq!(int("isnan(x) || x > 1.5 || isfinite(x) && x < 0"), "((x > 1ll) || (x < 0ll))");
    let u = Predicate::parse("x <= 18446744073709551614").unwrap().bind::<u64>().unwrap().cpp();
    assert_eq!(u, "(x <= 18446744073709551614ull)");
    let d = Predicate::parse("x < -inf").unwrap().bind::<f64>().unwrap().cpp();
    assert_eq!(d, "(x < __longlong_as_double(0xfff0000000000000ll))");
}

#[test]
fn custom_predicates_keep_their_type() {
    let p = Predicate::custom_cpp::<f32, _>("x * x < 4.0f", |x| x * x < 4.0).unwrap();
    assert!(p.is_custom() && p.test(1.5f32).unwrap() && !p.test(2.5f32).unwrap());
    assert_eq!(p.bind::<f32>().unwrap().cpp(), "x * x < 4.0f");
    let e = p.bind::<f64>().err().expect("another type").to_string();
    assert!(e.contains("made for f32 elements, not f64"), "{e}");
    assert!(Predicate::custom_cpp::<f32, _>(" ", |_| true).is_err());
    assert!(Predicate::custom_cpp::<f32, _>("x\n> 1", |_| true).is_err());
}

/// A chain of operators is a tree as deep as it is long: 200,000 of them overflowed the stack
/// (an abort, not an error) before the limit.
#[test]
fn long_chains_are_refused_past_the_limit() {
    let chain = |n: usize, op: &str| format!("x > 1 {op} ").repeat(n) + "x < 2";
    for op in ["&&", "||"] {
        let p = Predicate::parse(&chain(parse::MAX_OPERATORS, op)).unwrap();
        assert!(p.test(1.5f64).unwrap());
        assert_eq!(p.cpp_for(crate::ElementType::F32).unwrap().matches(op).count(), parse::MAX_OPERATORS);
        let e = err(&chain(200_000, op));
        let byte = 9 * parse::MAX_OPERATORS + 7;
        assert!(e.contains(&format!("at byte {byte} of ")) && e.contains("more than 1000 '&&' and '||'"), "{e}");
    }
}
