//! `tally scan` as a user runs it, on the CPU: values written to .npy and raw files, numpy's
//! cumsum types, the JSON summary, and one-line errors with exit code 2.

mod common;
use common::{cpu_json as json, fails_with, stderr, stdout, tally};

fn csv(name: &str, values: &[&str]) -> String {
    common::csv_in("cli-scan", name, values)
}

fn out(name: &str) -> String {
    common::tmp_in("cli-scan", name).display().to_string()
}

fn read_npy<T: npyz::Deserialize>(path: &str) -> Vec<T> {
    let bytes = std::fs::read(path).unwrap();
    npyz::NpyFile::new(&bytes[..]).unwrap().into_vec().unwrap()
}

#[test]
fn integer_sums_follow_numpy_cumsum() {
    let f = common::tmp_in("cli-scan", "ints.i32");
    let v: Vec<i32> = vec![i32::MAX, i32::MAX, -5, 7];
    std::fs::write(&f, v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    let f = f.display().to_string();
    let o = out("ints.npy");
    let j = json(&["scan", &f, "--dtype", "i32", "--out", &o]);
    let want: Vec<i64> = vec![i32::MAX as i64, 2 * i32::MAX as i64, 2 * i32::MAX as i64 - 5, 2 * i32::MAX as i64 + 2];
    assert_eq!(read_npy::<i64>(&o), want);
    assert_eq!((j["count"].as_u64(), j["last"].as_i64()), (Some(4), Some(want[3])));
    assert_eq!(j["dtype"], "i64");
    // Exclusive: 0 first; `last` is still the final inclusive value. Raw output by extension.
    let raw = out("ints.bin");
    let j = json(&["scan", &f, "--dtype", "i32", "--exclusive", "--out", &raw]);
    let bytes = std::fs::read(&raw).unwrap();
    let got: Vec<i64> = bytes.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(got, [0, want[0], want[1], want[2]]);
    assert_eq!(j["last"].as_i64(), Some(want[3]));
    // Unsigned into u64.
    let u = common::tmp_in("cli-scan", "bytes.u8");
    std::fs::write(&u, [200u8, 100, 250]).unwrap();
    let o = out("bytes.npy");
    let j = json(&["scan", &u.display().to_string(), "--dtype", "u8", "--out", &o]);
    assert_eq!(read_npy::<u64>(&o), [200, 300, 550]);
    assert_eq!((j["dtype"].as_str(), j["last"].as_u64()), (Some("u64"), Some(550)));
}

#[test]
fn min_max_keep_the_type_and_non_finite_last_is_a_string() {
    let f = csv("floats.csv", &["2", "-1", "4", "3"]);
    let o = out("max.npy");
    let j = json(&["scan", &f, "--dtype", "f64", "--op", "max", "--out", &o]);
    assert_eq!(read_npy::<f64>(&o), [2.0, 2.0, 4.0, 4.0]);
    assert_eq!(j["last"].as_f64(), Some(4.0));
    let o = out("min.npy");
    let j = json(&["scan", &f, "--dtype", "f64", "--op", "min", "--exclusive", "--out", &o]);
    assert_eq!(read_npy::<f64>(&o), [f64::INFINITY, 2.0, -1.0, -1.0]);
    assert_eq!(j["last"].as_f64(), Some(-1.0));
    let f = csv("inf.csv", &["1", "inf", "2"]);
    let j = json(&["scan", &f, "--dtype", "f64", "--out", &out("inf.npy")]);
    assert_eq!(j["last"], "inf");
    let f = csv("nan.csv", &["1", "nan", "2"]);
    let j = json(&["scan", &f, "--dtype", "f64", "--out", &out("nan.npy")]);
    assert_eq!(j["last"], "nan");
    let f = csv("sums.csv", &["0.5", "0.25", "1"]);
    let o = out("sums.npy");
    let j = json(&["scan", &f, "--dtype", "f32", "--out", &o]);
    assert_eq!(read_npy::<f32>(&o), [0.5, 0.75, 1.75]);
    assert_eq!((j["dtype"].as_str(), j["last"].as_f64()), (Some("f32"), Some(1.75)));
}

#[test]
fn bad_requests_are_one_line_errors() {
    let f = csv("bad.csv", &["1", "2"]);
    // An empty input is an empty scan (as numpy's), not an error.
    let empty = csv("empty.csv", &[]);
    let o = out("empty.npy");
    let j = json(&["scan", &empty, "--dtype", "f32", "--out", &o]);
    assert_eq!((j["count"].as_u64(), j["last"].is_null()), (Some(0), true));
    assert!(read_npy::<f32>(&o).is_empty());
    for (args, says) in [
        (vec!["scan", &f, "--op", "median", "--out", &o], "unknown op"),
        (vec!["scan", &f, "--out", "-"], "--out needs a file name"),
        (vec!["scan", &f, "--out", "/nonexistent-dir/x.npy"], "cannot write"),
    ] {
        fails_with(&[&args[..], &["--backend", "cpu"]].concat(), says);
    }
}

#[test]
fn bench_scan_runs_on_the_cpu_and_verifies() {
    let out = tally(&["bench", "scan", "--backend", "cpu", "--log2-sizes", "12", "--reps", "1", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let j: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 9);
    assert!(rows.iter().all(|r| r["verified"] == true && r["n"] == 4096));
    assert!(j["copy_bandwidth_gbs"].as_f64().unwrap() > 0.0);
    // --cases keeps the cases whose name contains one of its words.
    let args = ["bench", "scan", "--backend", "cpu", "--log2-sizes", "12", "--reps", "1", "--json", "--cases"];
    let out = tally(&[&args[..], &["by key"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let j: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let names: Vec<&str> = j["rows"].as_array().unwrap().iter().map(|r| r["case"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 5, "{names:?}");
    assert!(names.iter().all(|n| n.contains("by key")), "{names:?}");
    fails_with(&[&args[..], &["no such case"]].concat(), "no scan case matches");
}
