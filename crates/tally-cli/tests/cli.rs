//! The command-line tool, run as a user runs it: output shapes, files, and one-line errors with
//! exit code 2. Forced onto the CPU backend so that it runs the same everywhere.

use std::path::PathBuf;

mod common;
use common::{fails_with, stderr, stdout, tally};
use std::process::Output;

fn tmp(name: &str) -> PathBuf {
    common::tmp_in("cli", name)
}

/// `tally hist --demo` on the CPU backend, with `extra` arguments.
fn demo(extra: &[&str]) -> Output {
    tally(&[&["hist", "--demo", "--backend", "cpu"], extra].concat())
}

#[test]
fn demo_json_has_the_promised_fields_and_counts_every_sample() {
    let o = demo(&["--size", "10007", "--bins", "16", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let counts = v["counts"].as_array().unwrap();
    assert_eq!(counts.len(), 16);
    let sum: u64 = counts.iter().map(|c| c.as_u64().unwrap()).sum();
    assert_eq!(sum + v["below"].as_u64().unwrap() + v["above"].as_u64().unwrap() + v["nan"].as_u64().unwrap(), 10007);
    assert_eq!(v["backend"], "cpu");
    assert_eq!(v["strategy"], "thread-private");
    assert_eq!(v["edges"].as_array().unwrap().len(), 17);
}

#[test]
fn every_distribution_and_dtype_runs() {
    for dist in ["uniform", "hot90", "hot100", "zipf"] {
        for dtype in ["u8", "u16", "i32", "u32", "i64", "f32", "f64"] {
            let o = demo(&["--size", "1000", "--bins", "8", "--distribution", dist, "--dtype", dtype, "--json"]);
            assert!(o.status.success(), "{dist} {dtype}: {}", stderr(&o));
            let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
            let sum: u64 = v["counts"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).sum();
            assert_eq!(sum, 1000, "{dist} {dtype}");
        }
    }
}

#[test]
fn raw_file_table_and_csv() {
    let path = tmp("ints.bin");
    let data: Vec<i32> = vec![-5, 0, 1, 2, 2, 3, 9, 10, 11];
    std::fs::write(&path, data.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    let p = path.to_str().unwrap();
    let o = tally(&["hist", p, "--dtype", "i32", "--bins", "5", "--range", "0,10", "--backend", "cpu", "--csv"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let rows: Vec<&str> = out.lines().collect();
    assert_eq!(rows[0], "bin,lower,upper,value");
    // bins of width 2 over [0, 10): 0,1 | 2,2,3 | - | - | 9
    let counts: Vec<u64> = rows[1..].iter().map(|r| r.rsplit(',').next().unwrap().parse().unwrap()).collect();
    assert_eq!(counts, vec![2, 3, 0, 0, 1]);
    let o = tally(&["hist", p, "--dtype", "i32", "--bins", "5", "--range", "0,10", "--backend", "cpu", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["below"], 1);
    assert_eq!(v["above"], 2);
    // The default table: a header, a column line and one row per bin.
    let o = tally(&["hist", p, "--dtype", "i32", "--edges", "-10,0,5,100", "--backend", "cpu"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.lines().any(|l| l.trim_start().starts_with("bin")), "{out}");
    assert_eq!(out.lines().filter(|l| !l.starts_with('#')).count(), 1 + 3, "{out}");
}

#[test]
fn plot_writes_an_svg() {
    let path = tmp("plot.svg");
    let _ = std::fs::remove_file(&path);
    let o = demo(&["--size", "5000", "--bins", "32", "--plot", path.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.starts_with("<svg") || svg.contains("<svg"), "not an SVG");
    assert!(svg.matches("<rect").count() >= 32, "expected a bar per bin");
}

#[test]
fn plot_writes_a_png() {
    let path = tmp("plot.png");
    let _ = std::fs::remove_file(&path);
    let o = demo(&["--size", "5000", "--bins", "32", "--plot", path.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    common::assert_plot(&path, (900, 500));
    // Upper case is the same format.
    let upper = tmp("PLOT.PNG");
    let o = demo(&["--size", "100", "--plot", upper.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    common::assert_plot(&upper, (900, 500));
}

#[test]
fn image_channels() {
    let path = tmp("pic.png");
    let img = image::RgbImage::from_fn(4, 2, |x, y| image::Rgb([(x * 60) as u8, (y * 200) as u8, 7]));
    img.save(&path).unwrap();
    let o = tally(&["hist", path.to_str().unwrap(), "--channels", "r,g,b", "--backend", "cpu", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let counts = v["counts"].as_array().unwrap();
    assert_eq!(counts.len(), 3);
    let b: Vec<u64> = counts[2].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect();
    assert_eq!(b[7], 8, "every pixel's blue is 7");
    assert_eq!(v["channels"], serde_json::json!(["r", "g", "b"]));
}

/// An image's brightness, by the library's rule: the mean of the colour channels (not rounded:
/// 1, 1, 2 is 4/3), Rec. 709 luma, given weights, weighted counts, and the errors of the flag.
#[test]
fn image_brightness() {
    let path = tmp("bright.png");
    let pixels = [[1u8, 1, 2], [2, 2, 1], [30, 60, 90], [0, 0, 40], [255, 255, 255], [100, 0, 0]];
    let raw: Vec<u8> = pixels.iter().flatten().copied().collect();
    image::RgbImage::from_raw(3, 2, raw).unwrap().save(&path).unwrap();
    let p = path.to_str().unwrap();
    let counts = |extra: &[&str]| -> (Vec<u64>, serde_json::Value) {
        let mut args = vec!["hist", p, "--backend", "cpu", "--json"];
        args.extend_from_slice(extra);
        let o = tally(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let c = v["counts"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect();
        (c, v)
    };
    // Means 4/3, 5/3, 60, 40/3, 255, 100/3: 5/3 is past 1.5, where the integer part of the
    // mean (the brightness before the library computed it) would be 1.
    let (c, v) = counts(&["--edges", "0,1.5,4,50,256"]);
    assert_eq!(c, vec![1, 1, 2, 2]);
    assert_eq!((&v["samples"], &v["channels"]), (&serde_json::json!(6), &serde_json::json!(["brightness"])));
    // Rec. 709: 0.2126 + 0.7152 + 0.1444 = 1.0722; 1.9278; 55.3; 2.888; 255; 21.26.
    let (c, _) = counts(&["--edges", "0,2,4,50,256", "--brightness", "rec709"]);
    assert_eq!(c, vec![2, 1, 1, 2]);
    // Weights: the green channel alone (1, 2, 60, 0, 255, 0).
    let (c, _) = counts(&["--edges", "0,2,4,50,256", "--brightness", "0,1,0"]);
    assert_eq!(c, vec![3, 1, 0, 2]);
    // A negative weight, given as the flag's value: red negated (-1, -2, -30, 0, -255, -100).
    let (c, v) = counts(&["--brightness", "-1,0,0", "--edges", "-256,-100,0"]);
    assert_eq!((c, &v["above"]), (vec![1, 4], &serde_json::json!(1)));
    // Weighted counts of the same brightness: every pixel weighs 0.5.
    let w = tmp("bright-w.npy");
    std::fs::write(&w, npy_f32(&[0.5; 6])).unwrap();
    let o =
        tally(&["hist", p, "--backend", "cpu", "--json", "--edges", "0,2,4,50,256", "--weights", w.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["sums"], serde_json::json!([1.0, 0.0, 1.0, 1.0]), "{v}");
    fails_with(&["hist", p, "--brightness", "1,x", "--backend", "cpu"], "'x' is not a weight");
    fails_with(&["hist", p, "--brightness", "1,0", "--backend", "cpu"], "2 brightness weights for 3 channels");
    fails_with(&["hist", p, "--brightness", "mean", "--channels", "r", "--backend", "cpu"], "cannot be used with");
    fails_with(&["hist", "--demo", "--brightness", "mean", "--backend", "cpu"], "applies only to images");
    let npy = tmp("bright-x.npy");
    std::fs::write(&npy, npy_f32(&[1.0, 2.0])).unwrap();
    fails_with(
        &["hist", npy.to_str().unwrap(), "--brightness", "rec709", "--backend", "cpu"],
        "applies only to images",
    );
    fails_with(&["hist", p, "--dtype", "i32", "--backend", "cpu"], "does not apply to an image's brightness");
    // The edges printed are the f64 rule's, which bins the brightness: 100 bins over [0, 256)
    // begin at 2.56, not at the integer 3.
    let (_, v) = counts(&["--bins", "100", "--range", "0,256"]);
    assert_eq!(v["edges"][1], serde_json::json!(2.56), "{}", v["edges"]);
    // A gray image is its own brightness, whatever the rule.
    let gray = tmp("bright-gray.png");
    image::GrayImage::from_raw(2, 1, vec![7, 250]).unwrap().save(&gray).unwrap();
    let o = tally(&["hist", gray.to_str().unwrap(), "--brightness", "rec709", "--backend", "cpu", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!((&v["counts"][7], &v["counts"][250]), (&serde_json::json!(1), &serde_json::json!(1)));
}

/// A 1-D .npy file of f32 values.
fn npy_f32(values: &[f32]) -> Vec<u8> {
    let header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({},), }}", values.len());
    let mut h = header.into_bytes();
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(b' ');
    }
    h.push(b'\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(&h);
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let odd = tmp("odd.bin");
    std::fs::write(&odd, [1u8, 2, 3, 4, 5]).unwrap();
    let odd = odd.to_str().unwrap().to_string();
    let csv = tmp("bad.csv");
    std::fs::write(&csv, "x\n1\n2\nabc\n").unwrap();
    let csv = csv.to_str().unwrap().to_string();
    fails_with(&["hist", "--demo", "--bins", "0", "--backend", "cpu"], "bin count");
    fails_with(&["hist", "--demo", "--range", "5,1", "--backend", "cpu"], "LO < HI");
    fails_with(&["hist", "--demo", "--edges", "0,2,1", "--backend", "cpu"], "strictly increasing");
    fails_with(&["hist", "/no/such/file.bin", "--dtype", "i32", "--backend", "cpu"], "/no/such/file.bin");
    fails_with(&["hist", &odd, "--dtype", "i32", "--backend", "cpu"], "multiple");
    fails_with(&["hist", &odd, "--backend", "cpu"], "--dtype");
    fails_with(&["hist", &csv, "--backend", "cpu"], "line 4");
    fails_with(&["hist", "--demo", "--strategy", "fastest", "--backend", "cpu"], "unknown strategy 'fastest'");
    fails_with(&["hist", "--demo", "--dtype", "i128", "--backend", "cpu"], "unknown dtype 'i128'");
    fails_with(&["hist", "--demo", "--backend", "tpu"], "unknown backend 'tpu'");
    fails_with(&["hist", "--demo", "--edges", "0,1", "--range", "0,1"], "cannot be used with");
    fails_with(&["hist", "--no-such-option"], "unexpected argument '--no-such-option'");
}

#[test]
fn auto_backend_without_a_gpu_says_so_once() {
    if tally::Backend::cuda().is_ok() {
        return; // a GPU host: nothing to fall back from
    }
    let o = tally(&["hist", "--demo", "--size", "100", "--json"]);
    assert!(o.status.success());
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("CPU backend"), "{err}");
    fails_with(&["hist", "--demo", "--size", "100", "--backend", "cuda"], "CUDA backend unavailable");
}

#[test]
fn bench_runs_on_the_cpu_and_prints_json() {
    let o = tally(&[
        "bench",
        "hist",
        "--backend",
        "cpu",
        "--size",
        "100000",
        "--bins",
        "256,1024",
        "--dtypes",
        "i32,u8",
        "--distributions",
        "uniform,hot100",
        "--reps",
        "2",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = v["rows"].as_array().unwrap();
    // i32: 2 bin counts x 2 distributions; u8: 256 only x 2.
    assert_eq!(rows.len(), 6);
    assert!(rows.iter().all(|r| r["verified"] == true && r["gbs"].as_f64().unwrap() > 0.0));
    assert!(v["read_bandwidth_gbs"].as_f64().unwrap() > 0.0);
}

#[test]
fn info_reports_a_backend() {
    let o = tally(&["info", "--backend", "cpu", "--bandwidth-mib", "16", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["backend"], "cpu");
    assert!(v["read_bandwidth_gbs"].as_f64().unwrap() > 0.0);
}
