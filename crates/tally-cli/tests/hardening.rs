//! No hang, no panic, no silent wrong answer: each class of bad or extreme input from the
//! hardening issue, run through the binary. Every case is small (or refused before anything is
//! allocated), so the file runs in seconds.

mod common;
use common::{stderr, stdout, tally, tally_within, tmp_in};
use std::path::{Path, PathBuf};

fn tmp(name: &str) -> PathBuf {
    tmp_in("harden", name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn npy_f64(name: &str, v: &[f64]) -> PathBuf {
    let p = tmp(name);
    npyz::to_file_1d(&p, v.iter().copied()).unwrap();
    p
}

fn npy_i64(name: &str, v: &[i64]) -> PathBuf {
    let p = tmp(name);
    npyz::to_file_1d(&p, v.iter().copied()).unwrap();
    p
}

/// A .npy file with this header dictionary and `data` bytes after it (format version 1.0).
fn npy_raw(name: &str, dict: &str, data: &[u8]) -> PathBuf {
    let p = tmp(name);
    std::fs::write(&p, common::npy_bytes(dict, data)).unwrap();
    p
}

/// Exit code 2, one line on stderr containing every needle, nothing on stdout, within `secs`.
fn refused_within(args: &[&str], secs: u64, needles: &[&str]) {
    let (code, out, err, killed) = tally_within(args, b"", secs);
    assert!(!killed, "{args:?} ran past {secs} s");
    assert_eq!(code, Some(2), "{args:?}: {err}");
    // One line, the argument parser's usage errors included.
    assert!(err.lines().count() == 1 && err.starts_with("tally: "), "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: expected '{n}' in: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.is_empty(), "{args:?}: {out}");
}

fn refused(args: &[&str], needles: &[&str]) {
    refused_within(args, 20, needles)
}

fn json_of(args: &[&str]) -> serde_json::Value {
    let o = tally(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stdout(&o)))
}

// ---- hangs and crashes ------------------------------------------------------------------------

#[test]
fn plots_of_huge_ranges_finish_within_seconds() {
    for ext in ["svg", "png"] {
        huge_range_plots(ext);
    }
}

fn huge_range_plots(ext: &str) {
    let huge = npy_f64("huge.npy", &[1e308, 1.5e308, 1.7e308]);
    let plot = tmp(&format!("huge.{ext}"));
    // Too wide for the default 256 bins: a clear error, at once.
    refused(&["hist", s(&huge), "--plot", s(&plot), "--backend", "cpu"], &["default range", "--range"]);
    let small = npy_f64("small.npy", &[0.0, 1e305, 5e305, 9e305]);
    for args in [
        vec!["hist", s(&small), "--range", "0,1e306", "--bins", "4"],
        vec!["hist", s(&huge), "--range", "0,1.7976931348623157e308", "--bins", "1"],
        vec!["hist2d", "--demo", "--size", "1000", "--range-x", "0,1e308", "--bins-x", "1"],
        vec!["hist2d", "--demo", "--size", "1000", "--range-x", "-1e300,1e300", "--range-y", "0,1e-300"],
    ] {
        let _ = std::fs::remove_file(&plot);
        let mut a = args.clone();
        a.extend(["--plot", s(&plot), "--backend", "cpu"]);
        let (code, _, err, killed) = tally_within(&a, b"", 30);
        assert!(!killed, "{a:?} hangs");
        assert_eq!(code, Some(0), "{a:?}: {err}");
        let size = if a[0] == "hist2d" { (900, 760) } else { (900, 500) };
        common::assert_plot(&plot, size);
    }
    refused(
        &["hist2d", "--demo", "--size", "10", "--range-x", "0,1e308", "--plot", s(&plot), "--backend", "cpu"],
        &["too wide"],
    );
    // Weights near f64::MAX: infinite sums, clamped in the picture.
    let x = npy_f64("wx.npy", &[0.5, 0.5, 1.5]);
    let w = npy_f64("ww.npy", &[1e308, 1.7e308, -1.7e308]);
    let a =
        ["hist", s(&x), "--weights", s(&w), "--range", "0,2", "--bins", "2", "--plot", s(&plot), "--backend", "cpu"];
    let _ = std::fs::remove_file(&plot);
    let (code, out, err, killed) = tally_within(&a, b"", 30);
    assert!(!killed && code == Some(0), "{err}");
    assert!(out.contains("inf"), "{out}");
    common::assert_plot(&plot, (900, 500));
}

#[test]
fn npy_headers_that_do_not_fit_the_file_are_refused() {
    let d8 = [0u8; 16];
    let cases = [
        ("fortran_big.npy", "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 9223372036854775808), }", &d8[..]),
        ("c_big.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", &d8[..]),
        ("wrap.npy", "{'descr': '<u1', 'fortran_order': False, 'shape': (18446744073709551615, 2), }", &d8[..]),
        ("toolong.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999999,), }", &d8[..]),
        ("short.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }", &d8[..]),
        ("long.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", &d8[..]),
        ("zero.npy", "{'descr': '<f8', 'fortran_order': True, 'shape': (0, 9223372036854775808, 4), }", &d8[..0]),
    ];
    for (name, dict, data) in cases {
        let p = npy_raw(name, dict, data);
        refused(&["hist", s(&p), "--backend", "cpu"], &["not a readable .npy file"]);
    }
    let p = npy_raw("short2.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }", &d8);
    refused(&["hist", s(&p), "--backend", "cpu"], &["truncated", "(5)", "40 bytes", "16"]);
    let p = npy_raw("pairs.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808, 2), }", &d8);
    refused(&["hist2d", s(&p), "--backend", "cpu"], &["not a readable .npy file"]);
    let p = npy_raw("obj.npy", "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", &d8);
    refused(&["hist", s(&p), "--backend", "cpu"], &["object array", "numeric dtype"]);
    // Cut inside the header.
    let p = tmp("cut.npy");
    std::fs::write(&p, b"\x93NUMPY\x01\x00\x76\x00{'descr'").unwrap();
    refused(&["hist", s(&p), "--backend", "cpu"], &["truncated"]);
    // A well-formed Fortran-order file still reads.
    let p = npy_raw(
        "ok.npy",
        "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 2), }",
        &[1, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0],
    );
    let v = json_of(&["hist", s(&p), "--json", "--backend", "cpu"]);
    assert_eq!(v["samples"], 4);
}

#[test]
fn oversized_requests_are_refused_before_allocating() {
    let max = "18446744073709551615";
    refused_within(&["hist", "--demo", "--size", max, "--backend", "cpu"], 10, &["memory"]);
    refused_within(&["bench", "hist", "--size", max, "--backend", "cpu"], 10, &["memory"]);
    refused_within(&["bench", "weighted", "--size", max, "--backend", "cpu"], 10, &["memory"]);
    refused_within(&["hist2d", "--demo", "--size", "9223372036854775808", "--backend", "cpu"], 10, &["memory"]);
    refused_within(&["hist", "--demo", "--bins", "4294967295", "--size", "1", "--backend", "cpu"], 10, &["2^31"]);
    refused_within(&["hist", "--demo", "--bins", "2147483648", "--size", "1", "--backend", "cpu"], 10, &["2^31"]);
    refused_within(&["hist", "--demo", "--bins", "2147483647", "--size", "1", "--backend", "cpu"], 10, &["memory"]);
}

/// Peak memory of a child, from wait4.
#[allow(clippy::zombie_processes)] // reaped by wait4 below
fn peak_rss_mib(args: &[&str]) -> (i32, i64) {
    let child = std::process::Command::new(common::tally_bin())
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: `rusage` is a C struct of integers and `timeval`s, for which all-zero bytes
    // are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child, with valid pointers.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    (libc::WEXITSTATUS(status), usage.ru_maxrss / 1024)
}

#[test]
fn large_json_is_streamed() {
    // 2^22 bins: the histogram is 32 MiB of counters; a document built in memory took about
    // 100 bytes a bin more.
    let (code, mib) = peak_rss_mib(&[
        "hist",
        "--demo",
        "--distribution",
        "uniform",
        "--size",
        "1",
        "--bins",
        "4194304",
        "--json",
        "--backend",
        "cpu",
    ]);
    assert_eq!(code, 0);
    assert!(mib < 250, "peak RSS {mib} MiB");
}

// ---- wrong answers ----------------------------------------------------------------------------

#[test]
fn wide_ranges_are_refused_not_misbinned() {
    let p = npy_f64("wide.npy", &[1e307, 5e307, 1e308, 1.5e308]);
    refused(&["hist", s(&p), "--bins", "4", "--backend", "cpu"], &["default range", "--range", "1e307", "1.5e308"]);
    refused(&["hist", s(&p), "--range", "0,1e308", "--bins", "4", "--backend", "cpu"], &["too wide"]);
    let v = json_of(&["hist", s(&p), "--range", "0,1.6e308", "--bins", "1", "--json", "--backend", "cpu"]);
    assert_eq!(v["counts"], serde_json::json!([4]));
}

#[test]
fn integer_default_ranges_hold_every_sample() {
    let big = (1i64 << 60) + 1;
    let p = npy_i64("bigint.npy", &[0, big, big - 1]);
    let v = json_of(&["hist", s(&p), "--bins", "4", "--json", "--backend", "cpu"]);
    assert_eq!((v["above"].as_u64(), v["below"].as_u64()), (Some(0), Some(0)), "{v}");
    assert_eq!(v["counts"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).sum::<u64>(), 3);
    let p = npy_i64("constbig.npy", &[big, big, big]);
    let v = json_of(&["hist", s(&p), "--bins", "4", "--json", "--backend", "cpu"]);
    assert_eq!(v["above"], 0, "{v}");
    assert_eq!(v["counts"][0], 3, "{v}");
    // The printed edges are the integer rule's: exact integers around the data.
    let edges = v["edges"].as_array().unwrap();
    assert!(edges[0].as_i64().unwrap() <= big && edges[4].as_i64().unwrap() > big, "{v}");
}

#[test]
fn hist2d_bins_large_integers_exactly() {
    // 2^53 + 1 is no f64: converted, it would join 2^53 in bin 0.
    let x = npy_i64("x2d.npy", &[1 << 53, (1 << 53) + 1, (1 << 53) + 1]);
    let y = npy_i64("y2d.npy", &[0, 0, 1]);
    let rx = "9007199254740992,9007199254740994";
    let v = json_of(&[
        "hist2d",
        s(&x),
        s(&y),
        "--bins-x",
        "2",
        "--range-x",
        rx,
        "--bins-y",
        "2",
        "--json",
        "--backend",
        "cpu",
    ]);
    assert_eq!(v["counts"], serde_json::json!([[1, 0], [1, 1]]), "{v}");
    let o = v["outliers"].clone();
    assert_eq!(o["x_above"], 0, "{v}");
}

fn png16(name: &str, values: &[u16]) -> PathBuf {
    let p = tmp(name);
    let img = image::ImageBuffer::<image::Luma<u16>, _>::from_raw(values.len() as u32, 1, values.to_vec()).unwrap();
    img.save(&p).unwrap();
    p
}

#[test]
fn sixteen_bit_pngs_keep_their_bits() {
    let p = png16("deep.png", &[0, 256, 65535]);
    let o = tally(&["hist", s(&p), "--json", "--bins", "2", "--backend", "cpu"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("16-bit"), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["dtype"], "u16");
    assert_eq!(v["counts"], serde_json::json!([2, 1]), "{v}");
    // The brightness is binned by the f64 rule, and its edges are printed as that rule's.
    assert_eq!(v["edges"][2], 65536.0, "{v}");
}

#[test]
fn weights_of_wide_dynamic_range_are_flagged() {
    let x = npy_f64("dx.npy", &[0.5, 0.5]);
    let w = npy_f64("dw.npy", &[1e10, 1e-10]);
    let o = tally(&["hist", s(&x), "--weights", s(&w), "--range", "0,1", "--bins", "1", "--backend", "cpu"]);
    assert!(stdout(&o).contains("# warning:") && stdout(&o).contains("smallest nonzero weight"), "{}", stdout(&o));
    let v =
        json_of(&["hist", s(&x), "--weights", s(&w), "--range", "0,1", "--bins", "1", "--json", "--backend", "cpu"]);
    assert!(v["warning"].as_str().unwrap().contains("1e-10"), "{v}");
    let w = npy_f64("dw2.npy", &[1.0, 2.0]);
    let v =
        json_of(&["hist", s(&x), "--weights", s(&w), "--range", "0,1", "--bins", "1", "--json", "--backend", "cpu"]);
    assert!(v.get("warning").is_none(), "{v}");
}

// ---- errors a user can act on -----------------------------------------------------------------

#[test]
fn raw_weights_take_a_dtype() {
    let x = tmp("rx.i32");
    std::fs::write(&x, [1i32, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let w = tmp("rw.f32");
    std::fs::write(&w, [0.5f32, 1.5, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let base = ["hist", s(&x), "--dtype", "i32", "--range", "0,4", "--bins", "4", "--json", "--backend", "cpu"];
    let mut a = base.to_vec();
    a.extend(["--weights", s(&w), "--weights-dtype", "f32"]);
    let v = json_of(&a);
    assert_eq!(v["sums"], serde_json::json!([0.0, 0.5, 1.5, 2.0]), "{v}");
    // Without --weights-dtype the samples' type is used: 12 bytes of i32 weights.
    let wi = tmp("rw.i32");
    std::fs::write(&wi, [1i32, 1, 5].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let mut a = base.to_vec();
    a.extend(["--weights", s(&wi)]);
    assert_eq!(json_of(&a)["sums"], serde_json::json!([0.0, 1.0, 1.0, 5.0]));
    // Samples from .npy, raw weights without a type: the message names the weights file and flag.
    let xn = npy_f64("rxn.npy", &[1.0, 2.0, 3.0]);
    refused(&["hist", s(&xn), "--weights", s(&w), "--backend", "cpu"], &["rw.f32", "--weights-dtype"]);
}

#[test]
fn default_range_failures_say_so_in_short_numbers() {
    let p = npy_f64("fmax.npy", &[0.0, f64::MAX]);
    refused(&["hist", s(&p), "--backend", "cpu"], &["default range", "--range", "1.7976931348623157e308"]);
    let p = npy_f64("span.npy", &[-1e308, 1e308]);
    refused(&["hist", s(&p), "--backend", "cpu"], &["default range", "-1e308"]);
    let o = tally(&["hist", s(&p), "--backend", "cpu"]);
    let longest_digits = stderr(&o).split(|c: char| !c.is_ascii_digit()).map(str::len).max().unwrap_or(0);
    assert!(longest_digits <= 17, "{}", stderr(&o));
}

#[test]
fn bad_edges_and_conflicting_bins() {
    refused(&["hist", "--demo", "--edges=-inf,0,1", "--backend", "cpu"], &["edge 0 "]);
    refused(&["hist", "--demo", "--edges", "0,1,2", "--range", "0,2", "--backend", "cpu"], &["--range", "--edges"]);
    refused(
        &["hist2d", "--demo", "--edges-x", "0,1", "--range-x", "0,1", "--backend", "cpu"],
        &["--range-x", "--edges-x"],
    );
}

#[test]
fn standard_input_is_read() {
    let (code, out, err, _) =
        tally_within(&["hist", "-", "--column", "0", "--json", "--backend", "cpu"], b"1\n2\n3\n", 20);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("\"samples\":3"), "{out}");
    let (code, out, err, _) =
        tally_within(&["hist", "-", "--dtype", "u8", "--json", "--backend", "cpu"], &[1, 2, 3, 4, 5], 20);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("\"samples\":5"), "{out}");
    let npy = std::fs::read(npy_f64("stdin.npy", &[1.0, 2.0])).unwrap();
    let (code, out, err, _) = tally_within(&["hist", "-", "--json", "--backend", "cpu"], &npy, 20);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("\"samples\":2"), "{out}");
    let (code, _, err, _) = tally_within(&["hist", "-", "--backend", "cpu"], b"\x01\x02", 20);
    assert_eq!(code, Some(2));
    assert!(err.contains("--dtype"), "{err}");
}

#[test]
fn other_image_formats_are_named() {
    for (ext, name) in [("ppm", "PPM"), ("bmp", "BMP"), ("gif", "GIF"), ("tiff", "TIFF"), ("webp", "WebP")] {
        let p = tmp(&format!("img.{ext}"));
        std::fs::write(&p, b"P6\n1 1\n255\n\x00\x00\x00").unwrap();
        refused(&["hist", s(&p), "--dtype", "u8", "--backend", "cpu"], &[name, "not supported"]);
    }
    // Content sniffed under another name: not counted as raw bytes.
    let p = tmp("gif.bin");
    std::fs::write(&p, b"GIF89a\x01\x00\x01\x00\x00\x00\x00;").unwrap();
    refused(&["hist", s(&p), "--dtype", "u8", "--backend", "cpu"], &["GIF"]);
}

fn rgb_png(name: &str) -> PathBuf {
    let p = tmp(name);
    let raw: Vec<u8> = [[255u8, 0, 0], [0, 255, 0], [0, 0, 255]].iter().flatten().copied().collect();
    image::RgbImage::from_raw(3, 1, raw).unwrap().save(&p).unwrap();
    p
}

#[test]
fn channels_run_together_and_weights_per_pixel() {
    let p = rgb_png("rgb.png");
    let a = json_of(&["hist", s(&p), "--channels", "rgb", "--json", "--backend", "cpu"]);
    let b = json_of(&["hist", s(&p), "--channels", "r,g,b", "--json", "--backend", "cpu"]);
    assert_eq!(a["counts"], b["counts"]);
    assert_eq!(a["channels"], serde_json::json!(["r", "g", "b"]));
    refused(&["hist", s(&p), "--channels", "rgx", "--backend", "cpu"], &["r,g,b"]);
    // One weight per pixel.
    let w = npy_f64("pw.npy", &[1.0, 2.0, 4.0]);
    let v =
        json_of(&["hist", s(&p), "--channels", "r", "--weights", s(&w), "--bins", "2", "--json", "--backend", "cpu"]);
    assert_eq!(v["sums"], serde_json::json!([6.0, 1.0]), "{v}");
    let w = npy_f64("pw2.npy", &[1.0, 2.0]);
    refused(&["hist", s(&p), "--channels", "r", "--weights", s(&w), "--backend", "cpu"], &["3 pixels", "per pixel"]);
}

#[test]
fn plot_files_must_be_svg_or_png() {
    for ext in ["pdf", "jpg", "svgz", ""] {
        let p = format!("p.{ext}");
        refused(&["hist", "--demo", "--size", "10", "--plot", &p, "--backend", "cpu"], &[".svg", ".png"]);
        refused(&["hist2d", "--demo", "--size", "10", "--plot", &p, "--backend", "cpu"], &[".svg", ".png"]);
    }
    // A refused plot is refused before anything is counted: no table either.
    let o = tally(&["hist", "--demo", "--size", "10", "--plot", "p", "--backend", "cpu"]);
    assert!(stdout(&o).is_empty() && stderr(&o).lines().count() == 1, "{}", stderr(&o));
}

#[test]
fn a_closed_pipe_ends_quietly() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let mut child = Command::new(common::tally_bin())
        .args(["hist", "--demo", "--size", "1000", "--bins", "200000", "--backend", "cpu"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 64];
    child.stdout.as_mut().unwrap().read_exact(&mut first).unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.is_empty(), "{err}");
    assert_ne!(o.status.code(), Some(2));
}

#[test]
fn runs_that_would_do_nothing_are_refused() {
    refused(&["bench", "hist", "--reps", "0", "--backend", "cpu"], &["--reps"]);
    refused(&["bench", "hist", "--bins", "300", "--dtypes", "u8", "--backend", "cpu"], &["nothing to run"]);
    refused(&["bench", "weighted", "--reps", "0", "--backend", "cpu"], &["--reps"]);
    refused(&["info", "--bandwidth-mib", "0", "--backend", "cpu"], &["--bandwidth-mib"]);
}

/// `bench stream --source file` holds the array and its file at once: the memory check counts
/// both (`--reps 0` would be refused next, so nothing is allocated either way).
#[test]
fn streaming_from_a_file_counts_two_copies_of_memory() {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib: f64 = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    // Three fifths of this machine's memory: one copy fits, two do not.
    let gib = format!("{:.3}", 0.6 * kib / (1u64 << 20) as f64);
    let args = ["bench", "stream", "--size-gib", &gib, "--reps", "0", "--backend", "cpu"];
    refused(&[&args[..], &["--source", "file"]].concat(), &["--source file", "memory"]);
    refused(&[&args[..], &["--source", "host"]].concat(), &["--reps"]);
}

#[test]
fn strategy_help_lists_every_strategy() {
    let o = tally(&["hist", "--help"]);
    let help = stdout(&o);
    for name in tally::Strategy::GPU.iter().map(|s| s.name()).chain(["thread-private"]) {
        assert!(help.lines().any(|l| l.trim_start().starts_with(name)), "{name} missing:\n{help}");
    }
}

#[test]
fn infinite_sums_read_the_same_in_table_and_json() {
    let x = npy_f64("ix.npy", &[0.5, 0.5]);
    let w = npy_f64("iw.npy", &[1.7e308, 1.7e308]);
    let base = ["hist", s(&x), "--weights", s(&w), "--range", "0,1", "--bins", "1", "--backend", "cpu"];
    let v = json_of(&[&base[..], &["--json"]].concat());
    assert_eq!(v["sums"], serde_json::json!(["inf"]), "{v}");
    let o = tally(&base);
    let table = stdout(&o);
    assert!(table.lines().last().unwrap().trim_end().ends_with("inf"), "{table}");
    // One table style: aligned columns, as for counts.
    assert!(!table.contains('\t'), "{table}");
    assert!(table.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["bin", "lower", "upper", "value"]));
}

#[test]
fn printed_edges_are_the_rules() {
    let p = npy_f64("ulp.npy", &[0.8999999999999999]);
    let o = tally(&["hist", s(&p), "--range", "0,1", "--bins", "10", "--csv", "--backend", "cpu"]);
    let row9 = stdout(&o).lines().find(|l| l.starts_with("9,")).unwrap().to_string();
    let lower: f64 = row9.split(',').nth(1).unwrap().parse().unwrap();
    assert!(lower <= 0.8999999999999999, "{row9}");
    assert!(row9.ends_with(",1"), "the sample is counted in bin 9: {row9}");
    // Constant data: distinct edges.
    let p = npy_f64("const.npy", &[5.0, 5.0, 5.0]);
    let v = json_of(&["hist", s(&p), "--bins", "3", "--json", "--backend", "cpu"]);
    let e: Vec<f64> = v["edges"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert!(e.windows(2).all(|w| w[0] < w[1]), "{e:?}");
    assert_eq!(v["counts"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).sum::<u64>(), 3);
}
