//! `tally rle` and `tally reduce-by-key` as a user runs them, on the CPU: outputs written to .npy
//! and raw files, the JSON summaries, and one-line errors with exit code 2.

mod common;
use common::{cpu_json as json, read_npy, stderr, stdout, tally};

fn path(name: &str) -> String {
    common::tmp_in("cli-runs", name).display().to_string()
}

fn npy<T: npyz::AutoSerialize + Copy>(name: &str, values: &[T]) -> String {
    let p = path(name);
    npyz::to_file_1d(&p, values.iter().copied()).unwrap();
    p
}

#[test]
fn rle_writes_values_and_u64_lengths() {
    let keys = npy("keys.npy", &[3i32, 3, 3, -1, 3, 3, 7]);
    let (v, c) = (path("values.npy"), path("counts.npy"));
    let j = json(&["rle", &keys, "--out-values", &v, "--out-counts", &c]);
    assert_eq!(read_npy::<i32>(&v), [3, -1, 3, 7]);
    assert_eq!(read_npy::<u64>(&c), [3, 1, 2, 1]);
    assert_eq!((j["runs"].as_u64(), j["count"].as_u64(), j["dtype"].as_str()), (Some(4), Some(7), Some("i32")));
    // Raw input and output by extension; NaN keys are runs of one.
    let raw = path("floats.f32");
    let fs = [f32::NAN, f32::NAN, 1.5, 1.5, -0.0, 0.0];
    std::fs::write(&raw, fs.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    let (v, c) = (path("floats.bin"), path("floats-counts.npy"));
    let j = json(&["rle", &raw, "--dtype", "f32", "--out-values", &v, "--out-counts", &c]);
    assert_eq!(read_npy::<u64>(&c), [1, 1, 2, 2]);
    assert_eq!(std::fs::read(&v).unwrap().len(), 4 * 4);
    assert_eq!(j["runs"].as_u64(), Some(4));
    // Unique only.
    let u = path("unique.npy");
    let j = json(&["rle", &keys, "--unique-only", "--out-values", &u]);
    assert_eq!(read_npy::<i32>(&u), [3, -1, 3, 7]);
    assert!(j["out_counts"].is_null());
}

#[test]
fn reduce_by_key_sums_into_64_bits_and_counts() {
    let keys = npy("rbk-keys.npy", &[1u32, 1, 2, 2, 2, 1]);
    let values = npy("rbk-values.npy", &[i32::MAX, i32::MAX, -1, -2, -3, 5]);
    let (k, v) = (path("rbk-k.npy"), path("rbk-v.npy"));
    let j = json(&["reduce-by-key", &keys, &values, "--op", "sum", "--out-keys", &k, "--out-values", &v]);
    assert_eq!(read_npy::<u32>(&k), [1, 2, 1]);
    assert_eq!(read_npy::<i64>(&v), [2 * i32::MAX as i64, -6, 5]);
    assert_eq!((j["runs"].as_u64(), j["dtype"].as_str(), j["key_dtype"].as_str()), (Some(3), Some("i64"), Some("u32")));
    json(&["reduce-by-key", &keys, &values, "--op", "min", "--out-keys", &k, "--out-values", &v]);
    assert_eq!(read_npy::<i32>(&v), [i32::MAX, -3, 5]);
    let j = json(&["reduce-by-key", &keys, &values, "--op", "count", "--out-keys", &k, "--out-values", &v]);
    assert_eq!(read_npy::<u64>(&v), [2, 3, 1]);
    assert_eq!(j["dtype"].as_str(), Some("u64"));
    let floats = npy("rbk-floats.npy", &[0.5f32, 0.25, 1.0, 2.0, 4.0, 8.0]);
    json(&["reduce-by-key", &keys, &floats, "--op", "max", "--out-keys", &k, "--out-values", &v]);
    assert_eq!(read_npy::<f32>(&v), [0.5, 4.0, 8.0]);
}

#[test]
fn errors_are_one_line_with_exit_code_2() {
    let keys = npy("err-keys.npy", &[1u32, 1, 2]);
    let short = npy("err-values.npy", &[1.0f32, 2.0]);
    let big = npy("err-big.npy", &[i64::MAX, 1, 0]);
    let (k, v) = (path("err-k.npy"), path("err-v.npy"));
    for args in [
        vec!["reduce-by-key", keys.as_str(), short.as_str(), "--out-keys", &k, "--out-values", &v],
        vec!["reduce-by-key", keys.as_str(), big.as_str(), "--out-keys", &k, "--out-values", &v],
        vec!["reduce-by-key", keys.as_str(), keys.as_str(), "--op", "mean", "--out-keys", &k, "--out-values", &v],
        vec!["rle", keys.as_str(), "--out-values", &v],
        vec!["rle", keys.as_str(), "--out-values", "-", "--out-counts", &k],
        vec!["rle", "/nonexistent/keys.npy", "--out-values", &v, "--out-counts", &k],
    ] {
        let out = tally(&[&args[..], &["--backend", "cpu"]].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn bench_runs_on_the_cpu_and_verify() {
    // Reduce-by-key has two cases (f32 sums; i32 values into i64), which `--cases` chooses from.
    for (what, cases, want) in [
        ("unique", None, &["unique i32/8"][..]),
        ("rle", None, &["rle i32/8"][..]),
        ("reduce-by-key", None, &["rbk i32/8 f32", "rbk i32/8 i32>i64"][..]),
        ("reduce-by-key", Some("i64"), &["rbk i32/8 i32>i64"][..]),
    ] {
        let mut args = vec!["bench", what, "--backend", "cpu", "--log2-sizes", "14", "--reps", "1", "--json"];
        args.extend(cases.iter().flat_map(|c| ["--cases", *c]));
        let out = tally(&args);
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        let j: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        let rows = j["rows"].as_array().unwrap();
        let names: Vec<&str> = rows.iter().map(|r| r["case"].as_str().unwrap()).collect();
        assert_eq!(names, want, "{what} {cases:?}");
        assert!(rows.iter().all(|r| r["verified"] == true && r["ms"].as_f64().unwrap() > 0.0), "{what}: {j}");
    }
}
