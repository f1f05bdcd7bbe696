//! Runs of equal consecutive keys: [`Backend::unique`] (drop consecutive duplicates, as CUB's
//! `DeviceSelect::Unique` and `torch.unique_consecutive`), [`Backend::run_length_encode`] (the
//! first key and the length of every run) and [`Backend::reduce_by_key`] (the first key and the
//! sum, minimum, maximum or count of every run's values), over host or device-resident input of
//! every element type, on the CUDA and CPU backends. docs/RUNS.md has the rules.
//!
//! A run starts at element 0 and wherever `keys[i] != keys[i - 1]`, compared with `==` as CUB
//! and torch do: for floats a NaN equals nothing (every NaN is a run of one), and -0.0 equals
//! +0.0 (the run keeps the first key's bits).
//!
//! ```
//! use tally::{Backend, RunOp};
//! let backend = Backend::cpu();
//! let keys = [4u32, 4, 4, 9, 9, 4];
//! assert_eq!(backend.unique_vec(&keys).unwrap(), vec![4, 9, 4]);
//! assert_eq!(backend.run_length_encode_vec(&keys).unwrap(), (vec![4, 9, 4], vec![3, 2, 1]));
//! let values = [1i32, 2, 3, 4, 5, 6];
//! let (k, sums): (Vec<u32>, Vec<i64>) = backend.reduce_by_key_vec(&keys, &values, RunOp::Sum).unwrap();
//! assert_eq!((k, sums), (vec![4, 9, 4], vec![6, 9, 6]));
//! ```

pub mod cpu;
pub mod cuda;
pub mod element;
pub mod policy;
pub mod reference;

pub use cuda::RunsPlan;
pub use element::{ReduceByKeyInto, RunKey};

use crate::device::{Backend, Buffer, DeviceBuffer, DeviceInput, Input};
use crate::error::{Error, Result};
use crate::reduce::ElementType;
use crate::scan::{to_vec, ScanOp, ScanValue};
use serde::Serialize;

/// What reduce-by-key computes over each run's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunOp {
    /// The sum, left to right on the CPU; on the GPU floats in a fixed order (see docs/RUNS.md).
    Sum,
    /// The minimum (NaN propagates; of equal values the first is kept).
    Min,
    /// The maximum (NaN propagates; of equal values the first is kept).
    Max,
    /// The number of values (the run's length), as `u64`.
    Count,
}

impl RunOp {
    /// "sum", "min", "max" or "count".
    pub fn name(self) -> &'static str {
        match self {
            RunOp::Sum => "sum",
            RunOp::Min => "min",
            RunOp::Max => "max",
            RunOp::Count => "count",
        }
    }
}

/// The runs of a run-length encoding: the first key of every run, and its length.
pub struct Runs<T> {
    /// The first key of every run, in order.
    pub values: Buffer<T>,
    /// The length of every run.
    pub counts: Buffer<u64>,
}

impl<T> Runs<T> {
    /// The number of runs.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are no runs (the input was empty).
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// The error of a 64-bit integer sum of a run that left its range.
pub(crate) fn overflow_error<O: ScanValue>() -> Error {
    Error::Overflow(format!("a run's sum left the range of {} (sum into a float type)", O::TYPE.name()))
}

/// Whether reduce-by-key by `op` may write values of `V` as `O`.
pub(crate) fn check_output<V: ReduceByKeyInto<O>, O: ScanValue>(op: RunOp) -> Result<()> {
    match op {
        RunOp::Count if O::TYPE != ElementType::U64 => {
            Err(Error::invalid(format!("count writes u64 counts, not {}", O::TYPE.name())))
        }
        RunOp::Count => Ok(()),
        _ if !V::COMBINES => Err(Error::invalid(format!(
            "the {} of {} values cannot be written as {}",
            op.name(),
            V::TYPE.name(),
            O::TYPE.name()
        ))),
        _ => Ok(()),
    }
}

/// A GPU output of `n` elements cut to the `runs` that were written (the allocation stays).
fn first<T>(buffer: DeviceBuffer<T>, runs: u64) -> Buffer<T> {
    Buffer::Cuda(DeviceBuffer::from_parts(buffer.into_cuda_slice(), runs as usize))
}

impl Backend {
    /// The first key of every run of `keys` (consecutive duplicates dropped), on this backend.
    /// On the GPU the buffer's allocation holds one element per key.
    pub fn unique<'a, K: RunKey>(&self, keys: impl Into<Input<'a, K>>) -> Result<Buffer<K>> {
        match (self, keys.into()) {
            (Backend::Cpu, Input::Host(s)) => Ok(Buffer::Host(cpu::unique(s))),
            (Backend::Cpu, Input::Device(_)) => Err(Error::WrongBackend { buffer: "cuda", backend: "cpu" }),
            (Backend::Cuda(dev), input) => {
                let stream = dev.stream();
                let data = DeviceInput::new(stream, input, "unique keys")?;
                let view = data.view();
                let mut plan = RunsPlan::<K>::unique(dev, view.len())?;
                let mut out = stream.alloc::<K>(view.len(), "unique keys out")?;
                plan.launch_unique(stream, &view, &mut out.view_mut())?;
                let runs = plan.read(stream)?;
                Ok(first(out, runs))
            }
        }
    }

