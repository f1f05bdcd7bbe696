//! Loading sample files for `tally hist FILE`.
//!
//! The format is chosen by extension (case-insensitive): `.npy`, `.csv`, `.png`/`.jpg`/`.jpeg`,
//! and anything else is raw little-endian binary of `--dtype`. If `InputOptions::dtype` is
//! given, the samples come back in that dtype or the load fails; values are never silently
//! changed (a conversion that would lose information is an error).

use std::fmt;
use std::path::Path;

use anyhow::{anyhow, bail};
use tally::DType;

/// Samples of one of the seven dtypes.
#[derive(Clone, Debug, PartialEq)]
pub enum Samples {
    U8(Vec<u8>),
    U16(Vec<u16>),
    I32(Vec<i32>),
    U32(Vec<u32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// Runs `$body` with `$v` bound to the inner `Vec`, whatever its element type.
macro_rules! with_vec {
    ($samples:expr, $v:ident => $body:expr) => {
        match $samples {
            Samples::U8($v) => $body,
            Samples::U16($v) => $body,
            Samples::I32($v) => $body,
            Samples::U32($v) => $body,
            Samples::I64($v) => $body,
            Samples::F32($v) => $body,
            Samples::F64($v) => $body,
        }
    };
}
pub(crate) use with_vec;

/// Runs `$body` with the type alias `$T` naming the Rust type of the dtype `$dtype`.
macro_rules! with_type {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::U8 => {
                type $T = u8;
                $body
            }
            DType::U16 => {
                type $T = u16;
                $body
            }
            DType::I32 => {
                type $T = i32;
                $body
            }
            DType::U32 => {
                type $T = u32;
                $body
            }
            DType::I64 => {
                type $T = i64;
                $body
            }
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
        }
    };
}
pub(crate) use with_type;

impl Samples {
    pub fn len(&self) -> usize {
        with_vec!(self, v => v.len())
    }

    pub fn dtype(&self) -> DType {
        match self {
            Samples::U8(_) => DType::U8,
            Samples::U16(_) => DType::U16,
            Samples::I32(_) => DType::I32,
            Samples::U32(_) => DType::U32,
            Samples::I64(_) => DType::I64,
            Samples::F32(_) => DType::F32,
            Samples::F64(_) => DType::F64,
        }
    }

    /// Converts to `to`, failing on the first value that `to` cannot hold exactly.
    fn convert(self, to: DType) -> Result<Samples, Lossy> {
        if self.dtype() == to {
            return Ok(self);
        }
        with_vec!(self, v => with_type!(to, T => Ok(Samples::from(cast::<_, T>(&v)?))))
    }
}

pub struct Loaded {
    pub samples: Samples,
    /// Interleaved channel count (1 for plain data; 4 for an image loaded with channels, as RGBA).
    pub interleave: u32,
    /// The channels to count, as indices into the interleave (e.g. `[0, 1, 2]` for `--channels r,g,b`).
    pub selected: Vec<u32>,
    /// A label per selected channel ("value", or "r","g","b","a", or "brightness").
    pub labels: Vec<String>,
    /// Something the user should know about how the file was read (printed on stderr).
    pub note: Option<String>,
}

impl Loaded {
    /// Plain, non-interleaved data.
    fn values(samples: Samples) -> Loaded {
        Loaded { samples, interleave: 1, selected: vec![0], labels: vec!["value".into()], note: None }
    }
}

#[derive(Default, Clone, Debug)]
pub struct InputOptions {
    /// Required for raw binary files; for CSV the type to parse the column as (default f64);
    /// for .npy and images, the type to convert to (only where lossless).
    pub dtype: Option<DType>,
    /// The type of a raw binary file when `dtype` is not given (weights: `--weights-dtype`, or
    /// the samples' type); nothing else is converted to it.
    pub raw_dtype: Option<DType>,
    /// The option that gives a raw file its type, for messages (default `--dtype`).
    pub raw_flag: Option<&'static str>,
    /// CSV: column name (matched against a header row) or 0-based index. Default: column 0.
    pub column: Option<String>,
    /// Images: channels to histogram, e.g. ['r','g','b']; None = brightness, one channel.
    pub channels: Option<Vec<char>>,
}

/// Image formats tally does not decode, by extension and by their magic bytes.
const OTHER_IMAGES: [(&str, &[&str]); 5] = [
    ("PPM/PGM/PBM", &["ppm", "pgm", "pbm", "pnm", "pam"]),
    ("BMP", &["bmp", "dib"]),
    ("GIF", &["gif"]),
    ("TIFF", &["tif", "tiff"]),
    ("WebP", &["webp"]),
];

