//! Prefix scans: inclusive and exclusive running sums, minima, maxima and caller-defined
//! associative operations over host or device-resident input of every reduction element type,
//! on the CUDA and CPU backends, into a new buffer or in place, plain or by key (restarting
//! wherever the key changes). docs/SCAN.md has the rules.
//!
//! Integer sums go into 64-bit outputs by default (numpy's `cumsum` rule: signed into i64,
//! unsigned into u64) and a 64-bit running sum that leaves its range is an
//! [`Error::Overflow`], never a silent wrap; a narrower output, asked for by type, wraps.
//!
//! ```
//! use tally::{Backend, ScanOp, ScanOptions};
//! let backend = Backend::cpu();
//! let xs = [1i32, 2, 3, 4];
//! assert_eq!(backend.cumsum_vec(&xs).unwrap(), vec![1i64, 3, 6, 10]);
//! let ex: Vec<i32> = backend.scan_vec(&xs, ScanOp::Max, ScanOptions::exclusive()).unwrap();
//! assert_eq!(ex, vec![i32::MIN, 1, 2, 3]);
//! let keys = [7u32, 7, 8, 8];
//! let by_key: Vec<i64> = backend.scan_by_key_vec(&keys, &xs, ScanOp::Sum, ScanOptions::default()).unwrap();
//! assert_eq!(by_key, vec![1, 3, 3, 7]);
//! ```

pub mod cpu;
pub mod cuda;
pub mod element;
pub mod lookback;
pub mod policy;
pub mod reference;

pub use cuda::ScanPlan;
pub use element::{ScanElement, ScanInto, ScanKey, ScanValue};

use crate::device::{Backend, Buffer, DeviceInput, DeviceViewMut, Input};
use crate::error::{Error, Result};
use crate::reduce::CustomOp;
use serde::Serialize;

/// What a scan combines with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ScanOp {
    /// The running sum (identity 0).
    Sum,
    /// The running minimum (identity: the largest value, +inf for floats). NaN propagates.
    Min,
    /// The running maximum (identity: the smallest value, -inf for floats). NaN propagates.
    Max,
}

impl ScanOp {
    /// "sum", "min" or "max".
    pub fn name(self) -> &'static str {
        match self {
            ScanOp::Sum => "sum",
            ScanOp::Min => "min",
            ScanOp::Max => "max",
        }
    }

    /// The op named `name` (what [`ScanOp::name`] gives).
    pub fn from_name(name: &str) -> Result<ScanOp> {
        [ScanOp::Sum, ScanOp::Min, ScanOp::Max]
            .into_iter()
            .find(|op| op.name() == name)
            .ok_or_else(|| Error::invalid(format!("unknown op '{name}' (expected sum, min or max)")))
    }

    /// The identity of the op in `O` (what an exclusive scan puts first).
    pub fn identity<O: ScanValue>(self) -> O {
        match self {
            ScanOp::Sum => O::ZERO,
            ScanOp::Min => O::HIGHEST,
            ScanOp::Max => O::LOWEST,
        }
    }

    /// `a OP b` as every backend computes it: sums wrap (integers) or round (floats); min and
    /// max keep `a` unless `b` is strictly beyond it or NaN, so that the earlier of equal values
    /// (+0 and -0) wins and NaN propagates.
    #[inline(always)]
    pub fn apply<O: ScanValue>(self, a: O, b: O) -> O {
        match self {
            ScanOp::Sum => a.add(b),
            ScanOp::Min => {
                if b < a || b.is_nan() {
                    b
                } else {
                    a
                }
            }
            ScanOp::Max => {
                if b > a || b.is_nan() {
                    b
                } else {
                    a
                }
            }
        }
    }
}

/// How to scan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ScanOptions {
    /// Exclusive: element i gets the combination of the elements before it (the identity
    /// first). Default: inclusive (element i included), as numpy's `cumsum`.
    pub exclusive: bool,
    /// GPU: the same bits on every run of a plan (a fixed combination order; see docs/SCAN.md).
    /// None (default): on for float sums and custom operations, off for integer sums. Min and
    /// max ignore it: their bits cannot depend on the order, and they take the fast look-back.
    pub deterministic: Option<bool>,
    /// 64-bit integer sums: wrap silently instead of failing with [`Error::Overflow`].
    pub wrapping: bool,
}

impl ScanOptions {
    /// An inclusive scan.
    pub fn inclusive() -> Self {
        ScanOptions::default()
    }

    /// An exclusive scan.
    pub fn exclusive() -> Self {
        ScanOptions { exclusive: true, ..ScanOptions::default() }
    }

    /// These options with the deterministic look-back on or off.
    pub fn with_deterministic(mut self, on: bool) -> Self {
        self.deterministic = Some(on);
        self
    }

    /// These options with 64-bit integer sums wrapping (no overflow check) or not.
    pub fn with_wrapping(mut self, on: bool) -> Self {
        self.wrapping = on;
        self
    }

