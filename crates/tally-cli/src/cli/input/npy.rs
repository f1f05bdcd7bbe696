//! `.npy` files: the header checks tally makes before decoding, the decoding itself, and the
//! reordering of Fortran-order arrays.

use std::path::Path;

use anyhow::{anyhow, bail};

use super::convert::cast;
use super::{read_input, with_vec, Samples};
use tally::DType;

/// The shape of a `.npy` file (for `(n, 2)` arrays of pairs).
pub fn npy_shape(path: &Path) -> anyhow::Result<Vec<u64>> {
    let bytes = read_input(path)?;
    Ok(npy_header(path, &bytes, bytes.len() as u64)?.shape)
}

/// Bytes of a `.npy` file read for its header before the header's own length is known.
const HEADER_PROBE: usize = 4096;

/// Where a `.npy` file's elements lie, for a reader that takes them straight from the file
/// (never decoding it whole): their type, the byte they start at, and how many there are.
/// None where the file needs decoding: a type tally widens or converts, big-endian data, a
/// Fortran-order array of more than one dimension.
pub fn npy_plain_data(path: &Path) -> anyhow::Result<Option<(DType, u64, u64)>> {
    use std::io::Read;
    let cannot = |e: std::io::Error| anyhow!("cannot read {}: {e}", path.display());
    let mut file = std::fs::File::open(path).map_err(cannot)?;
    let len = file.metadata().map_err(cannot)?.len();
    let mut head = Vec::new();
    (&mut file).take(HEADER_PROBE as u64).read_to_end(&mut head).map_err(cannot)?;
    if let Some(at) = header_end(&head).filter(|&at| at > head.len()) {
        (&mut file).take((at - head.len()) as u64).read_to_end(&mut head).map_err(cannot)?;
    }
    let h = npy_header(path, &head, len)?;
    let code = h.descr.as_deref().unwrap_or("");
    let (order, code) = code.split_at(code.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(0));
    let little = matches!(order, "<" | "|" | "=" | "") && cfg!(target_endian = "little");
    let dtype = match code {
        "u1" | "B" => Some(DType::U8),
        "u2" => Some(DType::U16),
        "i4" => Some(DType::I32),
        "u4" => Some(DType::U32),
        "i8" => Some(DType::I64),
        "f2" => Some(DType::F16),
        "f4" => Some(DType::F32),
        "f8" => Some(DType::F64),
        _ => None,
    };
    let reordered = h.fortran && h.shape.len() > 1;
    Ok(dtype.filter(|_| little && !reordered).map(|d| (d, h.data_at, h.shape.iter().product())))
}

/// The byte where a `.npy` header ends, once enough of it is read to say.
fn header_end(bytes: &[u8]) -> Option<usize> {
    let len_size = match bytes.get(6)? {
        1 => 2,
        _ => 4,
    };
    let len = bytes.get(8..8 + len_size)?.iter().rev().fold(0usize, |acc, &b| acc << 8 | b as usize);
    Some(8 + len_size + len)
}

/// What tally reads of a `.npy` header before handing the file to the decoder: the shape, and
/// that the data is as long as the shape and the item size say.
struct NpyHeader {
    shape: Vec<u64>,
    /// The dtype string, such as `<f8` (None: a structured dtype).
    descr: Option<String>,
    /// Whether the array is stored in Fortran order.
    fortran: bool,
    /// The byte where the data start.
    data_at: u64,
}