/// What the first bytes say the content is, where they say it clearly.
fn sniff(bytes: &[u8]) -> Option<&'static str> {
    let b = bytes;
    if b.starts_with(b"\x93NUMPY") {
        Some("npy")
    } else if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("png")
    } else if b.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("jpeg")
    } else if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
        Some("GIF")
    } else if b.starts_with(b"II*\0") || b.starts_with(b"MM\0*") {
        Some("TIFF")
    } else if b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WEBP" {
        Some("WebP")
    } else if b.len() >= 14 && &b[..2] == b"BM" && u32::from_le_bytes([b[2], b[3], b[4], b[5]]) as usize == b.len() {
        Some("BMP")
    } else {
        None
    }
}

/// Reads `path`, or standard input for `-`.
fn read_input(path: &Path) -> anyhow::Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut v)
            .map_err(|e| anyhow!("cannot read standard input: {e}"))?;
        return Ok(v);
    }
    // The OS reason goes in the message itself: the CLI prints only the top-level message.
    std::fs::read(path).map_err(|e| anyhow!("cannot read {}: {e}", path.display()))
}

/// Loads `path` as samples (`-`: standard input, its format told by its content: .npy, PNG or
/// JPEG, CSV text with --column, else raw binary). A user-facing error: the CLI prints it on one
/// line and exits 2.
pub fn load(path: &Path, opts: &InputOptions) -> anyhow::Result<Loaded> {
    let stdin = path.as_os_str() == "-";
    let mut ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).unwrap_or_default();
    if let Some((name, _)) = OTHER_IMAGES.iter().find(|(_, exts)| exts.contains(&ext.as_str())) {
        bail!("{}: {name} images are not supported (PNG and JPEG are); convert it to PNG", path.display());
    }
    let bytes = read_input(path)?;
    if stdin {
        ext = match sniff(&bytes) {
            Some("npy") => "npy".into(),
            Some("png") => "png".into(),
            Some("jpeg") => "jpg".into(),
            _ if opts.column.is_some() => "csv".into(),
            _ => String::new(),
        };
    }
    let is_image = matches!(ext.as_str(), "png" | "jpg" | "jpeg");
    // Reject options that would otherwise be silently ignored.
    if opts.channels.is_some() && !is_image {
        bail!("--channels applies only to images (.png, .jpg, .jpeg), not {}", path.display());
    }
    if opts.column.is_some() && ext != "csv" {
        bail!("--column applies only to .csv files, not {}", path.display());
    }
    let loaded = match ext.as_str() {
        "npy" => Loaded::values(load_npy(path, &bytes)?),
        "csv" => Loaded::values(load_csv(path, &bytes, opts)?),
        _ if is_image => load_image(path, &bytes, opts.channels.as_deref())?,
        _ => {
            // A file that is plainly something else is not read as raw numbers.
            match sniff(&bytes) {
                Some(kind @ ("npy" | "png" | "jpeg")) => bail!(
                    "{}: the content is {kind} but the name does not say so; name it .{}",
                    path.display(),
                    if kind == "jpeg" { "jpg" } else { kind }
                ),
                Some(kind) => {
                    bail!("{}: {kind} images are not supported (PNG and JPEG are); convert it to PNG", path.display())
                }
                None => {}
            }
            let flag = opts.raw_flag.unwrap_or("--dtype");
            Loaded::values(load_raw(path, &bytes, opts.dtype.or(opts.raw_dtype), flag)?)
        }
    };
    match opts.dtype {
        Some(to) if to != loaded.samples.dtype() => {
            let from = loaded.samples.dtype();
            let samples = loaded
                .samples
                .convert(to)
                .map_err(|e| anyhow!("{}: cannot convert {from} to {to} without loss: {e}", path.display()))?;
            Ok(Loaded { samples, ..loaded })
        }
        _ => Ok(loaded),
    }
}

/// The shape of a `.npy` file (for `(n, 2)` arrays of pairs).
pub fn npy_shape(path: &Path) -> anyhow::Result<Vec<u64>> {
    let bytes = read_input(path)?;
    Ok(npy_header(path, &bytes)?.shape)
}

/// What tally reads of a `.npy` header before handing the file to the decoder: the shape, and
/// that the data is as long as the shape and the item size say.
struct NpyHeader {
    shape: Vec<u64>,
}

