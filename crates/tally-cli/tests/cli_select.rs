//! `tally select` as a user runs it, on the CPU: values, indices and partitions written to .npy
//! and checked against the library's sequential reference, the JSON summary, and a predicate
//! that does not parse (one line naming the byte, exit code 2).

mod common;
use common::{cpu_json, stderr, stdout, tally};
use tally::select::reference;
use tally::Predicate;

fn raw_f32(name: &str, values: &[f32]) -> String {
    let path = common::tmp_in("cli-select", name);
    std::fs::write(&path, values.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    path.display().to_string()
}

fn out(name: &str) -> String {
    common::tmp_in("cli-select", name).display().to_string()
}

fn json(args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.extend(["--backend", "cpu", "--json"]);
    let out = tally(&all);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

fn read_npy<T: npyz::Deserialize>(path: &str) -> Vec<T> {
    let bytes = std::fs::read(path).unwrap();
    npyz::NpyFile::new(&bytes[..]).unwrap().into_vec().unwrap()
}

fn values() -> Vec<f32> {
    (0..10_000).map(|i| if i % 13 == 0 { f32::NAN } else { ((i * 37) % 200) as f32 / 100.0 - 1.0 }).collect()
}

#[test]
fn values_indices_and_partitions_match_the_reference() {
    let xs = values();
    let f = raw_f32("v.f32", &xs);
    let text = "x > 0 && x < 0.5 || isnan(x)";
    let p = Predicate::parse(text).unwrap();
    let o = out("kept.npy");
    let j = json(&["select", &f, "--dtype", "f32", "--where", text, "--out", &o]);
    let want = reference::select(&xs, &p);
    let got = read_npy::<f32>(&o);
    assert_eq!(got.len(), want.len());
    assert!(got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()));
    assert_eq!(j["kept"].as_u64(), Some(want.len() as u64));
    assert_eq!(j["count"].as_u64(), Some(xs.len() as u64));
    assert_eq!((j["mode"].as_str(), j["dtype"].as_str()), (Some("values"), Some("f32")));
    assert_eq!(j["where"].as_str(), Some("((x > 0) && (x < 0.5)) || isnan(x)"));

    let oi = out("idx.npy");
    let j = json(&["select", &f, "--dtype", "f32", "--where", text, "--out", &oi, "--indices"]);
    assert_eq!(read_npy::<u64>(&oi), reference::select_indices(&xs, &p));
    assert_eq!((j["mode"].as_str(), j["kept"].as_u64()), (Some("indices"), Some(want.len() as u64)));

    let op = out("part.npy");
    let j = json(&["select", &f, "--dtype", "f32", "--where", text, "--out", &op, "--partition"]);
    let (want_parted, kept) = reference::partition(&xs, &p);
    let got = read_npy::<f32>(&op);
    assert!(got.len() == xs.len() && got.iter().zip(&want_parted).all(|(a, b)| a.to_bits() == b.to_bits()));
    assert_eq!((j["mode"].as_str(), j["kept"].as_u64()), (Some("partition"), Some(kept)));

    // Integers from CSV, and the one-line text summary.
    let csv = common::tmp_in("cli-select", "ints.csv");
    std::fs::write(&csv, "a\n5\n-3\n2\n8\n").unwrap();
    let csv = csv.display().to_string();
    let oc = out("ints.npy");
    let r = tally(&[
        "select",
        &csv,
        "--column",
        "a",
        "--dtype",
        "i64",
        "--where",
        "x > 2.5",
        "--out",
        &oc,
        "--backend",
        "cpu",
    ]);
    assert!(r.status.success(), "{}", stderr(&r));
    assert!(stdout(&r).starts_with("kept 2 of 4 values where x > 2.5"), "{}", stdout(&r));
    assert_eq!(read_npy::<i64>(&oc), vec![5, 8]);
}

#[test]
fn bench_select_runs_on_the_cpu_and_verifies() {
    let j = cpu_json(&["bench", "select", "--log2-sizes", "12", "--reps", "1"]);
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3 * 5 + 3);
    assert!(rows.iter().all(|r| r["verified"] == true && r["n"] == 4096 && r["kept"].as_u64().unwrap() <= 4096));
    assert!(j["copy_bandwidth_gbs"].as_f64().unwrap() > 0.0);
    let table = tally(&["bench", "select", "--backend", "cpu", "--log2-sizes", "12", "--reps", "1"]);
    assert!(stdout(&table).starts_with("# tally bench select: "), "{}", stdout(&table));
}

#[test]
fn a_bad_predicate_names_its_byte_and_exits_2() {
    let f = raw_f32("bad.f32", &[1.0, 2.0]);
    let o = out("bad.npy");
    for (text, want) in [
        ("x > > 1", "at byte 5 of \"x > > 1\": expected a number or x"),
        ("x > 1 && y < 2", "at byte 10 of \"x > 1 && y < 2\": unknown name 'y'"),
        ("x = 1", "at byte 3 of \"x = 1\": '=' is not an operator"),
    ] {
        let r = tally(&["select", &f, "--dtype", "f32", "--where", text, "--out", &o, "--backend", "cpu"]);
        assert_eq!(r.status.code(), Some(2), "{text}");
        let err = stderr(&r);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{err}");
    }
    let r = tally(&["select", &f, "--dtype", "f32", "--where", "x > 1", "--out", &o, "--indices", "--partition"]);
    assert_eq!(r.status.code(), Some(2));
}

/// --indices and --partition run on one device: with --devices they are refused by the argument
/// parser, before the input is read (it does not exist here) or any device is opened.
#[test]
fn indices_and_partitions_do_not_take_devices() {
    let missing = common::tmp_in("cli-select", "missing.f32").display().to_string();
    let o = out("devices.npy");
    for mode in ["--indices", "--partition"] {
        let r = tally(&["select", &missing, "--dtype", "f32", "--where", "x > 1", "--out", &o, mode, "--devices", "0"]);
        let err = stderr(&r);
        assert_eq!(r.status.code(), Some(2), "{mode}: {err}");
        assert!(err.contains(mode) && err.contains("cannot be used with") && err.contains("--devices"), "{err}");
    }
}

/// Hostile predicate text (line breaks, other scripts, nothing, nesting and chains past the
/// limits, numbers past 128 bits, a leading sign): one line on stderr that names a byte, exit
/// code 2; and a valid predicate that starts with '-' is read as the predicate, not an option.
#[test]
fn hostile_predicates_get_one_line_and_exit_2() {
    let f = raw_f32("hostile.f32", &[1.0, -3.0, 2.0]);
    let o = out("hostile.npy");
    let deep = format!("{}x > 1{}", "(".repeat(500), ")".repeat(500));
    let chain = "x > 1 && ".repeat(5000) + "x < 2";
    let huge = format!("x > {}", "9".repeat(200));
    for text in
        ["x >\n y", "x > 1\n&&", "x \u{2028}> 1", "x > \u{e9}", "\u{1F600}", "", "   ", &deep, &chain, &huge, "x > 0x"]
    {
        let r = tally(&["select", &f, "--dtype", "f32", "--where", text, "--out", &o, "--backend", "cpu"]);
        let err = stderr(&r);
        assert_eq!(r.status.code(), Some(2), "{text:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{text:?}: {err}");
        assert!(err.contains("at byte "), "{text:?}: {err}");
    }
    let r = tally(&["select", &f, "--dtype", "f32", "--where", "-2.5 >= x", "--out", &o, "--backend", "cpu"]);
    assert!(r.status.success(), "{}", stderr(&r));
    assert_eq!(read_npy::<f32>(&o), vec![-3.0]);
}
