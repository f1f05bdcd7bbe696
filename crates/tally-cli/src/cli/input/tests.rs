use super::*;
use std::path::PathBuf;

/// A temp file path unique to this process and test; removed on drop.
struct Tmp(PathBuf);
impl Tmp {
    fn new(name: &str) -> Tmp {
        Tmp(std::env::temp_dir().join(format!("tally-input-{}-{name}", std::process::id())))
    }
    fn with(name: &str, contents: &[u8]) -> Tmp {
        let t = Tmp::new(name);
        std::fs::write(&t.0, contents).unwrap();
        t
    }
}
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn opts(dtype: Option<DType>) -> InputOptions {
    InputOptions { dtype, ..Default::default() }
}

fn err(path: &Path, o: &InputOptions) -> String {
    match load(path, o) {
        Ok(l) => panic!("expected an error, got {:?}", l.samples),
        Err(e) => e.to_string(),
    }
}

#[test]
fn raw_i32_round_trip() {
    let values = [0i32, -1, 7, i32::MIN, i32::MAX];
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let t = Tmp::with("raw.bin", &bytes);
    let l = load(&t.0, &opts(Some(DType::I32))).unwrap();
    assert_eq!(l.samples, Samples::I32(values.to_vec()));
    assert_eq!((l.interleave, l.selected, l.labels), (1, vec![0], vec!["value".to_string()]));
}

#[test]
fn raw_empty_file_is_zero_samples() {
    let t = Tmp::with("empty.dat", b"");
    assert_eq!(load(&t.0, &opts(Some(DType::F64))).unwrap().samples, Samples::F64(vec![]));
}

#[test]
fn raw_length_not_a_multiple() {
    let t = Tmp::with("odd.bin", &[0u8; 10]);
    let e = err(&t.0, &opts(Some(DType::F64)));
    assert!(e.contains("10 bytes") && e.contains("f64 size (8 bytes)"), "{e}");
}

#[test]
fn raw_needs_dtype() {
    let t = Tmp::with("nodtype.bin", &[0u8; 4]);
    let e = err(&t.0, &opts(None));
    assert!(e.ends_with("nodtype.bin: raw binary input needs --dtype (u8, u16, i32, u32, i64, f32, f64)"), "{e}");
}

#[test]
fn missing_file_names_path() {
    let t = Tmp::new("does-not-exist.csv");
    let e = err(&t.0, &opts(None));
    assert!(e.contains(&t.0.display().to_string()), "{e}");
    assert!(e.contains("No such file") || e.contains("os error"), "{e}");
}

#[test]
fn csv_column_by_name_and_index() {
    let t = Tmp::with("h.CSV", b"id,value,label\n1,2.5,x\n2,nan,y\r\n\n3,-inf,z\n");
    let by_name = InputOptions { column: Some("value".into()), ..Default::default() };
    let Samples::F64(v) = load(&t.0, &by_name).unwrap().samples else { panic!() };
    assert_eq!(v[0], 2.5);
    assert!(v[1].is_nan());
    assert_eq!(v[2], f64::NEG_INFINITY);

    let by_index = InputOptions { column: Some("0".into()), dtype: Some(DType::U16), ..Default::default() };
    assert_eq!(load(&t.0, &by_index).unwrap().samples, Samples::U16(vec![1, 2, 3]));
}

#[test]
fn csv_without_header_and_header_only() {
    let t = Tmp::with("nohdr.csv", b"1,10\n2,20\n");
    let o = InputOptions { column: Some("1".into()), dtype: Some(DType::I64), ..Default::default() };
    assert_eq!(load(&t.0, &o).unwrap().samples, Samples::I64(vec![10, 20]));

    let t = Tmp::with("hdronly.csv", b"a,b\n");
    assert_eq!(load(&t.0, &opts(None)).unwrap().samples, Samples::F64(vec![]));
}