/// Checks a `.npy` header: magic, version, header length, dtype (not Python objects), shape (a
/// tuple of integers whose product fits), and the data's length against shape x item size.
fn npy_header(path: &Path, bytes: &[u8]) -> anyhow::Result<NpyHeader> {
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
    let item_size = match descr.chars().next() {
        Some(q @ ('\'' | '"')) => {
            let inner: String = descr[1..].chars().take_while(|&c| c != q).collect();
            let code = inner.trim_start_matches(['<', '>', '|', '=']);
            if code.starts_with('O') {
                bail!(
                    "{}: an object array (dtype '{inner}') holds Python objects, not numbers; save it with a numeric dtype",
                    path.display()
                );
            }
            code.trim_start_matches(|c: char| c.is_ascii_alphabetic()).parse::<u64>().ok()
        }
        _ => None,
    };
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
        let have = (bytes.len() - data_at) as u64;
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
    Ok(NpyHeader { shape })
}

/// Weights, as the library takes them: f32 stays f32, every other type becomes f64.
pub enum Weights {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Weights {
    pub fn from_samples(s: Samples) -> Weights {
        use tally::Sample;
        match s {
            Samples::F32(v) => Weights::F32(v),
            Samples::F64(v) => Weights::F64(v),
            other => Weights::F64(with_vec!(other, v => v.iter().map(|x| x.to_f64()).collect())),
        }
    }

    pub fn dtype(&self) -> DType {
        match self {
            Weights::F32(_) => DType::F32,
            Weights::F64(_) => DType::F64,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Weights::F32(v) => v.len(),
            Weights::F64(v) => v.len(),
        }
    }

