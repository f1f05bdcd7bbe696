//! Stream compaction: the elements that pass a [`Predicate`] (`x[mask]`), their indices
//! (`numpy.nonzero`), the elements a separate flag array marks, a stable partition (the passing
//! elements first, then the rest, each in their original order) and the count of passing
//! elements, over host or device-resident input of every reduction element type, on the CUDA
//! and CPU backends. docs/SELECT.md has the rules and the measurements.
//!
//! ```
//! use tally::{Backend, Predicate, SelectOptions};
//! let backend = Backend::cpu();
//! let xs = [0.5f32, -1.0, 2.0, f32::NAN, 0.25];
//! let p = Predicate::parse("x > 0 && x < 1").unwrap();
//! assert_eq!(backend.select_vec(&xs, &p, SelectOptions::default()).unwrap(), vec![0.5, 0.25]);
//! assert_eq!(backend.select_indices_vec(&xs, &p).unwrap(), vec![0, 4]);
//! assert_eq!(backend.count_if(&xs, &p).unwrap(), 2);
//! let (parted, kept) = backend.partition_vec(&xs, &p).unwrap();
//! assert_eq!((kept, &parted[..2], &parted[2..4]), (2, &[0.5, 0.25][..], &[-1.0, 2.0][..]));
//! ```

pub mod cpu;
pub mod cuda;
pub mod policy;
pub mod reference;

pub use cuda::SelectPlan;
pub use policy::SelectMode;

use crate::device::{Backend, Buffer, DeviceInput, Input};
use crate::error::{Error, Result};
use crate::predicate::Predicate;
use crate::reduce::ReduceElement;
use cudarc::driver::DeviceRepr;

/// An element type that select and partition move: every reduction element type.
pub trait SelectElement: ReduceElement {}
impl<T: ReduceElement> SelectElement for T {}

/// A flag of [`Backend::select_flagged`]: a byte, nonzero to keep (`u8`, `bool`).
pub trait SelectFlag: Copy + Send + Sync + DeviceRepr + 'static {
    /// Whether the flag keeps its element.
    fn keeps(self) -> bool;
}
impl SelectFlag for u8 {
    #[inline(always)]
    fn keeps(self) -> bool {
        self != 0
    }
}
impl SelectFlag for bool {
    #[inline(always)]
    fn keeps(self) -> bool {
        self
    }
}

/// How to select.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SelectOptions {
    /// GPU: the kept elements in no particular order (each warp claims its output range with
    /// one atomic; no tile waits for another). Default: the input's order, as `x[mask]`. The
    /// CPU keeps the order either way.
    pub unordered: bool,
    /// Partition: leave the rejected elements in reverse order at the back (CUB's
    /// `DevicePartition` layout), which saves the GPU a pass over them. Default: in order.
    pub rejected_reversed: bool,
}

impl SelectOptions {
    /// Kept elements in no particular order.
    pub fn unordered() -> Self {
        SelectOptions { unordered: true, ..SelectOptions::default() }
    }
}

/// A host vector of a result on `backend`.
fn to_vec<O: DeviceRepr + Default + Clone>(backend: &Backend, buffer: Buffer<O>) -> Result<Vec<O>> {
    match (backend, buffer) {
        (_, Buffer::Host(v)) => Ok(v),
        (Backend::Cuda(dev), Buffer::Cuda(b)) => dev.stream().download(&b.view()),
        (Backend::Cpu, Buffer::Cuda(_)) => Err(Error::WrongBackend { buffer: "cuda", backend: "cpu" }),
    }
}

fn wrong_backend<X>() -> Result<X> {
    Err(Error::WrongBackend { buffer: "cuda", backend: "cpu" })
}

