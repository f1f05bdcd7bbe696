//! `tally hist --weights` and `tally hist2d`, run as a user runs them (CPU backend): output shapes,
//! the input layouts, and one-line errors with exit code 2.

use std::path::PathBuf;
use std::process::Output;

mod common;
use common::{fails_with, tally};

fn tmp(name: &str) -> PathBuf {
    common::tmp_in("cli-weighted", name)
}

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&String::from_utf8_lossy(&o.stdout)).unwrap()
}

/// A little-endian f32 .npy file of `shape`.
fn write_npy_f32(path: &PathBuf, data: &[f32], shape: &[usize]) {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
    let data: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(path, common::npy_bytes(&dict, &data)).unwrap();
}

#[test]
fn weighted_hist_sums_weights_and_says_how() {
    let samples = tmp("s.csv");
    let weights = tmp("w.csv");
    std::fs::write(&samples, "x\n0.5\n1.5\n1.7\n3.2\nnan\n-1\n").unwrap();
    std::fs::write(&weights, "w\n1\n2\n3.5\n-4\n10\n0.25\n").unwrap();
    let s = samples.to_str().unwrap();
    let w = weights.to_str().unwrap();
    // The same histogram each time, in the form `extra` asks for.
    let weighted = |extra: &[&str]| {
        let base = ["hist", s, "--weights", w, "--bins", "4", "--range", "0,4", "--backend", "cpu"];
        tally(&[&base[..], extra].concat())
    };
    let v = json(&weighted(&["--json"]));
    let sums: Vec<f64> = v["sums"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert_eq!(sums, vec![1.0, 5.5, 0.0, -4.0]);
    assert_eq!((v["nan"].as_f64(), v["nan_count"].as_u64()), (Some(10.0), Some(1)));
    assert_eq!((v["below"].as_f64(), v["below_count"].as_u64()), (Some(0.25), Some(1)));
    assert_eq!(v["weighting"]["accumulation"], "fixed-point");
    assert_eq!(v["weighting"]["deterministic"], true);
    assert!(v["weighting"]["error_bound"].as_f64().unwrap() > 0.0);
    let v = json(&weighted(&["--json", "--float-atomics"]));
    assert_eq!(v["weighting"]["accumulation"], "float-atomics");
    assert_eq!(v["weighting"]["deterministic"], false);
    // Table and CSV run; a plot is written.
    let plot = tmp("w.svg");
    let o = weighted(&["--plot", plot.to_str().unwrap()]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("fixed point 2^"));
    assert!(std::fs::read_to_string(&plot).unwrap().contains("<svg"));
    let png = tmp("w.png");
    assert!(weighted(&["--plot", png.to_str().unwrap()]).status.success());
    common::assert_plot(&png, (900, 500));
    let o = weighted(&["--csv"]);
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("bin,lower,upper,value\n0,0,1,1\n"));
}

#[test]
fn weighted_hist_errors_are_one_line() {
    let samples = tmp("s2.csv");
    std::fs::write(&samples, "1\n2\n3\n").unwrap();
    let short = tmp("short.csv");
    std::fs::write(&short, "1\n2\n").unwrap();
    let nan = tmp("nan.csv");
    std::fs::write(&nan, "1\nnan\n2\n").unwrap();
    let s = samples.to_str().unwrap();
    fails_with(&["hist", s, "--weights", short.to_str().unwrap(), "--backend", "cpu"], "3 samples but 2 weights");
    fails_with(&["hist", s, "--weights", nan.to_str().unwrap(), "--backend", "cpu"], "weight 1 is NaN");
}

#[test]
fn hist2d_from_csv_columns_npy_pairs_and_two_files_agree() {
    let csv = tmp("xy.csv");
    let rows: Vec<(f32, f32)> = (0..500).map(|i| ((i % 37) as f32 / 37.0, (i % 23) as f32 / 23.0)).collect();
    let mut text = String::from("id,x,y\n");
    for (i, (x, y)) in rows.iter().enumerate() {
        text += &format!("{i},{x},{y}\n");
    }
    std::fs::write(&csv, text).unwrap();
    let pairs: Vec<f32> = rows.iter().flat_map(|&(x, y)| [x, y]).collect();
    let npy2 = tmp("xy.npy");
    write_npy_f32(&npy2, &pairs, &[rows.len(), 2]);
    let (nx, ny) = (tmp("x.npy"), tmp("y.npy"));
    write_npy_f32(&nx, &rows.iter().map(|p| p.0).collect::<Vec<_>>(), &[rows.len()]);
    write_npy_f32(&ny, &rows.iter().map(|p| p.1).collect::<Vec<_>>(), &[rows.len()]);
    let common =
        ["--bins-x", "8", "--bins-y", "4", "--range-x", "0,1", "--range-y", "0,1", "--backend", "cpu", "--json"];
    let run = |files: &[&str], extra: &[&str]| {
        let mut args = vec!["hist2d"];
        args.extend(files);
        args.extend(extra);
        args.extend(common);
        json(&tally(&args))
    };
    let a = run(&[csv.to_str().unwrap()], &["--columns", "x,y"]);
    let b = run(&[npy2.to_str().unwrap()], &[]);
    let c = run(&[nx.to_str().unwrap(), ny.to_str().unwrap()], &[]);
    let d = run(&[csv.to_str().unwrap()], &["--columns", "1,2"]);
    assert_eq!(a["counts"], b["counts"]);
    assert_eq!(a["counts"], c["counts"]);
    assert_eq!(a["counts"], d["counts"]);
    let m = a["counts"].as_array().unwrap();
    assert_eq!((m.len(), m[0].as_array().unwrap().len()), (8, 4));
    let total: u64 = m.iter().flat_map(|r| r.as_array().unwrap()).map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(total, 500);
    assert_eq!(a["columns"], serde_json::json!(["x", "y"]));
}