    /// Each weight `k` times in a row (one weight per pixel onto its `k` channels).
    pub fn repeat_each(self, k: usize) -> Weights {
        fn rep<T: Copy>(v: Vec<T>, k: usize) -> Vec<T> {
            v.into_iter().flat_map(|w| std::iter::repeat_n(w, k)).collect()
        }
        match self {
            Weights::F32(v) => Weights::F32(rep(v, k)),
            Weights::F64(v) => Weights::F64(rep(v, k)),
        }
    }
}

/// Runs `$body` with `$w` bound to the weights' slice, whatever their type.
macro_rules! with_weights {
    ($weights:expr, $w:ident => $body:expr) => {
        match $weights {
            Weights::F32(v) => {
                let $w = v.as_slice();
                $body
            }
            Weights::F64(v) => {
                let $w = v.as_slice();
                $body
            }
        }
    };
}
pub(crate) use with_weights;

/// Raw little-endian binary of `dtype`.
fn load_raw(path: &Path, bytes: &[u8], dtype: Option<DType>, flag: &str) -> anyhow::Result<Samples> {
    let Some(dtype) = dtype else {
        bail!("{}: raw binary input needs {flag} (u8, u16, i32, u32, i64, f32, f64)", path.display());
    };
    if !bytes.len().is_multiple_of(dtype.size()) {
        bail!(
            "{}: file length {} bytes is not a multiple of the {dtype} size ({} bytes); give its type with {flag}",
            path.display(),
            bytes.len(),
            dtype.size()
        );
    }
    Ok(with_type!(dtype, T => Samples::from(T::vec_from_le(bytes))))
}

fn load_npy(path: &Path, bytes: &[u8]) -> anyhow::Result<Samples> {
    use npyz::TypeChar::{Float, Int, Uint};

    let bad = |e: std::io::Error| anyhow!("{}: not a readable .npy file: {e}", path.display());
    npy_header(path, bytes)?;
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
        _ => bail!(
            "{}: unsupported .npy dtype {ts} (supported: signed and unsigned integers, float32, float64)",
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

/// One column of a CSV file. The first row is a header if any of its cells is not a number.
fn load_csv(path: &Path, bytes: &[u8], opts: &InputOptions) -> anyhow::Result<Samples> {
    let text = std::str::from_utf8(bytes).map_err(|e| anyhow!("{}: not UTF-8 text: {e}", path.display()))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // (1-based line number, cells); blank lines are skipped, as pandas does by default.
    let mut rows = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| (i + 1, split_csv_line(line)));

    let Some(first) = rows.next() else {
        return Ok(Samples::F64(Vec::new())); // load() converts to --dtype, if any
    };
    let header = first.1.iter().any(|c| c.parse::<f64>().is_err()).then(|| first.1.clone());
    let column = match (&opts.column, &header) {
        (None, _) => 0,
        (Some(name), Some(header)) => match header.iter().position(|h| h == name) {
            Some(i) => i,
            None => match name.parse::<usize>() {
                Ok(i) if i < header.len() => i,
                _ => bail!("{}: no column '{name}'; the header has: {}", path.display(), header.join(", ")),
            },
        },
        (Some(name), None) => match name.parse::<usize>() {
            Ok(i) if i < first.1.len() => i,
            Ok(_) => bail!("{}: no column {name}; the first row has {} columns", path.display(), first.1.len()),
            Err(_) => {
                bail!("{}: no column '{name}': the file has no header row (give a 0-based index)", path.display())
            }
        },
    };

    let data_rows = header.is_none().then_some(first).into_iter().chain(rows);
    let mut cells = Vec::new();
    for (line, row) in data_rows {
        let Some(cell) = row.into_iter().nth(column) else {
            bail!("{} line {line}: no column {column} (the row is too short)", path.display());
        };
        if cell.is_empty() {
            bail!("{} line {line}: empty cell in column {column}", path.display());
        }
        cells.push((line, cell));
    }
    let dtype = opts.dtype.unwrap_or(DType::F64);
    Ok(with_type!(dtype, T => Samples::from(parse_cells::<T>(path, dtype, &cells)?)))
}

/// Splits one CSV line on commas, trimming whitespace and one pair of surrounding quotes.
/// (Numeric data has no commas inside cells, so quoting is not otherwise interpreted.)
fn split_csv_line(line: &str) -> Vec<String> {
    line.split(',')
        .map(|cell| {
            let cell = cell.trim();
            let unquoted = cell.strip_prefix('"').and_then(|c| c.strip_suffix('"'));
            unquoted.unwrap_or(cell).trim().to_string()
        })
        .collect()
}

fn parse_cells<T: std::str::FromStr>(path: &Path, dtype: DType, cells: &[(usize, String)]) -> anyhow::Result<Vec<T>> {
    cells
        .iter()
        .map(|(line, cell)| {
            // Rust's float parser accepts "nan", "inf", "-inf" (any case), as wanted.
            cell.parse::<T>().map_err(|_| {
                if cell.parse::<f64>().is_ok() {
                    anyhow!("{} line {line}: '{cell}' is not a valid {dtype}", path.display())
                } else {
                    anyhow!("{} line {line}: '{cell}' is not a number", path.display())
                }
            })
        })
        .collect()
}

/// Images: 8-bit images as u8, 16-bit ones as u16 (every bit kept; `Loaded::note` says so).
fn load_image(path: &Path, bytes: &[u8], channels: Option<&[char]>) -> anyhow::Result<Loaded> {
    use image::ColorType;
    // The format is sniffed from the content, so a mislabelled .jpg that is a PNG still loads.
    let img = image::load_from_memory(bytes).map_err(|e| {
        // Some decoder messages span lines; the CLI prints one.
        let e = e.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
        anyhow!("{}: cannot decode image: {e}", path.display())
    })?;
    let wide = match img.color() {
        ColorType::L8 | ColorType::La8 | ColorType::Rgb8 | ColorType::Rgba8 => false,
        ColorType::L16 | ColorType::La16 | ColorType::Rgb16 | ColorType::Rgba16 => true,
        other => bail!("{}: {other:?} images are not supported (8- and 16-bit integer images are)", path.display()),
    };
    let note = wide.then(|| format!("{} is a 16-bit image: its samples are read as u16", path.display()));
    let Some(channels) = channels else {
        let samples = match (wide, img.color().has_color()) {
            (false, true) => Samples::U8(
                img.to_rgb8().pixels().map(|p| ((p[0] as u16 + p[1] as u16 + p[2] as u16) / 3) as u8).collect(),
            ),
            (false, false) => Samples::U8(img.to_luma8().into_raw()),
            (true, true) => Samples::U16(
                img.to_rgb16().pixels().map(|p| ((p[0] as u32 + p[1] as u32 + p[2] as u32) / 3) as u16).collect(),
            ),
            (true, false) => Samples::U16(img.to_luma16().into_raw()),
        };
        return Ok(Loaded { samples, interleave: 1, selected: vec![0], labels: vec!["brightness".into()], note });
    };

    if channels.is_empty() {
        bail!("--channels is empty; give some of r, g, b, a");
    }
    let mut selected = Vec::with_capacity(channels.len());
    let mut labels = Vec::with_capacity(channels.len());
    for &c in channels {
        let c = c.to_ascii_lowercase();
        let Some(index) = "rgba".find(c) else {
            bail!("unknown channel '{c}' (channels are r, g, b, a)");
        };
        if selected.contains(&(index as u32)) {
            bail!("channel '{c}' is given twice");
        }
        selected.push(index as u32);
        labels.push(c.to_string());
    }
    let samples = if wide { Samples::U16(img.to_rgba16().into_raw()) } else { Samples::U8(img.to_rgba8().into_raw()) };
    Ok(Loaded { samples, interleave: 4, selected, labels, note })
}

/// `--channels`: `r,g,b`, or letters run together (`rgb`).
pub fn parse_channels(items: &[String]) -> anyhow::Result<Vec<char>> {
    let mut out = Vec::new();
    for item in items {
        let item = item.trim();
        if item.chars().count() > 1 && !item.chars().all(|c| "rgbaRGBA".contains(c)) {
            bail!("unknown channel '{item}' (channels are r, g, b, a: e.g. --channels r,g,b or rgb)");
        }
        out.extend(item.chars());
    }
    Ok(out)
}

/// A sample value, exactly: every integer dtype fits in i128 and every float in f64.
#[derive(Clone, Copy)]
enum Num {
    Int(i128),
    Float(f64),
}

/// The first value of a conversion that the target type cannot hold exactly.
struct Lossy {
    index: usize,
    value: Num,
}

impl fmt::Display for Lossy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Num::Int(i) => write!(f, "element {} is {i}", self.index),
            Num::Float(x) => write!(f, "element {} is {x}", self.index),
        }
    }
}