impl Backend {
    /// The elements of `input` that pass `predicate`, in their original order (unless
    /// [`SelectOptions::unordered`]), as a new buffer on this backend.
    pub fn select<'a, T: SelectElement>(
        &self,
        input: impl Into<Input<'a, T>>,
        predicate: &Predicate,
        options: SelectOptions,
    ) -> Result<Buffer<T>> {
        let bound = predicate.bind::<T>()?;
        match (self, input.into()) {
            (Backend::Cpu, Input::Host(s)) => Ok(Buffer::Host(cpu::select(s, &bound)?)),
            (Backend::Cpu, Input::Device(_)) => wrong_backend(),
            (Backend::Cuda(dev), input) => {
                let mode = if options.unordered { SelectMode::Unordered } else { SelectMode::Stable };
                let data = DeviceInput::new(dev.stream(), input, "select input")?;
                let view = data.view();
                SelectPlan::<T>::new(dev, predicate, mode, view.len())?.run(&view).map(|(b, _)| Buffer::Cuda(b))
            }
        }
    }

    /// [`Backend::select`], the result copied to the host.
    pub fn select_vec<'a, T: SelectElement>(
        &self,
        input: impl Into<Input<'a, T>>,
        predicate: &Predicate,
        options: SelectOptions,
    ) -> Result<Vec<T>> {
        let b = self.select(input, predicate, options)?;
        to_vec(self, b)
    }

    /// The indices of the elements that pass `predicate`, ascending.
    pub fn select_indices<'a, T: SelectElement>(
        &self,
        input: impl Into<Input<'a, T>>,
        predicate: &Predicate,
    ) -> Result<Buffer<u64>> {
        let bound = predicate.bind::<T>()?;
        match (self, input.into()) {
            (Backend::Cpu, Input::Host(s)) => Ok(Buffer::Host(cpu::select_indices(s, &bound)?)),
            (Backend::Cpu, Input::Device(_)) => wrong_backend(),
            (Backend::Cuda(dev), input) => {
                let data = DeviceInput::new(dev.stream(), input, "select input")?;
                let view = data.view();
                let mut plan = SelectPlan::<T>::new(dev, predicate, SelectMode::Indices, view.len())?;
                plan.run_indices(&view).map(Buffer::Cuda)
            }
        }
    }

    /// [`Backend::select_indices`], the result copied to the host.
    pub fn select_indices_vec<'a, T: SelectElement>(
        &self,
        input: impl Into<Input<'a, T>>,
        predicate: &Predicate,
    ) -> Result<Vec<u64>> {
        let b = self.select_indices(input, predicate)?;
        to_vec(self, b)
    }

    /// The indices of the nonzero elements (NaN counts as nonzero), as `numpy.nonzero`.
    pub fn nonzero<'a, T: SelectElement>(&self, input: impl Into<Input<'a, T>>) -> Result<Buffer<u64>> {
        self.select_indices(input, &Predicate::nonzero())
    }

    /// [`Backend::nonzero`], the result copied to the host.
    pub fn nonzero_vec<'a, T: SelectElement>(&self, input: impl Into<Input<'a, T>>) -> Result<Vec<u64>> {
        self.select_indices_vec(input, &Predicate::nonzero())
    }

    /// The elements of `input` whose flag is set (nonzero), in order: `x[flags]` with a
    /// boolean mask. One flag per element.
    pub fn select_flagged<'a, 'f, T: SelectElement, F: SelectFlag>(
        &self,
        input: impl Into<Input<'a, T>>,
        flags: impl Into<Input<'f, F>>,
    ) -> Result<Buffer<T>> {
        let (input, flags) = (input.into(), flags.into());
        if input.len() != flags.len() {
            return Err(Error::invalid(format!(
                "{} flags for {} elements: select_flagged needs one flag per element",
                flags.len(),
                input.len()
            )));
        }
        match (self, input, flags) {
            (Backend::Cpu, Input::Host(s), Input::Host(f)) => Ok(Buffer::Host(cpu::select_flagged(s, f)?)),
            (Backend::Cpu, _, _) => wrong_backend(),
            (Backend::Cuda(dev), input, flags) => {
                let stream = dev.stream();
                let data = DeviceInput::new(stream, input, "select input")?;
                let f = DeviceInput::new(stream, flags, "select flags")?;
                let view = data.view();
                let mut plan = SelectPlan::<T>::flagged(dev, view.len())?;
                plan.run_flagged(&view, &f.view()).map(Buffer::Cuda)
            }
        }
    }

    /// [`Backend::select_flagged`], the result copied to the host.
    pub fn select_flagged_vec<'a, 'f, T: SelectElement, F: SelectFlag>(
        &self,
        input: impl Into<Input<'a, T>>,
        flags: impl Into<Input<'f, F>>,
    ) -> Result<Vec<T>> {
        let b = self.select_flagged(input, flags)?;
        to_vec(self, b)
    }

    /// A stable partition of `input`: the elements that pass `predicate` first, then the
    /// others, each group in its original order; and how many passed.
    pub fn partition<'a, T: SelectElement>(
        &self,
        input: impl Into<Input<'a, T>>,
        predicate: &Predicate,
    ) -> Result<(Buffer<T>, u64)> {
        self.partition_with(input, predicate, SelectOptions::default())
    }

    /// [`Backend::partition`] with options ([`SelectOptions::rejected_reversed`]).
    pub fn partition_with<'a, T: SelectElement>(
        &self,
        input: impl Into<Input<'a, T>>,
        predicate: &Predicate,
        options: SelectOptions,
    ) -> Result<(Buffer<T>, u64)> {
        let bound = predicate.bind::<T>()?;
        match (self, input.into()) {
            (Backend::Cpu, Input::Host(s)) => {
                let (v, kept) = cpu::partition(s, &bound, options.rejected_reversed)?;
                Ok((Buffer::Host(v), kept))
            }
            (Backend::Cpu, Input::Device(_)) => wrong_backend(),
            (Backend::Cuda(dev), input) => {
                let mode =
                    if options.rejected_reversed { SelectMode::PartitionReversed } else { SelectMode::Partition };
                let data = DeviceInput::new(dev.stream(), input, "partition input")?;
                let view = data.view();
                let (b, kept) = SelectPlan::<T>::new(dev, predicate, mode, view.len())?.run(&view)?;
                Ok((Buffer::Cuda(b), kept))
            }
        }
    }

    /// [`Backend::partition`], the result copied to the host.
    pub fn partition_vec<'a, T: SelectElement>(
        &self,
        input: impl Into<Input<'a, T>>,
        predicate: &Predicate,
    ) -> Result<(Vec<T>, u64)> {
        let (b, kept) = self.partition(input, predicate)?;
        Ok((to_vec(self, b)?, kept))
    }

    /// How many elements of `input` pass `predicate`.
    pub fn count_if<'a, T: SelectElement>(&self, input: impl Into<Input<'a, T>>, predicate: &Predicate) -> Result<u64> {
        let bound = predicate.bind::<T>()?;
        match (self, input.into()) {
            (Backend::Cpu, Input::Host(s)) => Ok(cpu::count_if(s, &bound)),
            (Backend::Cpu, Input::Device(_)) => wrong_backend(),
            (Backend::Cuda(dev), input) => {
                let data = DeviceInput::new(dev.stream(), input, "count input")?;
                let view = data.view();
                let mut plan = SelectPlan::<T>::new(dev, predicate, SelectMode::Count, view.len())?;
                plan.launch_count(dev.stream(), &view)?;
                plan.read(dev.stream())
            }
        }
    }
}
