//! The CUDA side of select: the kernel family of `select.cu`, its parameters, and the plan that
//! binds a predicate to the element type, loads the specialisation and launches it (a memset of
//! the tile states or the counter, the kernel, for an in-order partition a second kernel that
//! reverses the rejected elements), then reads the count back (one word through page-locked memory).

use super::policy::{self, SelectKernel, SelectMode, SelectPolicy};
use super::{SelectElement, SelectFlag};
use crate::device::params::KernelParams;
use crate::device::registry::{Defines, KernelFamily};
use crate::device::{
    CudaDevice, DevPtr, DeviceBuffer, DeviceView, DeviceViewMut, Kernel, LaunchShape, PlanReadBack, Stream,
};
use crate::error::{Error, Result};
use crate::histogram::policy::Tuning;
use crate::predicate::Predicate;
use crate::reduce::ElementType;
use crate::scan::lookback::{LookbackStates, TileStates};
use std::marker::PhantomData;
use std::sync::Arc;

crate::kernel_params! {
    /// What the select kernels read.
    pub(crate) struct SelectParams as "SelectParams" {
        /// The elements (`const T*`).
        input: DevPtr<u8>,
        /// Flagged: one byte per element (`const u8*`); null otherwise.
        flags: DevPtr<u8>,
        /// The output (`O*`: the element type, or u64 indices), n slots.
        output: DevPtr<u8>,
        n: u64,
        /// The number kept (written by the last tile, or zeroed and counted atomically).
        count: DevPtr<u64>,
        /// The tile counter and look-back slots (zeroed before the launch); null where unused.
        states: DevPtr<u8>,
        /// A kept plan's other set of tile states, which the launch zeroes; null for none.
        states_next: DevPtr<u8>,
        tiles: u32,
        groups: u32,
        supers: u32,
        unused: u32,
    }
}

crate::kernel_params! {
    /// What `tally_select_reverse` reads.
    pub(crate) struct ReverseParams as "ReverseParams" {
        /// The partition's output (`T*`).
        data: DevPtr<u8>,
        n: u64,
        /// What the partition kept (`const u64*`).
        count: DevPtr<u64>,
    }
}

/// The predicate every ahead-of-time variant is compiled with (CI's check).
pub const EXAMPLE_PREDICATE: &str = "x > 0 && !isnan(x) || x == 3 && isfinite(x)";

/// `select.cu`: every select kernel.
pub static FAMILY: KernelFamily = KernelFamily {
    name: "select.cu",
    source: include_str!("../kernels/select.cu"),
    params: || vec![SelectParams::layout(), ReverseParams::layout()],
    variants: |_| SelectVariant::all().iter().map(SelectVariant::defines).collect(),
};

/// One specialisation of `select.cu`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectVariant {
    /// The element type.
    pub elem: ElementType,
    /// What the kernel does.
    pub kernel: SelectKernel,
    /// The predicate's C++ (None: flagged).
    pub predicate: Option<String>,
    /// Threads per block, rows per tile, blocks per multiprocessor.
    pub shape: (u32, u32, u32),
}

impl SelectVariant {
    /// Every specialisation compiled ahead (CI's check): each element type and kernel with
    /// [`EXAMPLE_PREDICATE`]. Other predicates compile on first use, from the same source.
    pub fn all() -> Vec<SelectVariant> {
        let example = Predicate::parse(EXAMPLE_PREDICATE).expect("the example parses");
        let mut v = Vec::new();
        // The partition also at the largest block the tuning allows: its reversal's chunk in
        // shared memory grows with the block and the element.
        let widest = Tuning { compact_block_threads: Some(512), ..Tuning::default() };
        for elem in ElementType::ALL {
            for &kernel in SelectKernel::ALL {
                let predicate = (kernel != SelectKernel::Flagged).then(|| example.cpp_for(elem).expect("binds"));
                let mut tunings = vec![Tuning::default()];
                if kernel == SelectKernel::Partition {
                    tunings.push(widest.clone());
                }
                for tuning in &tunings {
                    let shape = policy::policy(elem, kernel, 0, tuning).expect("policy").shape();
                    v.push(SelectVariant { elem, kernel, predicate: predicate.clone(), shape });
                }
            }
        }
        v
    }