    /// Whether the GPU uses the deterministic look-back for output `O` and `op`: by default where
    /// the order can change the bits (`policy::order_changes_bits`). A running minimum or
    /// maximum gives the same bits in the fast look-back, which it always takes.
    pub(crate) fn resolved_deterministic<O: ScanValue>(&self, op: policy::ScanKernelOp) -> bool {
        use policy::ScanKernelOp::{Max, Min};
        !matches!(op, Min | Max) && self.deterministic.unwrap_or(policy::order_changes_bits(op, O::TYPE))
    }
}

/// What the CPU backend combines with: a built-in op, or a caller's closure and identity.
#[derive(Clone, Copy)]
pub(crate) enum CpuOp<'f, O> {
    Builtin(ScanOp),
    Custom(O, &'f (dyn Fn(O, O) -> O + Sync)),
}

impl<O: ScanValue> CpuOp<'_, O> {
    #[inline(always)]
    pub(crate) fn apply(&self, a: O, b: O) -> O {
        match self {
            CpuOp::Builtin(op) => op.apply(a, b),
            CpuOp::Custom(_, f) => f(a, b),
        }
    }

    pub(crate) fn identity(&self) -> O {
        match self {
            CpuOp::Builtin(op) => op.identity(),
            CpuOp::Custom(id, _) => *id,
        }
    }

    /// Whether the running value is checked for overflow.
    pub(crate) fn checked(&self, options: &ScanOptions) -> bool {
        matches!(self, CpuOp::Builtin(ScanOp::Sum)) && O::CHECKED && !options.wrapping
    }
}

/// The error of a 64-bit integer sum that left its range.
pub(crate) fn overflow_error<O: ScanValue>() -> Error {
    Error::Overflow(format!(
        "the running sum left the range of {} (ask for wrapping, or scan into a wider type)",
        O::TYPE.name()
    ))
}

fn check_keys(keys: usize, values: usize) -> Result<()> {
    if keys != values {
        return Err(Error::invalid(format!("{keys} keys for {values} values: a scan by key needs one key per value")));
    }
    Ok(())
}

/// The result of a scan on `backend` as a host vector.
pub(crate) fn to_vec<O: ScanValue>(backend: &Backend, buffer: Buffer<O>) -> Result<Vec<O>> {
    match (backend, buffer) {
        (_, Buffer::Host(v)) => Ok(v),
        (Backend::Cuda(dev), Buffer::Cuda(b)) => dev.stream().download(&b.view()),
        (Backend::Cpu, Buffer::Cuda(_)) => Err(Error::WrongBackend { buffer: "cuda", backend: "cpu" }),
    }
}

