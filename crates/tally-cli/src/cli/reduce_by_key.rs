//! `tally reduce-by-key`: the sum, minimum, maximum or count of the values of every run of equal
//! consecutive keys, with the run's key, written to `.npy` files (or raw little-endian bytes for
//! any other extension). Sums follow numpy's rule: signed integers into i64, unsigned into u64.

use super::input::{self, with_vec, InputOptions, Samples};
use super::rle::check_out;
use super::scan::{write_values, OutValue};
use super::BackendArg;
use anyhow::bail;
use serde_json::json;
use std::path::{Path, PathBuf};
use tally::scan::ScanElement;
use tally::{Backend, DType, ReduceByKeyInto, RunKey, RunOp, ScanValue};

/// Arguments of `tally reduce-by-key`.
#[derive(clap::Args, Debug)]
pub struct ReduceByKeyArgs {
    /// The keys: raw binary (needs --key-dtype), .npy, .csv (--key-column) or `-` for standard input.
    pub keys: PathBuf,
    /// The values, one per key: raw binary (needs --value-dtype), .npy or .csv (--value-column).
    pub values: PathBuf,
    /// Element type of a raw keys file (u8, u16, i32, u32, i64, f32, f64, f16, bf16).
    #[arg(long, value_parser = super::hist::parse_dtype)]
    pub key_dtype: Option<DType>,
    /// Element type of a raw values file.
    #[arg(long, value_parser = super::hist::parse_dtype)]
    pub value_dtype: Option<DType>,
    /// CSV column of the keys, by header name or 0-based index.
    #[arg(long)]
    pub key_column: Option<String>,
    /// CSV column of the values.
    #[arg(long)]
    pub value_column: Option<String>,
    /// sum, min, max or count.
    #[arg(long, default_value = "sum")]
    pub op: String,
    /// The key of every run.
    #[arg(long)]
    pub out_keys: PathBuf,
    /// The combined value of every run.
    #[arg(long)]
    pub out_values: PathBuf,
    #[command(flatten)]
    pub backend: BackendArg,
    /// Print JSON: op, runs, count (values read), key_dtype, dtype (of the output values), backend.
    #[arg(long)]
    pub json: bool,
}

/// The op `name`.
pub fn parse_op(name: &str) -> anyhow::Result<RunOp> {
    Ok(match name {
        "sum" => RunOp::Sum,
        "min" => RunOp::Min,
        "max" => RunOp::Max,
        "count" => RunOp::Count,
        _ => bail!("unknown op '{name}' (expected sum, min, max or count)"),
    })
}

fn load(path: &Path, dtype: Option<DType>, column: &Option<String>, flag: &'static str) -> anyhow::Result<Samples> {
    let options = InputOptions { dtype, column: column.clone(), raw_flag: Some(flag), ..Default::default() };
    let loaded = input::load(path, &options)?;
    if let Some(note) = &loaded.note {
        eprintln!("tally: {note}");
    }
    Ok(loaded.samples)
}

fn reduce_into<K: RunKey + OutValue, V: ReduceByKeyInto<O>, O: ScanValue + OutValue>(
    backend: &Backend,
    keys: &[K],
    values: &[V],
    op: RunOp,
    a: &ReduceByKeyArgs,
) -> anyhow::Result<(usize, &'static str)> {
    let (k, v): (Vec<K>, Vec<O>) = backend.reduce_by_key_vec(keys, values, op)?;
    write_values(&a.out_keys, &k)?;
    write_values(&a.out_values, &v)?;
    Ok((k.len(), O::TYPE.name()))
}

fn reduce_typed<K, V>(
    backend: &Backend,
    keys: &[K],
    values: &[V],
    op: RunOp,
    a: &ReduceByKeyArgs,
) -> anyhow::Result<(usize, &'static str)>
where
    K: RunKey + OutValue,
    V: ScanElement + ReduceByKeyInto<V::Extreme> + ReduceByKeyInto<V::Wide> + ReduceByKeyInto<u64> + OutValue,
    V::Wide: OutValue,
    V::Extreme: OutValue,
{
    match op {
        RunOp::Sum => reduce_into::<K, V, V::Wide>(backend, keys, values, op, a),
        RunOp::Count => reduce_into::<K, V, u64>(backend, keys, values, op, a),
        RunOp::Min | RunOp::Max => reduce_into::<K, V, V::Extreme>(backend, keys, values, op, a),
    }
}

/// Runs `tally reduce-by-key`.
pub fn run(a: ReduceByKeyArgs) -> anyhow::Result<()> {
    let op = parse_op(&a.op)?;
    check_out("--out-keys", &a.out_keys)?;
    check_out("--out-values", &a.out_values)?;
    let keys = load(&a.keys, a.key_dtype, &a.key_column, "--key-dtype")?;
    let values = load(&a.values, a.value_dtype, &a.value_column, "--value-dtype")?;
    if keys.len() != values.len() {
        bail!("{} keys for {} values: reduce-by-key needs one key per value", keys.len(), values.len());
    }
    let backend = a.backend.open()?;
    let (runs, dtype) = with_vec!(&keys, k => with_vec!(&values, v => reduce_typed(&backend, k, v, op, &a)))?;
    if a.json {
        let doc = json!({
            "op": op.name(),
            "runs": runs,
            "count": values.len(),
            "key_dtype": keys.dtype().name(),
            "dtype": dtype,
            "backend": backend.name(),
            "out_keys": a.out_keys.display().to_string(),
            "out_values": a.out_values.display().to_string(),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    println!(
        "{} of {} values in {runs} runs of equal keys into {} ({dtype})  ({} backend)",
        op.name(),
        values.len(),
        a.out_values.display(),
        backend.name()
    );
    Ok(())
}