    /// The defines that select this specialisation.
    pub fn defines(&self) -> Defines {
        let (block_threads, vecs, min_blocks) = self.shape;
        let mut d: Defines = vec![
            ("TALLY_ELEM", self.elem.cuda_type().to_string()),
            ("TALLY_SELECT", self.kernel.cpp().to_string()),
            ("TALLY_BLOCK_THREADS", block_threads.to_string()),
            ("TALLY_VECS", vecs.to_string()),
            ("TALLY_MIN_BLOCKS", min_blocks.to_string()),
        ];
        if let Some(p) = &self.predicate {
            d.push(("TALLY_PREDICATE", p.clone()));
        }
        d
    }

    /// The kernel's entry point.
    pub fn entry(&self) -> &'static str {
        match self.kernel {
            SelectKernel::Unordered => "tally_select_unordered",
            SelectKernel::Count => "tally_count_if",
            _ => "tally_select",
        }
    }
}

/// A selection ready to launch on `n` resident elements of `T`: predicate bound and compiled,
/// kernels loaded, the count's slot allocated. Build it once and launch it many times; the
/// `launch*` methods queue the work and [`SelectPlan::read`] waits and returns how many were
/// kept (one small download), so the launch alone can be timed. One stream at a time uses a plan.
pub struct SelectPlan<T> {
    dev: Arc<CudaDevice>,
    mode: SelectMode,
    kernel: Option<Kernel<SelectParams>>,
    reverse: Option<Kernel<ReverseParams>>,
    variant: SelectVariant,
    policy: SelectPolicy,
    n: usize,
    count: DeviceBuffer<u64>,
    /// The count's page-locked copy on the host (one stream at a time uses a plan).
    count_back: PlanReadBack,
    tile_states: TileStates,
    _elements: PhantomData<fn(T)>,
}

impl<T: SelectElement> SelectPlan<T> {
    /// Prepares `mode` (any but [`SelectMode::Flagged`]) with `predicate` on `n` elements.
    pub fn new(dev: &Arc<CudaDevice>, predicate: &Predicate, mode: SelectMode, n: usize) -> Result<Self> {
        if mode == SelectMode::Flagged {
            return Err(Error::invalid("a selection by flags takes no predicate: use SelectPlan::flagged"));
        }
        let cpp = predicate.bind::<T>()?.cpp();
        SelectPlan::build(dev, mode, Some(cpp), n)
    }

    /// Prepares a selection by a flag array of `n` elements.
    pub fn flagged(dev: &Arc<CudaDevice>, n: usize) -> Result<Self> {
        SelectPlan::build(dev, SelectMode::Flagged, None, n)
    }

    fn build(dev: &Arc<CudaDevice>, mode: SelectMode, predicate: Option<String>, n: usize) -> Result<Self> {
        let policy = policy::policy(T::TYPE, mode.kernel(), n as u64, dev.tuning())?;
        let stage_bytes = policy.stage_bytes as usize;
        let variant = SelectVariant { elem: T::TYPE, kernel: mode.kernel(), predicate, shape: policy.shape() };
        let (kernel, reverse) = if n > 0 {
            let defines = variant.defines();
            let kernel = dev.kernel::<SelectParams>(&FAMILY, &defines, variant.entry(), stage_bytes)?;
            let reverse = if mode == SelectMode::Partition {
                Some(dev.kernel::<ReverseParams>(&FAMILY, &defines, "tally_select_reverse", 0)?)
            } else {
                None
            };
            (Some(kernel), reverse)
        } else {
            (None, None)
        };
        let count = dev.stream().alloc_zeros::<u64>(1, "select count")?;
        let count_back = PlanReadBack::new(dev.stream(), 1)?;
        Ok(SelectPlan {
            dev: dev.clone(),
            mode,
            kernel,
            reverse,
            variant,
            policy,
            n,
            count,
            count_back,
            tile_states: TileStates::new(policy.states),
            _elements: PhantomData,
        })
    }

    /// What the plan computes.
    pub fn mode(&self) -> SelectMode {
        self.mode
    }

    /// The specialisation that runs.
    pub fn variant(&self) -> &SelectVariant {
        &self.variant
    }

    /// The policy: tile size, tiles, tile-state bytes.
    pub fn policy(&self) -> &SelectPolicy {
        &self.policy
    }

    /// For tests: waits for `stream` and says whether the tile states that the next launch on
    /// it will use without a memset are zero wherever it reads them (`None` where that launch
    /// zeroes them itself, or uses none: before the plan's second launch on a stream, after a
    /// launch that was not queued whole, and for selections that count with an atomic).
    #[doc(hidden)]
    pub fn next_tile_states_zeroed(&self, stream: &Stream) -> Result<Option<bool>> {
        self.tile_states.next_set_is_zeroed(stream)
    }