#[test]
fn hist2d_demo_heat_map_csv_and_weights() {
    // `tally hist2d --demo` on the CPU backend, with `extra` arguments.
    let demo = |extra: &[&str]| tally(&[&["hist2d", "--demo", "--backend", "cpu"], extra].concat());
    let plot = tmp("heat.svg");
    let o = demo(&["--size", "20000", "--bins-x", "300", "--bins-y", "300", "--plot", plot.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.contains("<svg") && svg.contains("count per cell"));
    let png = tmp("heat.png");
    let o = demo(&["--size", "20000", "--bins-x", "300", "--bins-y", "300", "--plot", png.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    common::assert_plot(&png, (900, 760));
    let o = demo(&["--distribution", "uniform", "--size", "1000", "--bins-x", "2", "--bins-y", "3", "--csv"]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.starts_with("ix,iy,x_lower,x_upper,y_lower,y_upper,count\n"), "{out}");
    assert_eq!(out.lines().count(), 1 + 6);
    let w = tmp("dw.csv");
    std::fs::write(&w, "2\n".repeat(1000)).unwrap();
    let uniform = ["--distribution", "uniform", "--size", "1000", "--bins-x", "2", "--bins-y", "2"];
    let v = json(&demo(&[&uniform[..], &["--json", "--weights", w.to_str().unwrap()]].concat()));
    let total: f64 =
        v["sums"].as_array().unwrap().iter().flat_map(|r| r.as_array().unwrap()).map(|x| x.as_f64().unwrap()).sum();
    assert_eq!(total, 2000.0);
}

#[test]
fn hist2d_errors_are_one_line() {
    let (nx, ny) = (tmp("ex.npy"), tmp("ey.npy"));
    write_npy_f32(&nx, &[1.0, 2.0, 3.0], &[3]);
    write_npy_f32(&ny, &[1.0, 2.0], &[2]);
    fails_with(&["hist2d", nx.to_str().unwrap(), ny.to_str().unwrap(), "--backend", "cpu"], "must pair up");
    let bad = tmp("bad.npy");
    write_npy_f32(&bad, &[1.0; 6], &[2, 3]);
    fails_with(&["hist2d", bad.to_str().unwrap(), "--backend", "cpu"], "(n, 2)");
    let csv = tmp("one.csv");
    std::fs::write(&csv, "a,b\n1,2\n").unwrap();
    fails_with(&["hist2d", csv.to_str().unwrap(), "--columns", "a,c", "--backend", "cpu"], "no column 'c'");
    fails_with(&["hist2d", "--demo", "--bins-x", "0", "--backend", "cpu"], "x axis");
}

#[test]
fn exact_sums_keep_small_weights_and_the_warning_points_to_them() {
    let (x, w) = (tmp("ex.npy"), tmp("ew.npy"));
    npyz::to_file_1d(&x, [0.5f64, 0.5, 0.5, 1.5, 1.5]).unwrap();
    npyz::to_file_1d(&w, [1e300f64, 1.0, -1e300, f64::INFINITY, 2.0]).unwrap();
    let base = ["hist", x.to_str().unwrap(), "--weights", w.to_str().unwrap(), "--range", "0,2", "--bins", "2"];
    // Fixed point refuses the infinite weight; exact sums take it as IEEE does.
    let o = tally(&[&base[..], &["--backend", "cpu", "--json"]].concat());
    assert_eq!(o.status.code(), Some(2));
    let v = json(&tally(&[&base[..], &["--backend", "cpu", "--json", "--exact"]].concat()));
    assert_eq!(v["sums"], serde_json::json!([1.0, "inf"]), "{v}");
    assert_eq!(v["weighting"]["accumulation"], "exact");
    assert_eq!(v["weighting"]["deterministic"], true);
    assert!(v.get("warning").is_none(), "{v}");
    let o = tally(&[&base[..], &["--backend", "cpu", "--exact"]].concat());
    assert!(String::from_utf8_lossy(&o.stdout).contains("exact sums, rounded once"));
    // With finite weights, fixed point loses the 1.0 and says so, pointing to --exact.
    npyz::to_file_1d(&w, [1e300f64, 1.0, -1e300, 3.0, 2.0]).unwrap();
    let v = json(&tally(&[&base[..], &["--backend", "cpu", "--json"]].concat()));
    assert_eq!(v["sums"][0], 0.0, "{v}");
    assert!(v["warning"].as_str().unwrap().contains("--exact"), "{v}");
    fails_with(&[&base[..], &["--exact", "--float-atomics"]].concat(), "cannot be used with");
}
