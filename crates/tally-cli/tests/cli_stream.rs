//! Files that `tally hist` and `tally reduce` stream (raw files, plain `.npy` files), on the CPU:
//! chunk by chunk, in chunks as small as one element (`TALLY_STREAM_CHUNK`), the output equals
//! that of the same bytes read whole from standard input.

mod common;
use common::{npy_bytes, stderr, stdout, tally_bin, tally_within, tmp_in};
use std::process::Command;

/// The bytes of `values`, little-endian.
fn bytes<T: Copy>(values: &[T]) -> Vec<u8> {
    // SAFETY: the tests pass primitive numbers, which have no padding.
    let raw = unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values)) };
    raw.to_vec()
}

/// A version 1 `.npy` file of `data`, elements of type `descr` (such as `<f4`).
fn npy(descr: &str, data: &[u8], elements: usize) -> Vec<u8> {
    npy_bytes(&format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({elements},), }}"), data)
}

/// What tally prints for `args` with `TALLY_STREAM_CHUNK` at `chunk` bytes, the line of timings
/// taken out (the JSON "seconds", the table's first line).
fn run_chunked(args: &[&str], chunk: Option<usize>) -> String {
    let mut command = Command::new(tally_bin());
    command.args(args).args(["--backend", "cpu"]);
    if let Some(bytes) = chunk {
        command.env("TALLY_STREAM_CHUNK", bytes.to_string());
    }
    let out = command.output().expect("run tally");
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    without_timing(&stdout(&out))
}

/// `text` without what depends on the clock.
fn without_timing(text: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(mut doc) => {
            doc.as_object_mut().map(|m| m.remove("seconds"));
            doc.to_string()
        }
        Err(_) => text.lines().filter(|l| !l.starts_with("# ") || !l.contains(" ms")).collect::<Vec<_>>().join("\n"),
    }
}

/// What tally prints for `args` with `FILE` replaced by `-` and `content` on standard input (the
/// whole-file path: standard input is read whole).
fn run_whole(args: &[&str], content: &[u8]) -> String {
    let args: Vec<&str> = args.iter().map(|&a| if a == "FILE" { "-" } else { a }).collect();
    let (code, out, err, _) = tally_within(&[&args[..], &["--backend", "cpu"]].concat(), content, 60);
    assert_eq!(code, Some(0), "{args:?}: {err}");
    without_timing(&out)
}

/// Checks `args` (FILE standing for the file) over `raw` written as a raw file (given `dtype`)
/// and as a `.npy` of `descr`: streamed in chunks of 1, 3 and 64 elements and whole, the output
/// equals the whole-file path's.
fn check(name: &str, dtype: &str, descr: &str, size: usize, raw: &[u8], args: &[&str]) {
    let elements = raw.len() / size;
    let raw_path = tmp_in("cli-stream", &format!("{name}.{dtype}"));
    let npy_path = tmp_in("cli-stream", &format!("{name}.npy"));
    let npy_bytes = npy(descr, raw, elements);
    std::fs::write(&raw_path, raw).unwrap();
    std::fs::write(&npy_path, &npy_bytes).unwrap();
    let (raw_path, npy_path) = (raw_path.display().to_string(), npy_path.display().to_string());
    for (path, content, typed) in [(&raw_path, raw, true), (&npy_path, &npy_bytes[..], false)] {
        let mut args: Vec<&str> = args.to_vec();
        if typed {
            args.extend(["--dtype", dtype]);
        }
        let whole = run_whole(&args, content);
        let file_args: Vec<&str> = args.iter().map(|&a| if a == "FILE" { path.as_str() } else { a }).collect();
        for chunk in [Some(size), Some(3 * size), Some(64 * size), None] {
            assert_eq!(run_chunked(&file_args, chunk), whole, "{file_args:?} in chunks of {chunk:?} bytes");
        }
    }
}

/// Samples with a hot value, both signs, and `n` of them.
fn skewed(n: usize) -> Vec<i64> {
    (0..n as i64).map(|i| if i % 3 == 0 { 5 } else { (i * 7919) % 1013 - 500 }).collect()
}