    /// Bytes one launch reads and writes when it keeps `kept` elements (for bandwidth
    /// figures): the input (and flags) once, the output once, and for an in-order partition
    /// the rejected elements read and written again.
    pub fn bytes_moved(&self, kept: u64) -> u64 {
        let (n, size) = (self.n as u64, std::mem::size_of::<T>() as u64);
        let flags = if self.mode == SelectMode::Flagged { n } else { 0 };
        let written = match self.mode {
            SelectMode::Count => 0,
            SelectMode::Indices => 8 * kept,
            SelectMode::Partition => n * size + 2 * (n - kept) * size,
            SelectMode::PartitionReversed => n * size,
            _ => kept * size,
        };
        n * size + flags + written
    }

    fn check(&self, modes: &[SelectMode], what: &str, lens: &[(&str, usize)]) -> Result<()> {
        if !modes.contains(&self.mode) {
            return Err(Error::invalid(format!("{what} needs a plan made for it, not one for {:?}", self.mode)));
        }
        for (name, len) in lens {
            if *len != self.n {
                return Err(Error::invalid(format!(
                    "this plan selects from {} elements, but the {name} has {len} (outputs need room for all)",
                    self.n
                )));
            }
        }
        Ok(())
    }

    /// Queues a selection (stable or unordered) or a partition of `input` into `output` (as
    /// long as the input: what is kept fills its front).
    pub fn launch(
        &mut self,
        stream: &Stream,
        input: &DeviceView<'_, T>,
        output: &mut DeviceViewMut<'_, T>,
    ) -> Result<()> {
        use SelectMode::*;
        self.check(
            &[Stable, Unordered, Partition, PartitionReversed],
            "launch",
            &[("input", input.len()), ("output", output.len())],
        )?;
        let cu = stream.cuda_stream();
        self.launch_raw(stream, input.ptr(cu).cast(), DevPtr::default(), output.ptr_mut(cu).cast())
    }

    /// Queues the indices of the passing elements of `input` into `output` (as long as the input).
    pub fn launch_indices(
        &mut self,
        stream: &Stream,
        input: &DeviceView<'_, T>,
        output: &mut DeviceViewMut<'_, u64>,
    ) -> Result<()> {
        self.check(&[SelectMode::Indices], "launch_indices", &[("input", input.len()), ("output", output.len())])?;
        let cu = stream.cuda_stream();
        self.launch_raw(stream, input.ptr(cu).cast(), DevPtr::default(), output.ptr_mut(cu).cast())
    }

    /// Queues the selection of the flagged elements of `input` into `output`.
    pub fn launch_flagged<F: SelectFlag>(
        &mut self,
        stream: &Stream,
        input: &DeviceView<'_, T>,
        flags: &DeviceView<'_, F>,
        output: &mut DeviceViewMut<'_, T>,
    ) -> Result<()> {
        const { assert!(std::mem::size_of::<F>() == 1, "flags are bytes") };
        self.check(
            &[SelectMode::Flagged],
            "launch_flagged",
            &[("input", input.len()), ("flags", flags.len()), ("output", output.len())],
        )?;
        let cu = stream.cuda_stream();
        self.launch_raw(stream, input.ptr(cu).cast(), flags.ptr(cu).cast(), output.ptr_mut(cu).cast())
    }

    /// Queues the count of the passing elements of `input`.
    pub fn launch_count(&mut self, stream: &Stream, input: &DeviceView<'_, T>) -> Result<()> {
        self.check(&[SelectMode::Count], "launch_count", &[("input", input.len())])?;
        let cu = stream.cuda_stream();
        self.launch_raw(stream, input.ptr(cu).cast(), DevPtr::default(), DevPtr::default())
    }