/// Checks a `.npy` header: magic, version, header length, dtype (not Python objects), shape (a
/// tuple of integers whose product fits), and the data's length against shape x item size.
/// `bytes` holds at least the header; the file is `file_len` bytes long.
fn npy_header(path: &Path, bytes: &[u8], file_len: u64) -> anyhow::Result<NpyHeader> {
    let bad = |why: String| anyhow!("{}: not a readable .npy file: {why}", path.display());
    if !bytes.starts_with(b"\x93NUMPY") {
        return Err(bad("it does not begin with the .npy magic bytes".into()));
    }
    if bytes.len() < 10 {
        return Err(bad("truncated: the file ends inside the header".into()));
    }
    let (len_at, len_size) = match bytes[6] {
        1 => (8, 2),
        2 | 3 => (8, 4),
        v => return Err(bad(format!("unknown format version {v}"))),
    };
    if bytes.len() < len_at + len_size {
        return Err(bad("truncated: the file ends inside the header".into()));
    }
    let header_len = bytes[len_at..len_at + len_size].iter().rev().fold(0usize, |acc, &b| acc << 8 | b as usize);
    let data_at = len_at + len_size + header_len;
    if bytes.len() < data_at {
        return Err(bad(format!("truncated: the header says {header_len} bytes, the file ends before them")));
    }
    let text = String::from_utf8_lossy(&bytes[len_at + len_size..data_at]);
    let value_of = |key: &str| -> Option<String> {
        let at = text.find(&format!("'{key}'")).or_else(|| text.find(&format!("\"{key}\"")))?;
        let rest = text[at + key.len() + 2..].trim_start().strip_prefix(':')?.trim_start();
        Some(rest.to_string())
    };
    // The dtype: a string such as '<f8' (a list is a structured array, left to the decoder).
    let descr = value_of("descr").ok_or_else(|| bad("the header has no 'descr'".into()))?;
    let (item_size, descr) = match descr.chars().next() {
        Some(q @ ('\'' | '"')) => {
            let inner: String = descr[1..].chars().take_while(|&c| c != q).collect();
            let code = inner.trim_start_matches(['<', '>', '|', '=']);
            if code.starts_with('O') {
                bail!(
                    "{}: an object array (dtype '{inner}') holds Python objects, not numbers; save it with a numeric dtype",
                    path.display()
                );
            }
            (code.trim_start_matches(|c: char| c.is_ascii_alphabetic()).parse::<u64>().ok(), Some(inner))
        }
        _ => (None, None),
    };
    let fortran = value_of("fortran_order").is_some_and(|v| v.starts_with("True"));
    let shape_text = value_of("shape").ok_or_else(|| bad("the header has no 'shape'".into()))?;
    let inside =
        shape_text.strip_prefix('(').and_then(|r| r.split_once(')')).map(|(t, _)| t).ok_or_else(|| {
            bad(format!("the shape is not a tuple: {}", shape_text.chars().take(40).collect::<String>()))
        })?;
    let mut shape = Vec::new();
    for dim in inside.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let d = dim.trim_end_matches('L');
        match d.parse::<u64>() {
            Ok(v) => shape.push(v),
            Err(_) if !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) => {
                return Err(bad(format!("the shape's dimension {d} is too large")))
            }
            Err(_) => return Err(bad(format!("the shape has a dimension that is not an integer: '{dim}'"))),
        }
    }
    // Every partial product must fit (the decoder forms them), zero dimensions or not.
    let shown = format!("({})", shape.iter().map(u64::to_string).collect::<Vec<_>>().join(", "));
    shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d.max(1)))
        .ok_or_else(|| bad(format!("the shape {shown} has more elements than any file can hold")))?;
    let elements: u64 = shape.iter().product();
    if let Some(size) = item_size {
        let have = file_len.saturating_sub(data_at as u64);
        let need = elements.checked_mul(size);
        match need {
            Some(need) if need == have => {}
            Some(need) if need > have => {
                return Err(bad(format!(
                    "truncated: the shape {shown} of {size}-byte items needs {need} bytes of data, the file has {have}"
                )))
            }
            Some(need) => {
                return Err(bad(format!(
                    "the shape {shown} of {size}-byte items needs {need} bytes of data, but the file has {have}"
                )))
            }
            None => return Err(bad(format!("the shape {shown} has more bytes than any file can hold"))),
        }
    }
    Ok(NpyHeader { shape, descr, fortran, data_at: data_at as u64 })
}

pub(super) fn load_npy(path: &Path, bytes: &[u8]) -> anyhow::Result<Samples> {
    use npyz::TypeChar::{Float, Int, Uint};

    let bad = |e: std::io::Error| anyhow!("{}: not a readable .npy file: {e}", path.display());
    npy_header(path, bytes, bytes.len() as u64)?;
    let npy = npyz::NpyFile::new(bytes).map_err(bad)?;
    let header = npy.header().clone();
    let npyz::DType::Plain(ts) = header.dtype() else {
        bail!("{}: unsupported .npy dtype {} (structured array)", path.display(), header.dtype().descr());
    };
    let samples = match (ts.type_char(), ts.num_bytes()) {
        (Int, Some(1)) => widen::<i8, i32>(npy.into_vec().map_err(bad)?).into(),
        (Int, Some(2)) => widen::<i16, i32>(npy.into_vec().map_err(bad)?).into(),
        (Int, Some(4)) => Samples::I32(npy.into_vec().map_err(bad)?),
        (Int, Some(8)) => Samples::I64(npy.into_vec().map_err(bad)?),
        (Uint, Some(1)) => Samples::U8(npy.into_vec().map_err(bad)?),
        (Uint, Some(2)) => Samples::U16(npy.into_vec().map_err(bad)?),
        (Uint, Some(4)) => Samples::U32(npy.into_vec().map_err(bad)?),
        // uint64 has no dtype of its own here: accept it when every value fits in i64.
        (Uint, Some(8)) => {
            let v: Vec<u64> = npy.into_vec().map_err(bad)?;
            Samples::I64(cast(&v).map_err(|e| anyhow!("{}: uint64 data does not fit in i64: {e}", path.display()))?)
        }
        (Float, Some(4)) => Samples::F32(npy.into_vec().map_err(bad)?),
        (Float, Some(8)) => Samples::F64(npy.into_vec().map_err(bad)?),
        (Float, Some(2)) => Samples::F16(npy.into_vec().map_err(bad)?),
        _ => bail!(
            "{}: unsupported .npy dtype {ts} (supported: signed and unsigned integers, float16, float32, float64)",
            path.display()
        ),
    };
    // npyz yields elements in storage order; a Fortran-order array is reordered to C order.
    if header.order() == npyz::Order::Fortran && header.shape().len() > 1 {
        return Ok(with_vec!(samples, v => Samples::from(to_c_order(&v, header.shape(), header.strides()))));
    }
    Ok(samples)
}

fn widen<S: Into<T>, T>(v: Vec<S>) -> Vec<T> {
    v.into_iter().map(Into::into).collect()
}

/// Reads `data` (stored with per-axis `strides`, in elements) in C order of `shape`.
fn to_c_order<T: Copy>(data: &[T], shape: &[u64], strides: &[u64]) -> Vec<T> {
    let mut out = Vec::with_capacity(data.len());
    let mut index = vec![0u64; shape.len()];
    for _ in 0..data.len() {
        let offset: u64 = index.iter().zip(strides).map(|(i, s)| i * s).sum();
        out.push(data[offset as usize]);
        // Advance the multi-index, last axis fastest.
        for axis in (0..shape.len()).rev() {
            index[axis] += 1;
            if index[axis] < shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    out
}