#[test]
fn streamed_histograms_equal_the_whole_file() {
    for n in [0, 1, 2, 63, 64, 65, 1000] {
        let s = skewed(n);
        let i32s: Vec<i32> = s.iter().map(|&x| x as i32).collect();
        let f32s: Vec<f32> = s.iter().map(|&x| x as f32 * 0.37).collect();
        let u8s: Vec<u8> = s.iter().map(|&x| x as u8).collect();
        let name = format!("n{n}");
        for args in [&["hist", "FILE", "--json"][..], &["hist", "FILE", "--bins", "7", "--csv"], &["hist", "FILE"]] {
            check(&name, "i32", "<i4", 4, &bytes(&i32s), args);
            check(&name, "f32", "<f4", 4, &bytes(&f32s), args);
            check(&name, "u8", "|u1", 1, &bytes(&u8s), args);
        }
        let range = ["hist", "FILE", "--range", "-100,300", "--bins", "9", "--json"];
        check(&name, "i64", "<i8", 8, &bytes(&s), &range);
        check(&name, "f64", "<f8", 8, &bytes(&s.iter().map(|&x| x as f64).collect::<Vec<_>>()), &range);
        let edges = ["hist", "FILE", "--edges", "-500,-1,0,1,5,6,600", "--json"];
        check(&name, "i32", "<i4", 4, &bytes(&i32s), &edges);
    }
}

#[test]
fn a_default_range_over_infinities_and_nans_holds_the_finite_values() {
    let v = [f64::NAN, 2.5, f64::INFINITY, -1.0, f64::NEG_INFINITY, 7.0, f64::NAN, 2.5];
    check("inf", "f64", "<f8", 8, &bytes(&v), &["hist", "FILE", "--bins", "5", "--json"]);
    let nans = [f32::NAN; 5];
    check("nans", "f32", "<f4", 4, &bytes(&nans), &["hist", "FILE", "--bins", "3", "--json"]);
    let extremes = [i64::MIN, 0, i64::MAX, -3];
    check("extremes", "i64", "<i8", 8, &bytes(&extremes), &["hist", "FILE", "--bins", "4", "--json"]);
}

#[test]
fn streamed_reductions_of_npy_files_equal_the_whole_file() {
    let s = skewed(777);
    let i32s: Vec<i32> = s.iter().map(|&x| x as i32).collect();
    for op in ["sum", "minmax", "argmax", "argmin"] {
        check("reduce", "i32", "<i4", 4, &bytes(&i32s), &["reduce", "FILE", "--op", op, "--json"]);
    }
    let f64s: Vec<f64> = s.iter().map(|&x| x as f64 / 3.0).collect();
    check("reduce", "f64", "<f8", 8, &bytes(&f64s), &["reduce", "FILE", "--op", "sum", "--exact", "--json"]);
}

#[test]
fn devices_without_gpus_or_with_the_cpu_are_one_line_errors() {
    let f = tmp_in("cli-stream", "devices.i32");
    std::fs::write(&f, bytes(&[1i32, 2, 3])).unwrap();
    let f = f.display().to_string();
    let has_gpu = std::path::Path::new("/dev/nvidiactl").exists();
    for cmd in [
        vec!["hist", &f, "--dtype", "i32"],
        vec!["hist2d", "--demo"],
        vec!["reduce", &f, "--dtype", "i32"],
        vec!["scan", &f, "--dtype", "i32", "--out", "/dev/null"],
        vec!["select", &f, "--dtype", "i32", "--where", "x > 1", "--out", "/dev/null"],
    ] {
        common::fails_with(&[&cmd[..], &["--devices", "0,1", "--backend", "cpu"]].concat(), "--devices");
        common::fails_with(&[&cmd[..], &["--devices", "0,x"]].concat(), "--devices");
        if !has_gpu {
            // No driver here: the device set cannot start, and says so on one line.
            common::fails_with(&[&cmd[..], &["--devices", "all"]].concat(), "--devices");
        }
    }
}

#[test]
fn streamed_weighted_histograms_equal_the_whole_file() {
    let s = skewed(1000);
    let xs: Vec<f32> = s.iter().map(|&x| x as f32 * 0.5).collect();
    let ws: Vec<f64> = s.iter().enumerate().map(|(i, &x)| (x as f64).powi(3) * 1e-4 + (i % 7) as f64 * 1e-3).collect();
    let wf = tmp_in("cli-stream", "w.f64");
    std::fs::write(&wf, bytes(&ws)).unwrap();
    let w_npy = tmp_in("cli-stream", "w.npy");
    std::fs::write(&w_npy, npy("<f8", &bytes(&ws), ws.len())).unwrap();
    let (wf, w_npy) = (wf.display().to_string(), w_npy.display().to_string());
    for weights in [["--weights", &wf, "--weights-dtype", "f64"], ["--weights", &w_npy, "--weights-dtype", "f64"]] {
        let args = [&["hist", "FILE", "--bins", "9", "--json"][..], &weights[..]].concat();
        check("weighted", "f32", "<f4", 4, &bytes(&xs), &args);
    }
}

