//! `tally scan`: the running sum, minimum or maximum of a file's values (inclusive or
//! exclusive), written to a `.npy` file (or raw little-endian bytes for any other extension),
//! with a one-line or JSON summary. Integer sums follow numpy's cumsum: signed integers into
//! i64, unsigned ones into u64.

use super::devices::{DevicesArg, Engine};
use super::input::{with_vec, Samples};
use super::output::{json_integer, json_number};
use super::{BackendArg, ValuesArg};
use anyhow::{bail, Context};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use tally::scan::{ScanElement, ScanInto, ScanOp, ScanOptions, ScanValue};

/// Arguments of `tally scan`.
#[derive(clap::Args, Debug)]
pub struct ScanArgs {
    #[command(flatten)]
    pub values: ValuesArg,
    /// sum, min or max.
    #[arg(long, default_value = "sum")]
    pub op: String,
    /// Element i gets the combination of the elements before it (the identity first).
    #[arg(long)]
    pub exclusive: bool,
    /// Output: `.npy`, or raw little-endian values for any other extension.
    #[arg(long)]
    pub out: PathBuf,
    #[command(flatten)]
    pub backend: BackendArg,
    #[command(flatten)]
    pub devices: DevicesArg,
    /// Print JSON: op, exclusive, count, last (the final inclusive value), dtype, backend, out.
    #[arg(long)]
    pub json: bool,
}

/// The op `name`.
pub fn parse_op(name: &str) -> anyhow::Result<ScanOp> {
    Ok(ScanOp::from_name(name)?)
}

/// Values that can be written as raw little-endian bytes and to `.npy`.
pub trait OutValue: ScanValue {
    /// Appends the value's little-endian bytes.
    fn put_le(self, out: &mut Vec<u8>);
    /// Writes `values` as a one-dimensional `.npy` file.
    fn write_npy(path: &Path, values: &[Self]) -> std::io::Result<()>;
}

macro_rules! out_value {
    ($($t:ty),*) => {$(
        impl OutValue for $t {
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn write_npy(path: &Path, values: &[Self]) -> std::io::Result<()> {
                npyz::to_file_1d(path, values.iter().copied())
            }
        }
    )*};
}
out_value!(u8, u16, i32, u32, i64, u64, f32, f64, tally::half::f16);

impl OutValue for tally::half::bf16 {
    fn put_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn write_npy(path: &Path, _: &[Self]) -> std::io::Result<()> {
        let why = format!("{}: bf16 has no numpy dtype; write raw bytes (any other extension)", path.display());
        Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, why))
    }
}

/// A value for JSON: integers exactly, non-finite floats as "nan", "inf", "-inf".
pub fn json_value<O: ScanValue>(x: O) -> Value {
    if O::TYPE.is_float() {
        json_number(x.to_f64())
    } else {
        json_integer(x.to_i128())
    }
}

/// Writes `values` to `path`: `.npy` by extension, else raw little-endian bytes.
pub fn write_values<O: OutValue>(path: &Path, values: &[O]) -> anyhow::Result<()> {
    let npy = path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("npy"));
    let result = if npy {
        O::write_npy(path, values)
    } else {
        let mut bytes = Vec::with_capacity(std::mem::size_of_val(values));
        for &v in values {
            v.put_le(&mut bytes);
        }
        std::fs::write(path, bytes)
    };
    result.with_context(|| format!("cannot write '{}'", path.display()))
}

/// What a scan produced, for the summary.
struct Summary {
    count: usize,
    last: Option<Value>,
    dtype: &'static str,
}

fn scan_into<T: ScanInto<O>, O: OutValue>(
    backend: &Engine,
    data: &[T],
    op: ScanOp,
    exclusive: bool,
    out: &Path,
) -> anyhow::Result<Summary> {
    let options = if exclusive { ScanOptions::exclusive() } else { ScanOptions::default() };
    let values: Vec<O> = backend.scan_vec(data, op, options)?;
    // The final inclusive value: an exclusive scan's last element combined with the last input.
    let last = match (values.last(), data.last()) {
        (Some(&v), Some(&x)) => Some(json_value(if exclusive { op.apply(v, x.convert()) } else { v })),
        _ => None,
    };
    write_values(out, &values)?;
    Ok(Summary { count: values.len(), last, dtype: O::TYPE.name() })
}

fn scan_typed<T>(backend: &Engine, data: &[T], op: ScanOp, exclusive: bool, out: &Path) -> anyhow::Result<Summary>
where
    T: ScanElement + OutValue,
    T::Wide: OutValue,
    T::Extreme: OutValue,
{
    match op {
        ScanOp::Sum => scan_into::<T, T::Wide>(backend, data, op, exclusive, out),
        _ => scan_into::<T, T::Extreme>(backend, data, op, exclusive, out),
    }
}

/// Runs `tally scan`.
pub fn run(a: ScanArgs) -> anyhow::Result<()> {
    let op = parse_op(&a.op)?;
    if a.out.as_os_str().is_empty() || a.out == Path::new("-") {
        bail!("--out needs a file name (.npy, or raw bytes for any other extension)");
    }
    let samples = a.values.load()?;
    let backend = Engine::open(&a.backend, &a.devices)?;
    let s = with_vec!(&samples, v => scan_typed(&backend, v, op, a.exclusive, &a.out))?;
    let last = s.last.unwrap_or(Value::Null);
    if a.json {
        let doc = json!({
            "op": op.name(),
            "exclusive": a.exclusive,
            "count": s.count,
            "last": last,
            "dtype": s.dtype,
            "backend": backend.name(),
            "out": a.out.display().to_string(),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    let kind = if a.exclusive { "exclusive" } else { "inclusive" };
    println!(
        "{kind} {} scan of {} elements into {} ({}), last = {last}  ({} backend)",
        op.name(),
        s.count,
        a.out.display(),
        s.dtype,
        backend.name()
    );
    Ok(())
}