impl Backend {
    /// Scans `input` (host slice, [`crate::Buffer`] or device memory) by `op` into a new buffer
    /// of `O` on this backend: `O` is the input type, or for integers the 64-bit integer of the
    /// same signedness (see [`Backend::cumsum`] for numpy's default).
    pub fn scan<'a, T: ScanInto<O>, O: ScanValue>(
        &self,
        input: impl Into<Input<'a, T>>,
        op: ScanOp,
        options: ScanOptions,
    ) -> Result<Buffer<O>> {
        match (self, input.into()) {
            (Backend::Cpu, Input::Host(s)) => {
                cpu::scan(s, None::<&[u32]>, CpuOp::Builtin(op), &options).map(Buffer::Host)
            }
            (Backend::Cpu, Input::Device(_)) => Err(Error::WrongBackend { buffer: "cuda", backend: "cpu" }),
            (Backend::Cuda(dev), input) => {
                let stream = dev.stream();
                let data = DeviceInput::new(stream, input, "scan input")?;
                let view = data.view();
                let mut plan = ScanPlan::<T, O>::new(dev, op, options, view.len())?;
                let mut out = stream.alloc::<O>(view.len(), "scan output")?;
                plan.launch(stream, &view, &mut out.view_mut())?;
                plan.read(stream)?;
                Ok(Buffer::Cuda(out))
            }
        }
    }

    /// [`Backend::scan`], the result copied to the host.
    pub fn scan_vec<'a, T: ScanInto<O>, O: ScanValue>(
        &self,
        input: impl Into<Input<'a, T>>,
        op: ScanOp,
        options: ScanOptions,
    ) -> Result<Vec<O>> {
        let b = self.scan(input, op, options)?;
        to_vec(self, b)
    }

    /// The inclusive running sum with numpy's output type (`cumsum`): i64 for signed integers,
    /// u64 for unsigned ones, the float type itself for floats.
    pub fn cumsum<'a, T: ScanElement>(&self, input: impl Into<Input<'a, T>>) -> Result<Buffer<T::Wide>> {
        self.scan(input, ScanOp::Sum, ScanOptions::default())
    }

    /// [`Backend::cumsum`], the result copied to the host.
    pub fn cumsum_vec<'a, T: ScanElement>(&self, input: impl Into<Input<'a, T>>) -> Result<Vec<T::Wide>> {
        let b = self.cumsum(input)?;
        to_vec(self, b)
    }

    /// Scans host memory in place (on the GPU: copied there and back).
    pub fn scan_in_place<T: ScanInto<T>>(&self, data: &mut [T], op: ScanOp, options: ScanOptions) -> Result<()> {
        match self {
            Backend::Cpu => cpu::scan_in_place(data, None::<&[u32]>, CpuOp::Builtin(op), &options),
            Backend::Cuda(dev) => {
                let stream = dev.stream();
                let mut buf = stream.upload(data, "scan data")?;
                let mut plan = ScanPlan::<T, T>::new(dev, op, options, data.len())?;
                plan.launch_in_place(stream, &mut buf.view_mut())?;
                plan.read(stream)?;
                data.copy_from_slice(&stream.download(&buf.view())?);
                Ok(())
            }
        }
    }

    /// Scans device memory in place (CUDA only).
    pub fn scan_device_in_place<T: ScanInto<T>>(
        &self,
        data: &mut DeviceViewMut<'_, T>,
        op: ScanOp,
        options: ScanOptions,
    ) -> Result<()> {
        let Backend::Cuda(dev) = self else { return Err(Error::WrongBackend { buffer: "cuda", backend: "cpu" }) };
        let mut plan = ScanPlan::<T, T>::new(dev, op, options, data.len())?;
        plan.launch_in_place(dev.stream(), data)?;
        plan.read(dev.stream())
    }

    /// Scans `input` by a caller's associative operation (a C++ expression on the GPU, the
    /// closure on the CPU; see [`CustomOp`]: for a scan it need not commute), into the input
    /// type. The identity is what an exclusive scan puts first.
    pub fn scan_custom<'a, T: ScanInto<T>, F: Fn(T, T) -> T + Sync>(
        &self,
        input: impl Into<Input<'a, T>>,
        op: &CustomOp<T, F>,
        options: ScanOptions,
    ) -> Result<Buffer<T>> {
        match (self, input.into()) {
            (Backend::Cpu, Input::Host(s)) => {
                cpu::scan(s, None::<&[u32]>, CpuOp::Custom(op.identity, &op.cpu), &options).map(Buffer::Host)
            }
            (Backend::Cpu, Input::Device(_)) => Err(Error::WrongBackend { buffer: "cuda", backend: "cpu" }),
            (Backend::Cuda(dev), input) => {
                let stream = dev.stream();
                let data = DeviceInput::new(stream, input, "scan input")?;
                let view = data.view();
                let mut plan = ScanPlan::<T, T>::custom(dev, view.len(), &op.cuda_expr, &op.cuda_identity, options, 0)?;
                let mut out = stream.alloc::<T>(view.len(), "scan output")?;
                plan.launch(stream, &view, &mut out.view_mut())?;
                plan.read(stream)?;
                Ok(Buffer::Cuda(out))
            }
        }
    }

    /// [`Backend::scan_custom`], the result copied to the host.
    pub fn scan_custom_vec<'a, T: ScanInto<T>, F: Fn(T, T) -> T + Sync>(
        &self,
        input: impl Into<Input<'a, T>>,
        op: &CustomOp<T, F>,
        options: ScanOptions,
    ) -> Result<Vec<T>> {
        let b = self.scan_custom(input, op, options)?;
        to_vec(self, b)
    }

    /// Scans `values` by `op`, restarting wherever `keys` changes (a new segment starts at
    /// element i when `keys[i] != keys[i - 1]`): numpy-free `segmented cumsum`. One key per
    /// value; the output type as for [`Backend::scan`].
    pub fn scan_by_key<'a, 'k, K: ScanKey, T: ScanInto<O>, O: ScanValue>(
        &self,
        keys: impl Into<Input<'k, K>>,
        values: impl Into<Input<'a, T>>,
        op: ScanOp,
        options: ScanOptions,
    ) -> Result<Buffer<O>> {
        let (keys, values) = (keys.into(), values.into());
        check_keys(keys.len(), values.len())?;
        match (self, keys, values) {
            (Backend::Cpu, Input::Host(k), Input::Host(s)) => {
                cpu::scan(s, Some(k), CpuOp::Builtin(op), &options).map(Buffer::Host)
            }
            (Backend::Cpu, _, _) => Err(Error::WrongBackend { buffer: "cuda", backend: "cpu" }),
            (Backend::Cuda(dev), keys, values) => {
                let stream = dev.stream();
                let k = DeviceInput::new(stream, keys, "scan keys")?;
                let data = DeviceInput::new(stream, values, "scan input")?;
                let view = data.view();
                let mut plan = ScanPlan::<T, O>::by_key::<K>(dev, op, options, view.len())?;
                let mut out = stream.alloc::<O>(view.len(), "scan output")?;
                plan.launch_by_key(stream, &k.view(), &view, &mut out.view_mut())?;
                plan.read(stream)?;
                Ok(Buffer::Cuda(out))
            }
        }
    }

    /// [`Backend::scan_by_key`], the result copied to the host.
    pub fn scan_by_key_vec<'a, 'k, K: ScanKey, T: ScanInto<O>, O: ScanValue>(
        &self,
        keys: impl Into<Input<'k, K>>,
        values: impl Into<Input<'a, T>>,
        op: ScanOp,
        options: ScanOptions,
    ) -> Result<Vec<O>> {
        let b = self.scan_by_key(keys, values, op, options)?;
        to_vec(self, b)
    }
}