/// The JSON that tally prints for `args` with `env` set, or None (with a line on stderr) where it
/// fails for want of a GPU or of `want` GPUs (a failure under `TALLY_REQUIRE_GPU` asking for them).
fn gpu_json(args: &[&str], env: &[(&str, &str)], want: usize) -> Option<serde_json::Value> {
    let out = Command::new(tally_bin()).args(args).envs(env.iter().copied()).output().expect("run tally");
    if !out.status.success() {
        let err = stderr(&out);
        // A number, as the library's tests read it: "10" asks for more than 2.
        let required: usize = std::env::var("TALLY_REQUIRE_GPU").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
        assert!(required < want, "TALLY_REQUIRE_GPU={required} asks for {want} GPU(s): {args:?}: {err}");
        eprintln!("skipping: {args:?}: {err}");
        return None;
    }
    serde_json::from_str(&stdout(&out)).ok()
}

/// The fields of a histogram's JSON that the backend and the device count must not change.
fn counts_of(doc: &serde_json::Value) -> Vec<serde_json::Value> {
    ["counts", "below", "above", "nan", "edges", "samples", "dtype"].iter().map(|k| doc[*k].clone()).collect()
}

#[test]
fn gpu_streamed_and_device_set_histograms_equal_the_cpu() {
    let s = skewed(300_007);
    let f = tmp_in("cli-stream", "gpu.npy");
    let xs: Vec<f32> = s.iter().map(|&x| x as f32 * 0.25).collect();
    std::fs::write(&f, npy("<f4", &bytes(&xs), xs.len())).unwrap();
    let f = f.display().to_string();
    let cpu = gpu_json(&["hist", &f, "--bins", "33", "--json", "--backend", "cpu"], &[], 0).unwrap();
    for chunk in ["4096", "1000000000"] {
        let args = ["hist", &f, "--bins", "33", "--json", "--backend", "cuda"];
        let Some(gpu) = gpu_json(&args, &[("TALLY_STREAM_CHUNK", chunk)], 1) else { return };
        assert_eq!(counts_of(&gpu), counts_of(&cpu), "streamed on the GPU in chunks of {chunk} bytes");
    }
    let Some(set) = gpu_json(&["hist", &f, "--bins", "33", "--json", "--devices", "all"], &[], 2) else { return };
    assert_eq!(counts_of(&set), counts_of(&cpu), "on every GPU of the host");
}

#[test]
fn streamed_samples_with_f16_weights_equal_the_whole_file() {
    use tally::half::f16;
    let s = skewed(1000);
    let xs: Vec<f32> = s.iter().map(|&x| x as f32 * 0.5).collect();
    let ws: Vec<f16> = s.iter().enumerate().map(|(i, &x)| f16::from_f32(x as f32 * 0.125 - (i % 5) as f32)).collect();
    let wf = tmp_in("cli-stream", "w16.f16");
    std::fs::write(&wf, bytes(&ws)).unwrap();
    let w_npy = tmp_in("cli-stream", "w16.npy");
    std::fs::write(&w_npy, npy("<f2", &bytes(&ws), ws.len())).unwrap();
    let (wf, w_npy) = (wf.display().to_string(), w_npy.display().to_string());
    for weights in [&["--weights", &wf, "--weights-dtype", "f16"][..], &["--weights", &w_npy]] {
        let args = [&["hist", "FILE", "--bins", "9", "--json"][..], weights].concat();
        check("weighted16", "f32", "<f4", 4, &bytes(&xs), &args);
    }
    // float16 samples stream from a .npy file as from a raw one.
    let halves: Vec<f16> = xs.iter().map(|&x| f16::from_f32(x)).collect();
    check("half", "f16", "<f2", 2, &bytes(&halves), &["hist", "FILE", "--bins", "9", "--json"]);
    check("half-reduce", "f16", "<f2", 2, &bytes(&halves), &["reduce", "FILE", "--op", "minmax", "--json"]);
}
