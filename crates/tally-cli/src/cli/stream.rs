//! Files the CLI streams rather than loads: raw binary files of `--dtype`, read chunk by chunk
//! into the pipeline's pinned buffers (never whole), with a progress bar of bytes done on
//! standard error when it is a terminal and the file is large.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;
use tally::device::{ChunkSource, FileSource, PlainData};
use tally::DType;

/// Files below this size finish too soon for a progress bar.
const PROGRESS_BYTES: u64 = 1 << 30;

/// The element type of `path` where the CLI streams it: a raw binary file (not standard input,
/// not a format it decodes) given a `--dtype`.
pub fn raw_file(path: &Path, dtype: Option<DType>) -> Option<DType> {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).unwrap_or_default();
    let decoded = ["npy", "csv", "png", "jpg", "jpeg"].contains(&ext.as_str());
    (path.as_os_str() != "-" && !decoded).then_some(dtype).flatten()
}

/// A file's elements with the progress bar, where there is one, advanced as chunks are read.
pub struct Progress<T> {
    file: FileSource<T>,
    bar: Option<ProgressBar>,
}

impl<T: PlainData> Progress<T> {
    /// All of `path` as elements of `T`; a bar unless `quiet` or stderr is not a terminal.
    pub fn open(path: &Path, quiet: bool) -> anyhow::Result<Self> {
        let file = FileSource::<T>::open(path, 0, None)?;
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
