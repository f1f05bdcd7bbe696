//! `tally select`: the values of a file that pass a predicate (`--where 'x > 0 && x < 1'`), in
//! their order, in no particular order (`--unordered`), their indices (`--indices`) or the whole
//! file partitioned (`--partition`: the passing values first, then the rest), written to a
//! `.npy` file (or raw little-endian bytes for any other extension), with a one-line or JSON
//! summary. A predicate that does not parse is an error that names the byte of the problem.

use super::devices::{DevicesArg, Engine};
use super::input::{with_vec, Samples};
use super::scan::{write_values, OutValue};
use super::{BackendArg, ValuesArg};
use anyhow::bail;
use serde_json::json;
use std::path::{Path, PathBuf};
use tally::{Predicate, SelectElement, SelectOptions};

/// Arguments of `tally select`.
#[derive(clap::Args, Debug)]
pub struct SelectArgs {
    #[command(flatten)]
    pub values: ValuesArg,
    /// The predicate on each value x, e.g. `x > 0 && x < 1`, `!isnan(x) && x != 3`
    /// (docs/SELECT.md has the grammar). A predicate may start with '-' (`-1 < x`).
    #[arg(long = "where", allow_hyphen_values = true)]
    pub predicate: String,
    /// Output: `.npy`, or raw little-endian values for any other extension.
    #[arg(long)]
    pub out: PathBuf,
    /// The passing values in no particular order (GPU: faster; the CPU keeps the order).
    #[arg(long)]
    pub unordered: bool,
    /// Write the indices (u64) of the passing values instead of the values (one device).
    #[arg(long, conflicts_with_all = ["partition", "unordered", "devices"])]
    pub indices: bool,
    /// Write every value: the passing ones first, then the rest, each in their order (one
    /// device).
    #[arg(long, conflicts_with_all = ["unordered", "devices"])]
    pub partition: bool,
    #[command(flatten)]
    pub backend: BackendArg,
    #[command(flatten)]
    pub devices: DevicesArg,
    /// Print JSON: where (the predicate as tally reads it), kept, count (values read), mode,
    /// dtype, backend, out.
    #[arg(long)]
    pub json: bool,
}

/// What to write.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Values,
    Indices,
    Partition,
}

fn select_typed<T: SelectElement + OutValue>(
    backend: &Engine,
    data: &[T],
    p: &Predicate,
    mode: Mode,
    unordered: bool,
    out: &Path,
) -> anyhow::Result<u64> {
    Ok(match mode {
        Mode::Values => {
            let v = backend.select_vec(data, p, SelectOptions { unordered, ..SelectOptions::default() })?;
            write_values(out, &v)?;
            v.len() as u64
        }
        Mode::Indices => {
            let v = backend.one("--indices")?.select_indices_vec(data, p)?;
            write_values(out, &v)?;
            v.len() as u64
        }
        Mode::Partition => {
            let (v, kept) = backend.one("--partition")?.partition_vec(data, p)?;
            write_values(out, &v)?;
            kept
        }
    })
}

/// Runs `tally select`.
pub fn run(a: SelectArgs) -> anyhow::Result<()> {
    let p = Predicate::parse(&a.predicate)?;
    if a.out.as_os_str().is_empty() || a.out == Path::new("-") {
        bail!("--out needs a file name (.npy, or raw bytes for any other extension)");
    }
    let mode = match (a.indices, a.partition) {
        (true, _) => Mode::Indices,
        (_, true) => Mode::Partition,
        _ => Mode::Values,
    };
    let samples = a.values.load()?;
    let backend = Engine::open(&a.backend, &a.devices)?;
    let n = samples.len();
    let kept = with_vec!(&samples, v => select_typed(&backend, v, &p, mode, a.unordered, &a.out))?;
    let dtype = samples.dtype().name();
    let mode_name = match mode {
        Mode::Values if a.unordered => "unordered",
        Mode::Values => "values",
        Mode::Indices => "indices",
        Mode::Partition => "partition",
    };
    if a.json {
        let doc = json!({
            "where": p.canonical(),
            "kept": kept,
            "count": n,
            "mode": mode_name,
            "dtype": dtype,
            "backend": backend.name(),
            "out": a.out.display().to_string(),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    println!(
        "kept {kept} of {n} values where {} ({mode_name}, {dtype}) into {}  ({} backend)",
        p.canonical(),
        a.out.display(),
        backend.name()
    );
    Ok(())
}
