//! `tally reduce` as a user runs it, on the CPU: values, JSON fields, exact sums, NaN rules and
//! one-line errors with exit code 2.

mod common;
use common::{json_on_cpu as json, stderr, tally};

fn csv(name: &str, values: &[&str]) -> String {
    let path = common::tmp_in("cli-reduce", name);
    std::fs::write(&path, values.join("\n") + "\n").unwrap();
    path.display().to_string()
}

#[test]
fn exact_sum_of_values_that_cancel() {
    // In f64 order 1e308 + 1 - 1e308 is 0; the exact sum is 1.
    let f = csv("cancel.csv", &["1e308", "1", "-1e308"]);
    let j = json(&["reduce", &f, "--op", "sum", "--exact"]);
    assert_eq!(j["value"], 1.0);
    assert_eq!(j["exact"], true);
    assert_eq!(j["count"], 3);
}

#[test]
fn integer_sums_are_exact_and_minmax_gives_both() {
    let f = common::tmp_in("cli-reduce", "ints.i64");
    let v: Vec<i64> = vec![i64::MAX, i64::MAX, -5];
    std::fs::write(&f, v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    let f = f.display().to_string();
    let j = json(&["reduce", &f, "--dtype", "i64", "--op", "sum"]);
    // 2 * (2^63 - 1) - 5 does not fit an i64: written exactly, as a string.
    assert_eq!(j["value"], ((i64::MAX as i128) * 2 - 5).to_string());
    let j = json(&["reduce", &f, "--dtype", "i64", "--op", "minmax"]);
    assert_eq!((j["min"].as_i64(), j["max"].as_i64()), (Some(-5), Some(i64::MAX)));
}

#[test]
fn nan_propagates_unless_skipped_and_is_counted() {
    let f = csv("nan.csv", &["2", "nan", "-1", "4"]);
    let j = json(&["reduce", &f, "--op", "max"]);
    assert_eq!((j["value"].as_str(), j["nan"].as_u64()), (Some("nan"), Some(1)));
    let j = json(&["reduce", &f, "--op", "max", "--skip-nan"]);
    assert_eq!((j["value"].as_f64(), j["nan"].as_u64()), (Some(4.0), Some(1)));
    let j = json(&["reduce", &f, "--op", "argmin"]);
    assert_eq!(j["index"], 1, "the first NaN's index, as numpy");
    let j = json(&["reduce", &f, "--op", "count", "--where", ">=2"]);
    assert_eq!(j["value"], 2);
}

#[test]
fn bad_requests_are_one_line_errors() {
    let f = csv("bad.csv", &["1", "2"]);
    let empty = csv("empty.csv", &[]);
    for (args, says) in [
        (vec!["reduce", &f, "--op", "median"], "unknown op"),
        (vec!["reduce", &f, "--op", "count"], "needs --where"),
        (vec!["reduce", &f, "--op", "count", "--where", "~3"], "expected a comparison"),
        (vec!["reduce", &f, "--op", "min", "--exact"], "--exact goes with"),
        (vec!["reduce", &empty, "--op", "min"], "empty"),
    ] {
        let mut all = args.clone();
        all.extend(["--backend", "cpu"]);
        let out = tally(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let e = stderr(&out);
        assert!(e.contains(says) && e.trim().lines().count() == 1, "{args:?}: {e}");
    }
}