    fn launch_raw(&mut self, stream: &Stream, input: DevPtr<u8>, flags: DevPtr<u8>, output: DevPtr<u8>) -> Result<()> {
        let Some(kernel) = &self.kernel else { return Ok(()) };
        let atomic = matches!(self.mode, SelectMode::Unordered | SelectMode::Count);
        let count =
            if atomic { stream.zeroed(&mut self.count)? } else { self.count.view_mut().ptr_mut(stream.cuda_stream()) };
        let layout = self.policy.states;
        let mut workspace = stream.workspace();
        // Only the ordered kernels look back; the others count with one atomic.
        let tile_states = if atomic {
            layout.at(DevPtr::default())
        } else {
            self.tile_states.for_launch(stream, &mut workspace, "select tile states")?
        };
        let LookbackStates { states, next: states_next, tiles, groups, supers } = tile_states;
        let params = SelectParams {
            input,
            flags,
            output,
            n: self.n as u64,
            count,
            states,
            states_next,
            tiles,
            groups,
            supers,
            unused: 0,
        };
        let grid =
            if self.mode == SelectMode::Count { self.policy.count_grid(self.dev.info()) } else { layout.tiles as u32 };
        let shape = LaunchShape::new(grid, self.policy.block_threads, self.policy.stage_bytes as usize);
        stream.launch(kernel, shape, &params)?;
        self.tile_states.queued(&tile_states);
        if let Some(reverse) = &self.reverse {
            // Grid-stride over chunks of the rejected range (select.cu, several pairs a thread):
            // blocks for up to 2,048 threads a multiprocessor where the rejected half fills them
            // (counted here at a pair a thread, an upper bound: blocks past the last chunk
            // return at once).
            let half = (self.n as u64 / 2).div_ceil(self.policy.block_threads as u64);
            let per_sm = (2048 / self.policy.block_threads).max(1) as u64;
            let grid = half.clamp(1, self.dev.info().multiprocessors as u64 * per_sm) as u32;
            let params = ReverseParams { data: output, n: self.n as u64, count };
            stream.launch(reverse, LaunchShape::new(grid, self.policy.block_threads, 0), &params)?;
        }
        Ok(())
    }

    /// Waits for the last launch on `stream` and returns how many elements it kept (one word
    /// through page-locked memory and an event).
    pub fn read(&self, stream: &Stream) -> Result<u64> {
        if self.n == 0 {
            return Ok(0);
        }
        Ok(self.count_back.read(stream, &self.count.view())?[0])
    }

    /// Selects from `input` into a new buffer (stable, unordered or partition plans): the
    /// kept elements (a partition: all of them), and how many were kept.
    pub fn run(&mut self, input: &DeviceView<'_, T>) -> Result<(DeviceBuffer<T>, u64)> {
        let dev = self.dev.clone();
        let stream = dev.stream();
        let mut out = stream.alloc::<T>(self.n, "select output")?;
        self.launch(stream, input, &mut out.view_mut())?;
        let kept = self.read(stream)?;
        let len = if self.mode.is_partition() { self.n } else { kept as usize };
        Ok((DeviceBuffer::from_parts(out.into_cuda_slice(), len), kept))
    }

    /// The indices of the passing elements of `input`, in a new buffer.
    pub fn run_indices(&mut self, input: &DeviceView<'_, T>) -> Result<DeviceBuffer<u64>> {
        let dev = self.dev.clone();
        let stream = dev.stream();
        let mut out = stream.alloc::<u64>(self.n, "select indices")?;
        self.launch_indices(stream, input, &mut out.view_mut())?;
        let kept = self.read(stream)?;
        Ok(DeviceBuffer::from_parts(out.into_cuda_slice(), kept as usize))
    }

    /// The flagged elements of `input`, in a new buffer.
    pub fn run_flagged<F: SelectFlag>(
        &mut self,
        input: &DeviceView<'_, T>,
        flags: &DeviceView<'_, F>,
    ) -> Result<DeviceBuffer<T>> {
        let dev = self.dev.clone();
        let stream = dev.stream();
        let mut out = stream.alloc::<T>(self.n, "select output")?;
        self.launch_flagged(stream, input, flags, &mut out.view_mut())?;
        let kept = self.read(stream)?;
        Ok(DeviceBuffer::from_parts(out.into_cuda_slice(), kept as usize))
    }

    /// The device the plan was made on.
    pub fn device(&self) -> &Arc<CudaDevice> {
        &self.dev
    }
}

impl<T> std::fmt::Debug for SelectPlan<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelectPlan").field("mode", &self.mode).field("variant", &self.variant).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_layout_and_variants() {
        assert_eq!(SelectParams::layout().size, 72);
        assert_eq!(ReverseParams::layout().size, 24);
        let all = SelectVariant::all();
        // Six kernels for each of twelve types, and the partition again in blocks of 512.
        assert_eq!(all.len(), 12 * 6 + 12);
        assert_eq!(all.iter().filter(|v| v.kernel == SelectKernel::Partition && v.shape.0 == 512).count(), 12);
        assert!(all.iter().all(|v| (v.kernel == SelectKernel::Flagged) == v.predicate.is_none()));
        assert!(FAMILY.full_source().contains("sizeof(SelectParams) == 72"));
    }
}
