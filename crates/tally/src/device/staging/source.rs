//! Where streamed elements come from: a host slice, a file, or any reader. Each fills the
//! pipeline's pinned buffers directly, so the only copy on the host is the one into pinned
//! memory (a parallel memcpy from a slice, `pread` or `read` from a file).

use crate::error::{Error, Result};
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use rayon::prelude::*;
use std::fs::File;
use std::io::Read;
use std::marker::PhantomData;
use std::path::Path;

/// Bytes each thread copies or reads at a time when one chunk is filled in parallel: 64 of
/// them to a default chunk, so that a thread that starts late holds up its chunk by little.
/// Reading a file in the page cache into pinned memory on 16 threads of an H100 host in a
/// two-slot pipeline (docs/PERF.md, v31): 1 MiB pieces 39.7-47.1 GB/s, 4 MiB 32.9-43.1.
const PIECE_BYTES: usize = 1 << 20;

mod sealed {
    pub trait Sealed {}
}

/// Element types for which every bit pattern is a value (the primitive numbers), so that bytes
/// read from a file may be viewed as elements. Sealed: implemented for `u8`, `i8`, `u16`,
/// `i16`, `u32`, `i32`, `u64`, `i64`, `f32`, `f64`, `half::f16` and `half::bf16`.
pub trait PlainData: DeviceRepr + ValidAsZeroBits + Copy + Default + Send + Sync + 'static + sealed::Sealed {}

macro_rules! plain_data {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl PlainData for $t {}
    )*};
}
plain_data!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64, half::f16, half::bf16);

/// The bytes of `xs`, for reading into.
pub(crate) fn as_bytes_mut<T: PlainData>(xs: &mut [T]) -> &mut [u8] {
    let bytes = std::mem::size_of_val(xs);
    // SAFETY: `PlainData` is sealed and implemented only for primitive numbers, which have no
    // padding and for which every bit pattern is a valid value; the byte slice covers exactly
    // the memory of `xs` and borrows it mutably for its lifetime.
    unsafe { std::slice::from_raw_parts_mut(xs.as_mut_ptr().cast::<u8>(), bytes) }
}

/// A source of elements for a streamed primitive, read front to back once.
pub trait ChunkSource<T>: Send {
    /// Elements still to come, where known (sizes the chunks; None for a pipe).
    fn remaining(&self) -> Option<u64>;

    /// Fills `out` from the front with the next elements and returns how many it wrote: all of
    /// `out` unless the source ends first, 0 once it has ended. On a device `out` is a pinned
    /// staging buffer in write-combined memory: write it, do not read it (a CPU read of it is
    /// uncached and slow).
    fn fill(&mut self, out: &mut [T]) -> Result<usize>;
}

/// Elements of a host slice, copied into the pinned buffers by several threads.
pub struct SliceSource<'a, T> {
    data: &'a [T],
    next: usize,
}

impl<'a, T> SliceSource<'a, T> {
    /// The elements of `data`, in order.
    pub fn new(data: &'a [T]) -> Self {
        SliceSource { data, next: 0 }
    }
}

impl<T: PlainData> ChunkSource<T> for SliceSource<'_, T> {
    fn remaining(&self) -> Option<u64> {
        Some((self.data.len() - self.next) as u64)
    }

    fn fill(&mut self, out: &mut [T]) -> Result<usize> {
        let n = out.len().min(self.data.len() - self.next);
        let from = &self.data[self.next..self.next + n];
        let piece = (PIECE_BYTES / std::mem::size_of::<T>()).max(1);
        out[..n].par_chunks_mut(piece).zip(from.par_chunks(piece)).for_each(|(o, i)| o.copy_from_slice(i));
        self.next += n;
        Ok(n)
    }
}

/// Elements of a file from a byte offset on, read with positioned reads (`pread`) by several
/// threads straight into the pinned buffers: the file is never held whole in memory. This takes
/// the place of memory-mapping it: either way the bytes are copied once into pinned memory (the
/// DMA engine cannot read pageable memory), and reads need no new dependency, raise no signal
/// when the file shrinks underneath, and work on any file the system can read.
pub struct FileSource<T> {
    file: File,
    /// The next byte to read.
    offset: u64,
    /// Elements still to read.
    left: u64,
    _elements: PhantomData<fn() -> T>,
}

