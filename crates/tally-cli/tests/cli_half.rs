//! f16 and bf16 files on the command line, on the CPU: raw files with `--dtype f16|bf16`,
//! `.npy` float16, and the outputs in the documented accumulator types (f32).

mod common;
use common::{cpu_json as json, read_npy};
use tally::half::{bf16, f16};

fn raw<T: Copy>(name: &str, values: &[T], bytes: fn(T) -> [u8; 2]) -> String {
    let f = common::tmp_in("cli-half", name);
    std::fs::write(&f, values.iter().flat_map(|&x| bytes(x)).collect::<Vec<u8>>()).unwrap();
    f.display().to_string()
}

fn out(name: &str) -> String {
    common::tmp_in("cli-half", name).display().to_string()
}

#[test]
fn raw_f16_reduce_scan_and_histogram() {
    let v: Vec<f16> = [1.5f32, -0.0, 65504.0, f32::NAN, 0.25].iter().map(|&x| f16::from_f32(x)).collect();
    let f = raw("five.f16", &v, f16::to_le_bytes);
    let j = json(&["reduce", &f, "--dtype", "f16", "--op", "sum", "--skip-nan"]);
    // 65504 + 1.75 is no f16: the sum is wider than the type.
    assert_eq!((j["value"].as_f64(), j["nan"].as_u64()), (Some(65505.75), Some(1)));
    let j = json(&["reduce", &f, "--dtype", "f16", "--op", "argmax"]);
    assert_eq!(j["index"], 3, "the first NaN, as numpy");
    let j = json(&["reduce", &f, "--dtype", "f16", "--op", "minmax", "--skip-nan"]);
    assert_eq!((j["min"].as_f64(), j["max"].as_f64()), (Some(-0.0), Some(65504.0)));
    let o = out("cumsum.npy");
    let j = json(&["scan", &f, "--dtype", "f16", "--out", &o]);
    assert_eq!(j["dtype"], "f32");
    let got: Vec<f32> = read_npy(&o);
    assert_eq!(got[..3], [1.5, 1.5, 65505.5]);
    assert!(got[3].is_nan() && got[4].is_nan());
    let j = json(&["hist", &f, "--dtype", "f16", "--bins", "4", "--range", "0,2"]);
    let counts: Vec<u64> = j["counts"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect();
    assert_eq!(counts, [2, 0, 0, 1], "-0.0 and 0.25 in the first bin, 1.5 in the last");
}

#[test]
fn npy_float16_in_bf16_raw_in_and_out() {
    let v: Vec<f16> = [3.0f32, 1.0, 3.0, 2.0].iter().map(|&x| f16::from_f32(x)).collect();
    let f = out("four.npy");
    npyz::to_file_1d(&f, v.iter().copied()).unwrap();
    let j = json(&["reduce", &f, "--op", "max"]);
    assert_eq!(j["value"].as_f64(), Some(3.0));
    let o = out("unique.npy");
    json(&["select", &f, "--where", "x > 1.5", "--out", &o]);
    assert_eq!(read_npy::<f16>(&o), [v[0], v[2], v[3]]);

    let b: Vec<bf16> = [1.0f32, 1.0, -2.5, 1e30].iter().map(|&x| bf16::from_f32(x)).collect();
    let f = raw("four.bf16", &b, bf16::to_le_bytes);
    let j = json(&["reduce", &f, "--dtype", "bf16", "--op", "sum", "--exact"]);
    assert_eq!(j["value"].as_f64(), Some(b.iter().map(|x| x.to_f64()).sum::<f64>()));
    let keys = out("keys.bf16");
    let lengths = out("lengths.bin");
    json(&["rle", &f, "--dtype", "bf16", "--out-values", &keys, "--out-counts", &lengths]);
    let got: Vec<u16> =
        std::fs::read(&keys).unwrap().chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    assert_eq!(got, [b[0].to_bits(), b[2].to_bits(), b[3].to_bits()]);
    // bf16 has no numpy dtype: a .npy output is a one-line error.
    common::fails_with(
        &["rle", &f, "--dtype", "bf16", "--out-values", &out("k.npy"), "--out-counts", &lengths, "--backend", "cpu"],
        "bf16 has no numpy dtype",
    );
}