/// Element types: little-endian decoding and exact conversion through `Num`.
trait Elem: Copy + Sized {
    fn vec_from_le(bytes: &[u8]) -> Vec<Self>;
    fn to_num(self) -> Num;
    /// `None` when `n` is not exactly representable.
    fn from_num(n: Num) -> Option<Self>;
}

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            fn vec_from_le(bytes: &[u8]) -> Vec<Self> {
                let (chunks, _) = bytes.as_chunks::<{ size_of::<$t>() }>();
                chunks.iter().map(|c| <$t>::from_le_bytes(*c)).collect()
            }
            fn to_num(self) -> Num {
                Num::Int(self as i128)
            }
            fn from_num(n: Num) -> Option<Self> {
                match n {
                    Num::Int(i) => <$t>::try_from(i).ok(),
                    // fract() is NaN for infinities and NaN, so only integral values pass; they
                    // convert to i128 exactly (or saturate far outside every target's range).
                    Num::Float(x) if x.fract() == 0.0 => <$t>::try_from(x as i128).ok(),
                    Num::Float(_) => None,
                }
            }
        }
    )*};
}
int_elem!(u8, u16, i32, u32, i64, u64);

macro_rules! float_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            fn vec_from_le(bytes: &[u8]) -> Vec<Self> {
                let (chunks, _) = bytes.as_chunks::<{ size_of::<$t>() }>();
                chunks.iter().map(|c| <$t>::from_le_bytes(*c)).collect()
            }
            fn to_num(self) -> Num {
                Num::Float(self as f64)
            }
            fn from_num(n: Num) -> Option<Self> {
                match n {
                    Num::Int(i) => {
                        let x = i as $t;
                        (x as i128 == i).then_some(x)
                    }
                    Num::Float(x) => {
                        let y = x as $t;
                        (y as f64 == x || x.is_nan()).then_some(y)
                    }
                }
            }
        }
    )*};
}
float_elem!(f32, f64);

fn cast<S: Elem, T: Elem>(v: &[S]) -> Result<Vec<T>, Lossy> {
    v.iter().enumerate().map(|(index, &s)| T::from_num(s.to_num()).ok_or(Lossy { index, value: s.to_num() })).collect()
}

macro_rules! samples_from {
    ($($variant:ident($t:ty)),*) => {$(
        impl From<Vec<$t>> for Samples {
            fn from(v: Vec<$t>) -> Self {
                Samples::$variant(v)
            }
        }
    )*};
}
samples_from!(U8(u8), U16(u16), I32(i32), U32(u32), I64(i64), F32(f32), F64(f64));

#[cfg(test)]
mod tests {
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
        image::RgbImage::from_raw(3, 2, raw).unwrap().save(&t.0).unwrap();

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
        image::GrayImage::from_raw(2, 1, vec![7, 250]).unwrap().save(&t.0).unwrap();
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
            if let Err(e) = load_image(&path("f.png"), &b, channels.as_deref()) {
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
                image::ImageBuffer::<image::Luma<u16>, _>::from_raw(w, h, v).unwrap().save(&t.0).unwrap();
            } else {
                let v: Vec<u8> = (0..3 * n).map(|i| (seed as usize).wrapping_mul(i + 7) as u8).collect();
                image::RgbImage::from_raw(w, h, v).unwrap().save(&t.0).unwrap();
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
}
