//! CSV text: one column of numbers, with an optional header row.

use std::path::Path;

use anyhow::{anyhow, bail};
use tally::DType;

use super::{with_type, InputOptions, Samples};

/// One column of a CSV file. The first row is a header if any of its cells is not a number.
pub(super) fn load_csv(path: &Path, bytes: &[u8], opts: &InputOptions) -> anyhow::Result<Samples> {
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
