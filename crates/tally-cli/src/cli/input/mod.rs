//! Loading sample files for `tally hist FILE`.
//!
//! The format is chosen by extension (case-insensitive): `.npy`, `.csv`, `.png`/`.jpg`/`.jpeg`,
//! and anything else is raw little-endian binary of `--dtype`. If `InputOptions::dtype` is
//! given, the samples come back in that dtype or the load fails; values are never silently
//! changed (a conversion that would lose information is an error).

use std::path::Path;

use anyhow::{anyhow, bail};
use tally::DType;

mod convert;
mod csv;
mod image;
mod npy;

use self::convert::{cast, Elem, Lossy};
use self::csv::load_csv;
use self::image::load_image;
pub use self::image::parse_channels;
use self::npy::load_npy;
pub use self::npy::{npy_plain_data, npy_shape};

/// Samples of one of the nine dtypes.
#[derive(Clone, Debug, PartialEq)]
pub enum Samples {
    U8(Vec<u8>),
    U16(Vec<u16>),
    I32(Vec<i32>),
    U32(Vec<u32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    F16(Vec<tally::half::f16>),
    BF16(Vec<tally::half::bf16>),
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
            Samples::F16($v) => $body,
            Samples::BF16($v) => $body,
        }
    };
}
pub(crate) use with_vec;

/// Runs `$body` with the type alias `$T` naming the Rust type of the dtype `$dtype`.
macro_rules! with_type {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::cli::input::with_type!(@arms $dtype, $T, $body;
            U8 u8, U16 u16, I32 i32, U32 u32, I64 i64, F32 f32, F64 f64, F16 tally::half::f16,
            BF16 tally::half::bf16)
    };
    (@arms $dtype:expr, $T:ident, $body:expr; $($variant:ident $t:ty),*) => {
        match $dtype {
            $(DType::$variant => {
                type $T = $t;
                $body
            })*
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
            Samples::F16(_) => DType::F16,
            Samples::BF16(_) => DType::BF16,
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
    /// An image loaded for its brightness histogram (`InputOptions::image_pixels`): its shape;
    /// `samples` then hold its colour channels, interleaved per pixel.
    pub image: Option<tally::Image>,
}

impl Loaded {
    /// Plain, non-interleaved data.
    fn values(samples: Samples) -> Loaded {
        Loaded { samples, interleave: 1, selected: vec![0], labels: vec!["value".into()], note: None, image: None }
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
    /// Images without `channels`: their colour channels as stored and their shape
    /// (`Loaded::image`), for the library's brightness histogram; otherwise the brightness
    /// itself, as the integer part of the mean of the colour channels.
    pub image_pixels: bool,
}

/// Image formats tally does not decode, by extension and by their magic bytes.
const OTHER_IMAGES: [(&str, &[&str]); 5] = [
    ("PPM/PGM/PBM", &["ppm", "pgm", "pbm", "pnm", "pam"]),
    ("BMP", &["bmp", "dib"]),
    ("GIF", &["gif"]),
    ("TIFF", &["tif", "tiff"]),
    ("WebP", &["webp"]),
];

/// What the first bytes of a file of `total` bytes say the content is, where they say it clearly.
fn sniff(bytes: &[u8], total: u64) -> Option<&'static str> {
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
    } else if b.len() >= 14 && &b[..2] == b"BM" && u32::from_le_bytes([b[2], b[3], b[4], b[5]]) as u64 == total {
        Some("BMP")
    } else {
        None
    }
}

/// An error where the extension `ext` names an image format tally does not decode.
fn refuse_other_image_name(path: &Path, ext: &str) -> anyhow::Result<()> {
    if let Some((name, _)) = OTHER_IMAGES.iter().find(|(_, exts)| exts.contains(&ext)) {
        bail!("{}: {name} images are not supported (PNG and JPEG are); convert it to PNG", path.display());
    }
    Ok(())
}

/// An error where a file taken as raw numbers (its first bytes `head`, `total` bytes in all) is
/// plainly something else.
fn refuse_other_content(path: &Path, head: &[u8], total: u64) -> anyhow::Result<()> {
    match sniff(head, total) {
        Some(kind @ ("npy" | "png" | "jpeg")) => bail!(
            "{}: the content is {kind} but the name does not say so; name it .{}",
            path.display(),
            if kind == "jpeg" { "jpg" } else { kind }
        ),
        Some(kind) => {
            bail!("{}: {kind} images are not supported (PNG and JPEG are); convert it to PNG", path.display())
        }
        None => Ok(()),
    }
}

/// The checks [`load`] makes of a raw file of `dtype` before reading it as numbers, for a
/// reader that streams it: its name, its first bytes, its length.
pub fn check_raw_file(path: &Path, dtype: DType, flag: &str) -> anyhow::Result<()> {
    use std::io::Read;
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).unwrap_or_default();
    refuse_other_image_name(path, &ext)?;
    let cannot = |e: std::io::Error| anyhow!("cannot read {}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(cannot)?;
    let len = file.metadata().map_err(cannot)?.len();
    let mut head = Vec::new();
    file.take(16).read_to_end(&mut head).map_err(cannot)?;
    refuse_other_content(path, &head, len)?;
    check_raw_length(path, len, dtype, flag)
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
    refuse_other_image_name(path, &ext)?;
    let bytes = read_input(path)?;
    if stdin {
        ext = match sniff(&bytes, bytes.len() as u64) {
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
        _ if is_image => load_image(path, &bytes, opts.channels.as_deref(), opts.image_pixels)?,
        _ => {
            refuse_other_content(path, &bytes, bytes.len() as u64)?;
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

/// That a raw file of `len` bytes holds whole elements of `dtype`.
fn check_raw_length(path: &Path, len: u64, dtype: DType, flag: &str) -> anyhow::Result<()> {
    if !len.is_multiple_of(dtype.size() as u64) {
        bail!(
            "{}: file length {len} bytes is not a multiple of the {dtype} size ({} bytes); give its type with {flag}",
            path.display(),
            dtype.size()
        );
    }
    Ok(())
}

/// Raw little-endian binary of `dtype`.
fn load_raw(path: &Path, bytes: &[u8], dtype: Option<DType>, flag: &str) -> anyhow::Result<Samples> {
    let Some(dtype) = dtype else {
        bail!("{}: raw binary input needs {flag} (u8, u16, i32, u32, i64, f32, f64)", path.display());
    };
    check_raw_length(path, bytes.len() as u64, dtype, flag)?;
    Ok(with_type!(dtype, T => Samples::from(T::vec_from_le(bytes))))
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
samples_from!(
    U8(u8),
    U16(u16),
    I32(i32),
    U32(u32),
    I64(i64),
    F32(f32),
    F64(f64),
    F16(tally::half::f16),
    BF16(tally::half::bf16)
);

#[cfg(test)]
mod tests;