#[test]
fn csv_bad_cell_names_line() {
    let t = Tmp::with("bad.csv", b"x\n1\n2\nabc\n");
    let e = err(&t.0, &opts(None));
    assert!(e.ends_with("bad.csv line 4: 'abc' is not a number"), "{e}");

    let e = err(&t.0, &opts(Some(DType::U8)));
    assert!(e.ends_with("line 4: 'abc' is not a number"), "{e}");

    let t = Tmp::with("frac.csv", b"1\n2.5\n");
    let e = err(&t.0, &opts(Some(DType::I32)));
    assert!(e.ends_with("frac.csv line 2: '2.5' is not a valid i32"), "{e}");

    let t = Tmp::with("emptycell.csv", b"a,b\n1,2\n,3\n");
    let e = err(&t.0, &opts(None));
    assert!(e.ends_with("line 3: empty cell in column 0"), "{e}");
}

#[test]
fn csv_missing_column() {
    let t = Tmp::with("cols.csv", b"alpha,beta\n1,2\n");
    let o = InputOptions { column: Some("gamma".into()), ..Default::default() };
    let e = err(&t.0, &o);
    assert!(e.contains("no column 'gamma'") && e.contains("alpha, beta"), "{e}");
}

#[test]
fn npy_f32_round_trip() {
    let t = Tmp::new("f.npy");
    let values = vec![1.5f32, -0.25, f32::INFINITY];
    npyz::to_file_1d(&t.0, values.iter().copied()).unwrap();
    assert_eq!(load(&t.0, &opts(None)).unwrap().samples, Samples::F32(values.clone()));
    // Lossless widening on request; lossy narrowing refused.
    let want = Samples::F64(values.iter().map(|&x| x as f64).collect());
    assert_eq!(load(&t.0, &opts(Some(DType::F64))).unwrap().samples, want);
    let e = err(&t.0, &opts(Some(DType::I32)));
    assert!(e.contains("cannot convert f32 to i32 without loss: element 0 is 1.5"), "{e}");
}

#[test]
fn npy_u8_round_trip() {
    let t = Tmp::new("u.NPY");
    let values: Vec<u8> = vec![0, 1, 200, 255];
    npyz::to_file_1d(&t.0, values.iter().copied()).unwrap();
    assert_eq!(load(&t.0, &opts(None)).unwrap().samples, Samples::U8(values));
    let want = Samples::I32(vec![0, 1, 200, 255]);
    assert_eq!(load(&t.0, &opts(Some(DType::I32))).unwrap().samples, want);
}

#[test]
fn npy_uint64_and_fortran_order() {
    use npyz::WriterBuilder;
    let t = Tmp::new("u64.npy");
    npyz::to_file_1d(&t.0, [1u64, 2, 3]).unwrap();
    assert_eq!(load(&t.0, &opts(None)).unwrap().samples, Samples::I64(vec![1, 2, 3]));
    npyz::to_file_1d(&t.0, [1u64, u64::MAX]).unwrap();
    let e = err(&t.0, &opts(None));
    assert!(e.contains("does not fit in i64: element 1"), "{e}");

    // A 2x3 Fortran-order big-endian int16 array comes back in C order, widened to i32.
    let t = Tmp::new("fortran.npy");
    let mut w = npyz::WriteOptions::new()
        .dtype(npyz::DType::Plain(">i2".parse().unwrap()))
        .shape(&[2, 3])
        .order(npyz::Order::Fortran)
        .writer(std::fs::File::create(&t.0).unwrap())
        .begin_nd()
        .unwrap();
    // Storage order (column-major) of [[1, 2, 3], [4, 5, 6]].
    w.extend([1i16, 4, 2, 5, 3, 6]).unwrap();
    w.finish().unwrap();
    assert_eq!(load(&t.0, &opts(None)).unwrap().samples, Samples::I32(vec![1, 2, 3, 4, 5, 6]));
}

