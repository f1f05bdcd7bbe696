//! Files the CLI streams rather than loads: raw binary files of `--dtype` and `.npy` files whose
//! elements tally reads as stored, read chunk by chunk into the pipeline's pinned buffers (never
//! whole), with a progress bar of bytes done on standard error when it is a terminal and the
//! file is large.

use super::input::{check_raw_file, npy_plain_data};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use tally::device::{ChunkSource, FileSource, PlainData};
use tally::DType;

/// Files below this size finish too soon for a progress bar.
const PROGRESS_BYTES: u64 = 1 << 30;

/// The element type of `path` where the CLI streams it: a raw binary file (not standard input,
/// not a format it decodes) given a `--dtype`.
fn raw_file(path: &Path, dtype: Option<DType>) -> Option<DType> {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).unwrap_or_default();
    let decoded = ["npy", "csv", "png", "jpg", "jpeg"].contains(&ext.as_str());
    (path.as_os_str() != "-" && !decoded).then_some(dtype).flatten()
}

/// A file the CLI streams: its elements' type, the byte they start at and how many there are
/// (None: all the bytes to the end).
#[derive(Clone, Debug)]
pub struct StreamedFile {
    /// The file.
    pub path: PathBuf,
    /// The elements' type.
    pub dtype: DType,
    /// The byte where the elements start (a `.npy` header's length; 0 for raw files).
    pub offset: u64,
    /// The elements, where a header says.
    pub elements: Option<u64>,
}

/// How `path` streams, where it does: a raw file given its `dtype`, or a `.npy` file whose
/// elements are stored as tally reads them (and, where `dtype` is given, of that type; anything
/// else is decoded whole and converted as before). `flag` gives a raw file its type, for messages.
pub fn streamed_file(path: &Path, dtype: Option<DType>, flag: &str) -> anyhow::Result<Option<StreamedFile>> {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).unwrap_or_default();
    let file = |dtype, offset, elements| StreamedFile { path: path.to_path_buf(), dtype, offset, elements };
    if ext == "npy" {
        let plain = npy_plain_data(path)?.filter(|(d, _, _)| dtype.is_none_or(|t| t == *d));
        return Ok(plain.map(|(d, offset, n)| file(d, offset, Some(n))));
    }
    let Some(dtype) = raw_file(path, dtype) else { return Ok(None) };
    // The whole-file path's errors: a missing file, another format, a length of part elements.
    check_raw_file(path, dtype, flag)?;
    Ok(Some(file(dtype, 0, None)))
}

/// A file's elements with the progress bar, where there is one, advanced as chunks are read.
pub struct Progress<T> {
    file: FileSource<T>,
    bar: Option<ProgressBar>,
}

impl<T: PlainData> Progress<T> {
    /// The elements of `file` (read as `T`, its `dtype`); a bar unless `quiet` or stderr is not
    /// a terminal.
    pub fn open(file: &StreamedFile, quiet: bool) -> anyhow::Result<Self> {
        let file = FileSource::<T>::open(&file.path, file.offset, file.elements)?;
        let bytes = file.remaining().unwrap_or(0) * std::mem::size_of::<T>() as u64;
        let bar = (!quiet && bytes >= PROGRESS_BYTES && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(bytes);
            let style = ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}");
            bar.set_style(style.unwrap_or_else(|_| ProgressStyle::default_bar()));
            bar
        });
        Ok(Progress { file, bar })
    }
}

impl<T: PlainData> ChunkSource<T> for Progress<T> {
    fn remaining(&self) -> Option<u64> {
        self.file.remaining()
    }

    fn fill(&mut self, out: &mut [T]) -> tally::Result<usize> {
        let n = self.file.fill(out)?;
        if let Some(bar) = &self.bar {
            bar.inc((n * std::mem::size_of::<T>()) as u64);
            if n < out.len() {
                bar.finish_and_clear();
            }
        }
        Ok(n)
    }
}