    /// [`Backend::unique`], the result copied to the host.
    pub fn unique_vec<'a, K: RunKey>(&self, keys: impl Into<Input<'a, K>>) -> Result<Vec<K>> {
        let b = self.unique(keys)?;
        to_vec(self, b)
    }

    /// The first key and the length of every run of `keys`, on this backend. On the GPU the
    /// buffers' allocations hold one element per key.
    pub fn run_length_encode<'a, K: RunKey>(&self, keys: impl Into<Input<'a, K>>) -> Result<Runs<K>> {
        match (self, keys.into()) {
            (Backend::Cpu, Input::Host(s)) => {
                let (values, counts) = cpu::run_length_encode(s);
                Ok(Runs { values: Buffer::Host(values), counts: Buffer::Host(counts) })
            }
            (Backend::Cpu, Input::Device(_)) => Err(Error::WrongBackend { buffer: "cuda", backend: "cpu" }),
            (Backend::Cuda(dev), input) => {
                let stream = dev.stream();
                let data = DeviceInput::new(stream, input, "run-length keys")?;
                let view = data.view();
                let mut plan = RunsPlan::<K>::encode(dev, view.len())?;
                let mut out = stream.alloc::<K>(view.len(), "run keys")?;
                let mut counts = stream.alloc::<u64>(view.len(), "run lengths")?;
                plan.launch_encode(stream, &view, &mut out.view_mut(), &mut counts.view_mut())?;
                let runs = plan.read(stream)?;
                Ok(Runs { values: first(out, runs), counts: first(counts, runs) })
            }
        }
    }

    /// [`Backend::run_length_encode`], the keys and lengths copied to the host.
    pub fn run_length_encode_vec<'a, K: RunKey>(&self, keys: impl Into<Input<'a, K>>) -> Result<(Vec<K>, Vec<u64>)> {
        let runs = self.run_length_encode(keys)?;
        Ok((to_vec(self, runs.values)?, to_vec(self, runs.counts)?))
    }

    /// The first key of every run of `keys` and `op` over the run's `values` (one per key),
    /// written as `O`: the value type itself, or for sums of narrow integers the 64-bit integer
    /// of their signedness (a 64-bit sum that leaves its range is an [`Error::Overflow`]; a
    /// narrower output, asked for by type, wraps); `u64` for [`RunOp::Count`].
    pub fn reduce_by_key<'k, 'v, K: RunKey, V: ReduceByKeyInto<O>, O: ScanValue>(
        &self,
        keys: impl Into<Input<'k, K>>,
        values: impl Into<Input<'v, V>>,
        op: RunOp,
    ) -> Result<(Buffer<K>, Buffer<O>)> {
        let (keys, values) = (keys.into(), values.into());
        if keys.len() != values.len() {
            return Err(Error::invalid(format!(
                "{} keys for {} values: reduce-by-key needs one key per value",
                keys.len(),
                values.len()
            )));
        }
        check_output::<V, O>(op)?;
        match (self, keys, values) {
            (Backend::Cpu, Input::Host(k), Input::Host(v)) => {
                let (out_keys, out_values) = match op {
                    RunOp::Count => {
                        let (ks, counts) = cpu::run_length_encode(k);
                        (ks, counts.into_iter().map(O::from_bits64).collect())
                    }
                    RunOp::Sum => cpu::reduce_by_key(k, v, ScanOp::Sum)?,
                    RunOp::Min => cpu::reduce_by_key(k, v, ScanOp::Min)?,
                    RunOp::Max => cpu::reduce_by_key(k, v, ScanOp::Max)?,
                };
                Ok((Buffer::Host(out_keys), Buffer::Host(out_values)))
            }
            (Backend::Cpu, _, _) => Err(Error::WrongBackend { buffer: "cuda", backend: "cpu" }),
            (Backend::Cuda(dev), keys, values) => {
                let stream = dev.stream();
                let k = DeviceInput::new(stream, keys, "reduce-by-key keys")?;
                let v = DeviceInput::new(stream, values, "reduce-by-key values")?;
                let (kv, vv) = (k.view(), v.view());
                let mut plan = RunsPlan::<K, V, O>::reduce_by_key(dev, op, kv.len())?;
                let mut out_keys = stream.alloc::<K>(kv.len(), "run keys")?;
                let mut out_values = stream.alloc::<O>(kv.len(), "run values")?;
                plan.launch_reduce(stream, &kv, &vv, &mut out_keys.view_mut(), &mut out_values.view_mut())?;
                let runs = plan.read(stream)?;
                Ok((first(out_keys, runs), first(out_values, runs)))
            }
        }
    }

    /// [`Backend::reduce_by_key`], the keys and values copied to the host.
    pub fn reduce_by_key_vec<'k, 'v, K: RunKey, V: ReduceByKeyInto<O>, O: ScanValue>(
        &self,
        keys: impl Into<Input<'k, K>>,
        values: impl Into<Input<'v, V>>,
        op: RunOp,
    ) -> Result<(Vec<K>, Vec<O>)> {
        let (k, v) = self.reduce_by_key(keys, values, op)?;
        Ok((to_vec(self, k)?, to_vec(self, v)?))
    }
}