#[test]
fn png_brightness_and_channels() {
    let t = Tmp::new("img.png");
    // 3x2 RGB, row-major.
    let pixels: [[u8; 3]; 6] = [[255, 0, 0], [0, 255, 0], [0, 0, 255], [10, 20, 30], [255, 255, 255], [1, 1, 2]];
    let raw: Vec<u8> = pixels.iter().flatten().copied().collect();
    ::image::RgbImage::from_raw(3, 2, raw).unwrap().save(&t.0).unwrap();

    let l = load(&t.0, &opts(None)).unwrap();
    assert_eq!(l.samples, Samples::U8(vec![85, 85, 85, 20, 255, 1]));
    assert_eq!((l.interleave, l.selected, l.labels), (1, vec![0], vec!["brightness".to_string()]));

    let o = InputOptions { channels: Some(vec!['r', 'g', 'b']), ..Default::default() };
    let l = load(&t.0, &o).unwrap();
    let rgba: Vec<u8> = pixels.iter().flat_map(|p| [p[0], p[1], p[2], 255]).collect();
    assert_eq!(l.samples, Samples::U8(rgba));
    assert_eq!((l.interleave, l.selected), (4, vec![0, 1, 2]));
    assert_eq!(l.labels, ["r", "g", "b"]);

    let o = InputOptions { channels: Some(vec!['b', 'a']), ..Default::default() };
    assert_eq!(load(&t.0, &o).unwrap().selected, vec![2, 3]);
    let o = InputOptions { channels: Some(vec!['r', 'r']), ..Default::default() };
    assert!(err(&t.0, &o).contains("twice"));
    let o = InputOptions { channels: Some(vec!['x']), ..Default::default() };
    assert!(err(&t.0, &o).contains("unknown channel 'x'"));
}

#[test]
fn png_grayscale_brightness_is_the_gray_value() {
    let t = Tmp::new("gray.png");
    ::image::GrayImage::from_raw(2, 1, vec![7, 250]).unwrap().save(&t.0).unwrap();
    assert_eq!(load(&t.0, &opts(None)).unwrap().samples, Samples::U8(vec![7, 250]));
}

#[test]
fn options_for_the_wrong_format_are_errors() {
    let t = Tmp::with("opts.bin", &[0u8; 4]);
    let o = InputOptions { channels: Some(vec!['r']), dtype: Some(DType::U8), ..Default::default() };
    assert!(err(&t.0, &o).contains("--channels applies only to images"));
    let o = InputOptions { column: Some("a".into()), dtype: Some(DType::U8), ..Default::default() };
    assert!(err(&t.0, &o).contains("--column applies only to .csv"));
}

// ---- fuzzing: every parser over arbitrary bytes and arbitrary headers ---------------------
// No input may panic; what loads must be consistent with the bytes. Cases per property:
// PROPTEST_CASES (default 256). Executions and findings: docs/RELIABILITY.md.

use proptest::prelude::*;

fn fuzz_config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(256);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

fn path(name: &str) -> PathBuf {
    PathBuf::from(name)
}

/// A .npy file from parts that may each be wrong: version, descr, order, shape, data length.
fn npy_bytes(version: u8, descr: &str, fortran: bool, shape: &[u64], data: &[u8], cut: Option<usize>) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let order = if fortran { "True" } else { "False" };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}\n");
    let mut b = b"\x93NUMPY".to_vec();
    b.push(version);
    b.push(0);
    if version == 1 {
        b.extend((dict.len() as u16).to_le_bytes());
    } else {
        b.extend((dict.len() as u32).to_le_bytes());
    }
    b.extend(dict.as_bytes());
    b.extend(data);
    if let Some(c) = cut {
        b.truncate(c % (b.len() + 1));
    }
    b
}

