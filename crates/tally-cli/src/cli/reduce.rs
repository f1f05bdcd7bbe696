//! `tally reduce`: one reduction of a file's values (sum, min, max, minmax, argmin, argmax,
//! mean, count of values passing a comparison), as text or JSON.

use super::devices::{DevicesArg, Engine};
use super::input::{with_type, with_vec, Samples};
use super::output::{json_integer, json_number};
use super::stream::{self, Progress};
use super::{BackendArg, ValuesArg};
use anyhow::bail;
use serde_json::{json, Value};
use tally::reduce::{CmpOp, Compare, ReduceElement, ReduceOp, ReduceOptions, Reduction};
use tally::DType;

/// Arguments of `tally reduce`.
#[derive(clap::Args, Debug)]
pub struct ReduceArgs {
    #[command(flatten)]
    pub values: ValuesArg,
    /// sum, min, max, minmax, argmin, argmax, mean, or count (with --where).
    #[arg(long, default_value = "sum")]
    pub op: String,
    /// For --op count: the comparison to count, as OP VALUE: `>0.5`, `<=3`, `==0`, `!=1`.
    #[arg(long = "where")]
    pub condition: Option<String>,
    /// Float sums and means: the exact sum, correctly rounded (what math.fsum gives).
    #[arg(long)]
    pub exact: bool,
    /// Leave NaNs out (numpy's nansum, nanmin, ...) and report how many.
    #[arg(long)]
    pub skip_nan: bool,
    #[command(flatten)]
    pub backend: BackendArg,
    #[command(flatten)]
    pub devices: DevicesArg,
    /// Print JSON: op, value (minmax: min and max), index, count (elements read), nan.
    #[arg(long)]
    pub json: bool,
}

/// `x OP value` from `>0.5` and its kin.
pub fn parse_compare(s: &str) -> anyhow::Result<Compare> {
    let s = s.trim();
    let Some((text, op)) = CmpOp::SYMBOLS.iter().find(|(t, _)| s.starts_with(t)) else {
        bail!("--where '{s}': expected a comparison such as '>0.5', '<=3', '==0' or '!=1'");
    };
    let value = s[text.len()..].trim();
    let value: f64 = value.parse().map_err(|_| anyhow::anyhow!("--where '{s}': '{value}' is not a number"))?;
    Ok(Compare::new(*op, value))
}

/// The op `name` (with `condition` for count).
pub fn parse_op(name: &str, condition: Option<&str>) -> anyhow::Result<ReduceOp> {
    match (name, condition) {
        ("count", None) => bail!("--op count needs --where, e.g. --where '>0'"),
        ("count", Some(c)) => Ok(ReduceOp::from_name(name, Some(parse_compare(c)?))?),
        (_, Some(_)) if ReduceOp::from_name(name, None).is_ok() => bail!("--where goes with --op count"),
        _ => Ok(ReduceOp::from_name(name, None)?),
    }
}

/// A value: the exact integer where there is one, else the f64.
fn exact_or(exact: Option<i128>, x: f64) -> Value {
    match exact {
        Some(i) => json_integer(i),
        None => json_number(x),
    }
}

fn text(x: Option<i128>, v: f64) -> String {
    match x {
        Some(i) => i.to_string(),
        None => format!("{v}"),
    }
}

fn reduce_typed<T: ReduceElement>(
    backend: &Engine,
    data: &[T],
    op: ReduceOp,
    options: ReduceOptions,
) -> anyhow::Result<(Reduction, u64)> {
    let r = backend.reduce(data, op, options)?;
    let nan = nans_of(&r, options, || Ok(backend.reduce(data, ReduceOp::Sum, ReduceOptions::skip_nan())?))?;
    Ok((r, nan))
}

/// The NaNs that `r` saw: counted along the way with --skip-nan (and none among integers), else
/// by one more pass, `skipping_nans` (a sum that skips them).
fn nans_of(
    r: &Reduction,
    options: ReduceOptions,
    skipping_nans: impl FnOnce() -> anyhow::Result<Reduction>,
) -> anyhow::Result<u64> {
    if options.skip_nan || !r.dtype.is_float() {
        return Ok(r.nan_skipped);
    }
    Ok(skipping_nans()?.nan_skipped)
}

/// Runs `tally reduce`.
pub fn run(a: ReduceArgs) -> anyhow::Result<()> {
    let op = parse_op(&a.op, a.condition.as_deref())?;
    if a.exact && !matches!(op, ReduceOp::Sum | ReduceOp::Mean) {
        bail!("--exact goes with --op sum or mean");
    }
    let options = ReduceOptions { skip_nan: a.skip_nan, exact: a.exact };
    // A device set takes the file whole, split over its devices.
    let streamed = match (&a.values.column, &a.devices.devices) {
        (None, None) => stream::streamed_file(&a.values.input, a.values.dtype, "--dtype")?,
        _ => None,
    };
    let (r, nan) = match streamed {
        // A raw or plain .npy file is streamed through the pipeline, never held whole.
        Some(file) => {
            let backend = a.backend.open()?;
            with_type!(file.dtype, T => {
                let r = backend.reduce_stream(&mut Progress::<T>::open(&file, a.json)?, op, options)?;
                let nan = nans_of(&r, options, || {
                    let nans = ReduceOptions::skip_nan();
                    Ok(backend.reduce_stream(&mut Progress::<T>::open(&file, true)?, ReduceOp::Sum, nans)?)
                })?;
                (r, nan)
            })
        }
        _ => {
            let samples = a.values.load()?;
            let backend = Engine::open(&a.backend, &a.devices)?;
            with_vec!(&samples, v => reduce_typed(&backend, v, op, options))?
        }
    };
    if a.json {
        let mut doc =
            json!({ "op": op.name(), "count": r.n, "nan": nan, "backend": r.backend, "dtype": r.dtype.name() });
        let m = doc.as_object_mut().expect("an object");
        match op {
            ReduceOp::MinMax => {
                m.insert("min".into(), exact_or(r.exact, r.value));
                m.insert("max".into(), exact_or(r.max_exact, r.max.unwrap_or(f64::NAN)));
            }
            ReduceOp::ArgMin | ReduceOp::ArgMax => {
                m.insert("index".into(), json!(r.index));
                m.insert("value".into(), exact_or(r.exact, r.value));
            }
            ReduceOp::Count(c) => {
                m.insert("value".into(), json!(r.count));
                m.insert("where".into(), json!(c));
            }
            _ => {
                m.insert("value".into(), exact_or(r.exact, r.value));
            }
        }
        if r.exact_sum {
            m.insert("exact".into(), json!(true));
        }
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    let what = match op {
        ReduceOp::MinMax => {
            format!("min {} max {}", text(r.exact, r.value), text(r.max_exact, r.max.unwrap_or(f64::NAN)))
        }
        ReduceOp::ArgMin | ReduceOp::ArgMax => {
            format!("index {} (value {})", r.index.map_or("-".into(), |i| i.to_string()), text(r.exact, r.value))
        }
        ReduceOp::Count(_) => format!("{}", r.count.unwrap_or(0)),
        _ => text(r.exact, r.value),
    };
    let exact = if r.exact_sum { ", exact" } else { "" };
    println!("{} = {what}  ({} {} elements, {nan} NaN, {} backend{exact})", op.name(), r.n, r.dtype.name(), r.backend);
    Ok(())
}
