//! Pieces every integration test of the command-line tool shares: running the `tally` binary as
//! a user does, and a scratch directory per test process.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::PathBuf;
use std::process::{Command, Output};

/// The binary cargo built; where the test binary was copied to another machine without it,
/// `$TALLY_BIN` or the bundle's `.gpu/bin/tally`.
pub fn tally_bin() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_tally"));
    if built.exists() {
        return built;
    }
    std::env::var_os("TALLY_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(".gpu/bin/tally"))
}

pub fn tally(args: &[&str]) -> Output {
    Command::new(tally_bin()).args(args).output().expect("run tally")
}

/// A path `name` in a directory of this test process's own, `tag` telling binaries apart.
pub fn tmp_in(tag: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tally-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A CSV file of `values`, one per line, named `name` in the directory of `tag`; its path.
pub fn csv_in(tag: &str, name: &str, values: &[&str]) -> String {
    let path = tmp_in(tag, name);
    std::fs::write(&path, values.join("\n") + "\n").unwrap();
    path.display().to_string()
}

/// The JSON document tally prints for `args` on the CPU backend (`--backend cpu --json` added).
pub fn cpu_json(args: &[&str]) -> serde_json::Value {
    let out = tally(&[args, &["--backend", "cpu", "--json"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// A user error: exit code 2 and one line on stderr that mentions `needle`, no panic (the
/// argument parser's usage errors included).
pub fn fails_with(args: &[&str], needle: &str) {
    let o = tally(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: expected '{needle}' in: {err}");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: not one line: {err}");
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs tally with `stdin` fed in, killed after `secs` seconds: (exit code or None if killed or
/// signalled, stdout, stderr, whether it was killed for time).
pub fn tally_within(args: &[&str], stdin: &[u8], secs: u64) -> (Option<i32>, String, String, bool) {
    use std::io::{Read, Write};
    use std::process::Stdio;
    let mut child = Command::new(tally_bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run tally");
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let mut killed = false;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            killed = true;
            break child.wait().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let _ = feeder.join();
    let o = String::from_utf8_lossy(&reader.join().unwrap()).into_owned();
    let e = String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned();
    (status.code(), o, e, killed)
}

/// A version 1 `.npy` file: the header dictionary `dict` (such as `{'descr': '<f4',
/// 'fortran_order': False, 'shape': (3,), }`), padded to 64 bytes, then `data`.
pub fn npy_bytes(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut header = dict.to_string();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut file = b"\x93NUMPY\x01\x00".to_vec();
    file.extend((header.len() as u16).to_le_bytes());
    file.extend(header.as_bytes());
    file.extend(data);
    file
}

/// The values of a 1-D `.npy` file.
#[allow(dead_code)]
pub fn read_npy<T: npyz::Deserialize>(path: &str) -> Vec<T> {
    let bytes = std::fs::read(path).unwrap();
    npyz::NpyFile::new(&bytes[..]).unwrap().into_vec().unwrap()
}

/// Checks that `path` is a drawn picture: an SVG document, or a PNG of `size` pixels (width,
/// height) that is neither blank nor one colour, with dark pixels (axes and text) and coloured
/// ones (bars, lines or cells).
pub fn assert_plot(path: &std::path::Path, size: (u32, u32)) {
    if path.extension().is_some_and(|e| e == "svg") {
        let svg = std::fs::read_to_string(path).unwrap();
        assert!(svg.contains("<svg") && svg.len() > 1000, "{}: not an SVG chart", path.display());
        return;
    }
    let img = image::open(path).unwrap_or_else(|e| panic!("{}: not a readable PNG: {e}", path.display())).to_rgb8();
    assert_eq!(img.dimensions(), size, "{}", path.display());
    let pixels = img.pixels().count();
    let white = img.pixels().filter(|p| p.0 == [255, 255, 255]).count();
    let dark = img.pixels().filter(|p| p.0.iter().all(|&c| c < 80)).count();
    let coloured = img.pixels().filter(|p| p.0.iter().max().unwrap() - p.0.iter().min().unwrap() > 60).count();
    assert!(white < pixels && white > pixels / 10, "{}: blank or filled ({white} of {pixels} white)", path.display());
    assert!(dark > 500, "{}: no axes or text ({dark} dark pixels)", path.display());
    assert!(coloured > 100, "{}: nothing drawn in colour ({coloured} pixels)", path.display());
}