proptest! {
    #![proptest_config(fuzz_config())]

    #[test]
    fn fuzz_raw(bytes in prop::collection::vec(any::<u8>(), 0..256), d in 0usize..7) {
        let dtype = DType::ALL[d];
        match load_raw(&path("f.bin"), &bytes, Some(dtype), "--dtype") {
            Ok(s) => {
                prop_assert_eq!(bytes.len() % dtype.size(), 0);
                prop_assert_eq!(s.len(), bytes.len() / dtype.size());
            }
            Err(e) => prop_assert!(bytes.len() % dtype.size() != 0 && !e.to_string().contains('\n')),
        }
    }

    #[test]
    fn fuzz_npy_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300), magic in any::<bool>()) {
        let mut b = if magic { b"\x93NUMPY\x01\x00".to_vec() } else { Vec::new() };
        b.extend(bytes);
        if let Err(e) = load_npy(&path("f.npy"), &b) {
            prop_assert!(!e.to_string().contains('\n'));
        }
    }

    #[test]
    fn fuzz_npy_headers(
        version in prop::sample::select(vec![1u8, 2, 3, 4]),
        descr in prop::sample::select(vec!["<f8", "<f4", ">i2", "|u1", "<i8", "<u8", "|O", "<c16", "|b1", "<U3", "<f2", "x"]),
        fortran in any::<bool>(),
        shape in prop::collection::vec(prop_oneof![0u64..5, Just(u64::MAX), Just(1 << 63), Just(1 << 32), any::<u64>()], 0..4),
        data in prop::collection::vec(any::<u8>(), 0..128),
        cut in prop::option::of(any::<usize>()),
    ) {
        let b = npy_bytes(version, descr, fortran, &shape, &data, cut);
        match load_npy(&path("f.npy"), &b) {
            Ok(s) => {
                // What loads has exactly the shape's elements.
                let n: u64 = shape.iter().product();
                prop_assert_eq!(s.len() as u64, n);
            }
            Err(e) => prop_assert!(!e.to_string().contains('\n'), "{}", e),
        }
    }

    #[test]
    fn fuzz_csv(text in "[0-9a-z,.\"\\-+ \n\r]{0,200}", col in prop::option::of("[0-3a-z]{1,2}"), d in prop::option::of(0usize..7)) {
        let opts = InputOptions { column: col, dtype: d.map(|d| DType::ALL[d]), ..Default::default() };
        if let Err(e) = load_csv(&path("f.csv"), text.as_bytes(), &opts) {
            prop_assert!(!e.to_string().contains('\n'));
        }
    }

    #[test]
    fn fuzz_csv_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = load_csv(&path("f.csv"), &bytes, &InputOptions::default());
    }

    #[test]
    fn fuzz_images(bytes in prop::collection::vec(any::<u8>(), 0..300), png in any::<bool>(), ch in any::<bool>()) {
        // Real signatures in front, so that the decoders get past their first check.
        let mut b = if png { b"\x89PNG\r\n\x1a\n".to_vec() } else { vec![0xff, 0xd8, 0xff, 0xe0] };
        b.extend(bytes);
        let channels = ch.then(|| vec!['r', 'a']);
        if let Err(e) = load_image(&path("f.png"), &b, channels.as_deref(), false) {
            prop_assert!(!e.to_string().contains('\n'));
        }
    }

    #[test]
    fn fuzz_small_valid_images(w in 1u32..6, h in 1u32..6, deep in any::<bool>(), seed in any::<u64>()) {
        // Valid images of any size and depth load with one sample per pixel (or four).
        let t = Tmp::new(&format!("fz-{w}-{h}-{deep}-{seed}.png"));
        let n = (w * h) as usize;
        if deep {
            let v: Vec<u16> = (0..n).map(|i| (seed as usize).wrapping_mul(i + 1) as u16).collect();
            ::image::ImageBuffer::<::image::Luma<u16>, _>::from_raw(w, h, v).unwrap().save(&t.0).unwrap();
        } else {
            let v: Vec<u8> = (0..3 * n).map(|i| (seed as usize).wrapping_mul(i + 7) as u8).collect();
            ::image::RgbImage::from_raw(w, h, v).unwrap().save(&t.0).unwrap();
        }
        let l = load(&t.0, &opts(None)).unwrap();
        prop_assert_eq!(l.samples.len(), n);
        prop_assert_eq!(l.samples.dtype(), if deep { DType::U16 } else { DType::U8 });
        let o = InputOptions { channels: Some(vec!['g']), ..Default::default() };
        prop_assert_eq!(load(&t.0, &o).unwrap().samples.len(), 4 * n);
    }

    #[test]
    fn fuzz_any_extension(bytes in prop::collection::vec(any::<u8>(), 0..64), e in 0usize..8) {
        let ext = ["bin", "npy", "csv", "png", "jpg", "gif", "", "tiff"][e];
        let t = Tmp::with(&format!("fz-any-{e}-{}.{ext}", bytes.len()), &bytes);
        if let Err(err) = load(&t.0, &opts(Some(DType::U8))) {
            prop_assert!(!err.to_string().contains('\n'));
        }
    }
}
