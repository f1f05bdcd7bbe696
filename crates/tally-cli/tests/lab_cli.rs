//! `tally lab` as a user runs it, on the CPU: the CPU version of the global lab, its JSON shape
//! and chart, the "no GPU" behaviour of every lab command, and one-line errors with exit code 2.

use std::path::PathBuf;

mod common;
use common::{stderr, stdout, tally};

fn tmp(name: &str) -> PathBuf {
    common::tmp_in("lab-cli", name)
}

const SMALL: &[&str] = &[
    "lab",
    "global",
    "--backend",
    "cpu",
    "--ops",
    "4096,16384",
    "--addresses",
    "1,32,1024",
    "--types",
    "u32,f32,u64",
    "--reps",
    "1",
];

#[test]
fn lab_global_cpu_json_has_the_promised_shape() {
    let mut args = SMALL.to_vec();
    args.push("--json");
    let o = tally(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("stdout is JSON only");
    assert_eq!(v["lab"], "global");
    assert_eq!(v["backend"], "cpu");
    assert!(v["device"].as_str().unwrap().contains("CPU"));
    assert_eq!(v["config"]["ops"], serde_json::json!([4096, 16384]));
    assert_eq!(v["config"]["modes"], serde_json::json!(["plain"]));
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2 * 3 * 3);
    for r in rows {
        for key in ["type", "mode", "ops", "addresses", "ms", "ops_per_second", "vs_uncontended", "verified", "error"] {
            assert!(r.get(key).is_some(), "row lacks {key}: {r}");
        }
        assert_eq!(r["verified"], true, "{r}");
        assert!(r["error"].is_null());
        assert!(r["ms"].as_f64().unwrap() > 0.0 && r["ops_per_second"].as_f64().unwrap() > 0.0);
        // The uncontended row (most addresses) is the yardstick of its type and size.
        if r["addresses"] == 1024 {
            assert_eq!(r["vs_uncontended"].as_f64().unwrap(), 1.0);
        }
    }
    assert!(rows.iter().any(|r| r["type"] == "f32") && rows.iter().any(|r| r["type"] == "u64"));
    assert!(!v["notes"].as_array().unwrap().is_empty());
}

#[test]
fn lab_global_cpu_table_json_file_and_plot() {
    let (json, svg) = (tmp("global.json"), tmp("global.svg"));
    let _ = std::fs::remove_file(&svg);
    let mut args = SMALL.to_vec();
    args.extend(["--json", json.to_str().unwrap(), "--plot", svg.to_str().unwrap()]);
    let o = tally(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    // With --json FILE the table is still printed: a header, a column line and one row per case.
    let out = stdout(&o);
    assert!(out.starts_with("# tally lab global"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("type") && l.contains("addresses") && l.contains("Gops/s")), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("u32") || l.starts_with("f32") || l.starts_with("u64")).count(),
        18,
        "{out}"
    );
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["rows"].as_array().unwrap().len(), 18);
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.contains("<svg") && s.len() > 2000, "not an SVG chart");
    for label in ["distinct addresses", "atomic operations per second", "u32 plain", "f32 plain", "2^12 operations"] {
        assert!(s.contains(label), "the chart lacks '{label}'");
    }
    // One panel per operation count.
    assert!(s.contains("2^14 operations"));
    let png = tmp("global.png");
    let mut args = SMALL.to_vec();
    args.extend(["--plot", png.to_str().unwrap()]);
    let o = tally(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    common::assert_plot(&png, (560 * 2, 520));
    // Other extensions are refused before anything runs.
    let mut args = SMALL.to_vec();
    args.extend(["--plot", "chart.pdf"]);
    let o = tally(&args);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(".svg") && stderr(&o).contains(".png"), "{}", stderr(&o));
}

#[test]
fn lab_without_a_gpu_says_so_and_shows_no_table() {
    if tally::Backend::cuda().is_ok() {
        return; // a GPU host: the lab runs there (tests/cuda_lab.rs)
    }
    for lab in ["global", "shared", "histogram"] {
        let svg = tmp(&format!("nogpu-{lab}.svg"));
        let o = tally(&["lab", lab, "--plot", svg.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{lab}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{lab}: printed a table without a GPU: {}", stdout(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{lab}: {err}");
        assert!(err.contains("no GPU"), "{lab}: {err}");
        assert!(!svg.exists(), "{lab}: drew a chart without figures");
        // --json too: no made-up figures, nothing on stdout.
        let o = tally(&["lab", lab, "--json"]);
        assert_eq!(o.status.code(), Some(0));
        assert!(stdout(&o).is_empty());
        // Asking for CUDA explicitly is an error, as everywhere in tally.
        let o = tally(&["lab", lab, "--backend", "cuda"]);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains("CUDA backend unavailable"), "{}", stderr(&o));
    }
}

#[test]
fn gpu_only_labs_on_the_cpu_backend_say_so() {
    // Asked for the CPU explicitly, a GPU-only lab refuses (exit 2) instead of succeeding idle.
    for lab in ["shared", "histogram"] {
        let o = tally(&["lab", lab, "--backend", "cpu"]);
        assert_eq!(o.status.code(), Some(2), "{lab}: {}", stderr(&o));
        assert!(stdout(&o).is_empty());
        assert!(stderr(&o).contains("GPU only"), "{}", stderr(&o));
    }
}

#[test]
fn lab_bad_arguments_are_one_line_and_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["lab", "global", "--backend", "cpu", "--ops", "1000"], "power of two"),
        (&["lab", "global", "--backend", "cpu", "--addresses", "3"], "power of two"),
        (&["lab", "global", "--backend", "cpu", "--ops", "4096", "--modes", "warp-aggregated"], "one mode"),
        (&["lab", "global", "--backend", "cpu", "--ops", "1024", "--addresses", "4096"], "nothing to run"),
        (&["lab", "global", "--backend", "cpu", "--reps", "0"], "at least 1"),
        (&["lab", "shared", "--backend", "cpu", "--reps", "0"], "at least 1"),
    ];
    for (args, needle) in cases {
        let o = tally(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
    for args in [
        &["lab", "global", "--types", "i8"][..],
        &["lab", "shared", "--ops", "add-i8"],
        &["lab", "histogram", "--strategies", "fastest"],
    ] {
        let o = tally(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        // The argument parser's refusal, on one line as every error.
        let err = stderr(&o);
        assert!(err.starts_with("tally: invalid value") && err.lines().count() == 1, "{err}");
    }
}