impl<T: PlainData> FileSource<T> {
    /// The elements of `path` from byte `offset` on: `elements` of them, or (None) all the bytes
    /// to the end, which must then be a whole number of elements.
    pub fn open(path: &Path, offset: u64, elements: Option<u64>) -> Result<Self> {
        let io = |e: std::io::Error| Error::Io { what: path.display().to_string(), source: e };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let size = std::mem::size_of::<T>() as u64;
        let bytes = len.checked_sub(offset).ok_or_else(|| {
            Error::invalid(format!("{}: the data start at byte {offset}, past its end ({len})", path.display()))
        })?;
        let left = match elements {
            Some(n) if n.checked_mul(size).is_none_or(|b| b > bytes) => {
                return Err(Error::invalid(format!(
                    "{}: {n} elements of {size} bytes do not fit its {bytes} bytes of data",
                    path.display()
                )))
            }
            Some(n) => n,
            None if bytes % size != 0 => {
                return Err(Error::invalid(format!(
                    "{}: {bytes} bytes of data are not a whole number of {size}-byte elements",
                    path.display()
                )))
            }
            None => bytes / size,
        };
        Ok(FileSource { file, offset, left, _elements: PhantomData })
    }
}

impl<T: PlainData> ChunkSource<T> for FileSource<T> {
    fn remaining(&self) -> Option<u64> {
        Some(self.left)
    }

    fn fill(&mut self, out: &mut [T]) -> Result<usize> {
        use std::os::unix::fs::FileExt;
        let n = (out.len() as u64).min(self.left) as usize;
        let bytes = as_bytes_mut(&mut out[..n]);
        let (file, start) = (&self.file, self.offset);
        bytes.par_chunks_mut(PIECE_BYTES).enumerate().try_for_each(|(i, piece)| {
            file.read_exact_at(piece, start + (i * PIECE_BYTES) as u64).map_err(|e| Error::Io {
                what: format!("reading at byte {}", start + (i * PIECE_BYTES) as u64),
                source: e,
            })
        })?;
        self.offset += bytes.len() as u64;
        self.left -= n as u64;
        Ok(n)
    }
}

/// Elements from any reader (a pipe, standard input), read in order into the pinned buffers.
/// The stream must end on a whole element.
pub struct ReadSource<R, T> {
    reader: R,
    /// Elements still to read, where the caller knows (the reader may go on past them).
    left: Option<u64>,
    _elements: PhantomData<fn() -> T>,
}

impl<R: Read + Send, T: PlainData> ReadSource<R, T> {
    /// The elements `reader` gives: `elements` of them, or (None) all until it ends.
    pub fn new(reader: R, elements: Option<u64>) -> Self {
        ReadSource { reader, left: elements, _elements: PhantomData }
    }
}

impl<R: Read + Send, T: PlainData> ChunkSource<T> for ReadSource<R, T> {
    fn remaining(&self) -> Option<u64> {
        self.left
    }

    fn fill(&mut self, out: &mut [T]) -> Result<usize> {
        let n = self.left.map_or(out.len(), |left| (out.len() as u64).min(left) as usize);
        let size = std::mem::size_of::<T>();
        let bytes = as_bytes_mut(&mut out[..n]);
        let mut got = 0;
        while got < bytes.len() {
            match self.reader.read(&mut bytes[got..]) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::Io { what: "reading the input".into(), source: e }),
            }
        }
        if got % size != 0 {
            return Err(Error::invalid(format!(
                "the input ends within an element: {} stray bytes after the last whole {size}-byte element",
                got % size
            )));
        }
        if let Some(left) = self.left.as_mut() {
            if got < bytes.len() {
                return Err(Error::invalid(format!("the input ends {} elements early", *left - (got / size) as u64)));
            }
            *left -= (got / size) as u64;
        }
        Ok(got / size)
    }
}
