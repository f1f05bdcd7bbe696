//! `tally rle`: the runs of equal consecutive values of a file (run-length encoding): the first
//! value of every run and its length, written to `.npy` files (or raw little-endian bytes for
//! any other extension), with a one-line or JSON summary. `--unique-only` writes the values
//! alone (consecutive duplicates dropped).

use super::input::{self, with_vec, InputOptions, Samples};
use super::scan::{write_values, OutValue};
use super::BackendArg;
use anyhow::bail;
use serde_json::json;
use std::path::{Path, PathBuf};
use tally::{Backend, DType, RunKey};

/// The input file of a subcommand that reads one: the same arguments as `tally scan` and
/// `tally reduce`.
#[derive(clap::Args, Debug)]
pub struct InputArgs {
    /// Input file: raw binary (needs --dtype), .npy, .csv (--column) or `-` for standard input.
    pub input: PathBuf,
    /// Element type of raw files (u8, u16, i32, u32, i64, f32, f64, f16, bf16); CSV columns parse as this.
    #[arg(long, value_parser = super::hist::parse_dtype)]
    pub dtype: Option<DType>,
    /// CSV column, by header name or 0-based index.
    #[arg(long)]
    pub column: Option<String>,
}

impl InputArgs {
    /// The file's values (a note about the loading, if any, on stderr).
    pub fn load(&self) -> anyhow::Result<Samples> {
        let options = InputOptions { dtype: self.dtype, column: self.column.clone(), ..Default::default() };
        let loaded = input::load(&self.input, &options)?;
        if let Some(note) = &loaded.note {
            eprintln!("tally: {note}");
        }
        Ok(loaded.samples)
    }
}

/// Arguments of `tally rle`.
#[derive(clap::Args, Debug)]
pub struct RleArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// The first value of every run: `.npy`, or raw little-endian values for any other extension.
    #[arg(long)]
    pub out_values: PathBuf,
    /// The length of every run (u64).
    #[arg(long)]
    pub out_counts: Option<PathBuf>,
    /// Write the values alone (unique: consecutive duplicates dropped); no --out-counts.
    #[arg(long)]
    pub unique_only: bool,
    #[command(flatten)]
    pub backend: BackendArg,
    /// Print JSON: runs, count (values read), dtype, backend, out_values, out_counts.
    #[arg(long)]
    pub json: bool,
}

/// Refuses an output name that is no file.
pub fn check_out(flag: &str, path: &Path) -> anyhow::Result<()> {
    if path.as_os_str().is_empty() || path == Path::new("-") {
        bail!("{flag} needs a file name (.npy, or raw bytes for any other extension)");
    }
    Ok(())
}

fn encode<K: RunKey + OutValue>(backend: &Backend, keys: &[K], a: &RleArgs) -> anyhow::Result<usize> {
    if a.unique_only {
        let values = backend.unique_vec(keys)?;
        write_values(&a.out_values, &values)?;
        return Ok(values.len());
    }
    let (values, counts) = backend.run_length_encode_vec(keys)?;
    write_values(&a.out_values, &values)?;
    if let Some(path) = &a.out_counts {
        write_values(path, &counts)?;
    }
    Ok(values.len())
}

/// Runs `tally rle`.
pub fn run(a: RleArgs) -> anyhow::Result<()> {
    check_out("--out-values", &a.out_values)?;
    match (&a.out_counts, a.unique_only) {
        (Some(_), true) => bail!("--unique-only writes no counts: leave out --out-counts"),
        (None, false) => bail!("--out-counts is needed (or --unique-only, for the values alone)"),
        (Some(path), false) => check_out("--out-counts", path)?,
        (None, true) => {}
    }
    let samples = a.input.load()?;
    let backend = a.backend.open()?;
    let runs = with_vec!(&samples, v => encode(&backend, v, &a))?;
    let dtype = samples.dtype().name();
    if a.json {
        let doc = json!({
            "runs": runs,
            "count": samples.len(),
            "dtype": dtype,
            "backend": backend.name(),
            "out_values": a.out_values.display().to_string(),
            "out_counts": a.out_counts.as_ref().map(|p| p.display().to_string()),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    let what = if a.unique_only { "unique values" } else { "runs" };
    println!("{runs} {what} in {} {dtype} values  ({} backend)", samples.len(), backend.name());
    Ok(())
}
