//! The CUDA side of the run primitives: the kernel family of `runs.cu`, its parameters, and the
//! plan that resolves the policy for one problem, loads the specialisation and launches it (a
//! memset of the tile states at a plan's first and second launch on a stream only, one of the
//! result words for a checked sum whose tile states come from the workspace, then the one
//! kernel).

use super::element::{ReduceByKeyInto, RunKey};
use super::policy::{self, RunsKernelOp, RunsPolicy};
use super::{overflow_error, RunOp};
use crate::device::params::KernelParams;
use crate::device::registry::{Defines, KernelFamily};
use crate::device::{
    CudaDevice, DevPtr, DeviceBuffer, DeviceView, DeviceViewMut, Kernel, LaunchShape, PlanReadBack, Stream,
};
use crate::error::{Error, Result};
use crate::histogram::policy::Tuning;
use crate::reduce::ElementType;
use crate::scan::lookback::{LookbackStates, TileStates, RESULT_OFFSET};
use crate::scan::ScanValue;
use std::marker::PhantomData;
use std::sync::Arc;

crate::kernel_params! {
    /// What `tally_runs` reads.
    pub(crate) struct RunsParams as "RunsParams" {
        /// The keys (`const K*`).
        keys: DevPtr<u8>,
        /// Reduce-by-key: the values (`const V*`); null otherwise.
        values: DevPtr<u8>,
        /// The first key of every run (`K*`).
        out_keys: DevPtr<u8>,
        /// Run lengths or combined values (`O*`); null for unique.
        out_values: DevPtr<u8>,
        n: u64,
        key_capacity: u64,
        value_capacity: u64,
        /// [0]: the number of runs; [1]: 1 when a checked sum overflowed (zeroed before each launch
        /// of a checked sum).
        result: DevPtr<u64>,
        /// The tile counter and look-back slots (zeroed before the launch).
        states: DevPtr<u8>,
        /// A kept plan's other set of tile states, which the launch zeroes; null for none.
        states_next: DevPtr<u8>,
        tiles: u32,
        groups: u32,
        supers: u32,
        deterministic: u32,
    }
}

/// `runs.cu`: unique, run-length encoding and reduce-by-key.
pub static FAMILY: KernelFamily = KernelFamily {
    name: "runs.cu",
    source: include_str!("../kernels/runs.cu"),
    params: || vec![RunsParams::layout()],
    variants: |_| RunsVariant::all().iter().map(RunsVariant::defines).collect(),
};

/// One specialisation of `runs.cu`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunsVariant {
    /// The key type.
    pub key: ElementType,
    /// Reduce-by-key's value type (the key type otherwise).
    pub value: ElementType,
    /// Reduce-by-key's output type (u64 for encode and unique).
    pub output: ElementType,
    /// What the kernel computes.
    pub op: RunsKernelOp,
    /// The policy's shape of a tile: threads per block, rows, blocks per multiprocessor.
    pub shape: (u32, u32, u32),
}

impl RunsVariant {
    /// The specialisation for `op` over keys of `key` (values of `value` into `output` for
    /// reduce-by-key).
    pub fn new(key: ElementType, value: ElementType, output: ElementType, op: RunsKernelOp) -> Self {
        let values = (!matches!(op, RunsKernelOp::Unique | RunsKernelOp::Encode)).then_some((value, output));
        let (value, output) = values.unwrap_or((key, ElementType::U64));
        let shape = policy::policy(key, values, op, 0, &Tuning::default()).expect("the default shape fits").shape();
        RunsVariant { key, value, output, op, shape }
    }

    /// Every specialisation tally compiles ahead (CI's check): unique and encode of every key
    /// type; reduce-by-key of every key type with f32 sums, i32 sums into i64 and f64 maxima;
    /// and with i32 keys, every value type's sum into its default output and minimum (f16 and
    /// bf16 values into f32). Other
    /// combinations compile on first use, from the same source.
    pub fn all() -> Vec<RunsVariant> {
        use ElementType::*;
        let mut v = Vec::new();
        for key in ElementType::ALL {
            v.push(RunsVariant::new(key, key, U64, RunsKernelOp::Unique));
            v.push(RunsVariant::new(key, key, U64, RunsKernelOp::Encode));
            v.push(RunsVariant::new(key, F32, F32, RunsKernelOp::Sum));
            v.push(RunsVariant::new(key, I32, I64, RunsKernelOp::Sum));
            v.push(RunsVariant::new(key, F64, F64, RunsKernelOp::Max));
        }
        for value in ElementType::ALL {
            let wide = match value {
                U8 | U16 | U32 => U64,
                I8 | I16 | I32 => I64,
                other => other.arithmetic(),
            };
            if !matches!(value, F32 | I32) {
                v.push(RunsVariant::new(I32, value, wide, RunsKernelOp::Sum));
            }
            v.push(RunsVariant::new(I32, value, value.arithmetic(), RunsKernelOp::Min));
        }
        v
    }

    /// The defines that select this specialisation.
    pub fn defines(&self) -> Defines {
        let (block_threads, vecs, min_blocks) = self.shape;
        vec![
            ("TALLY_KEY", self.key.cuda_type().to_string()),
            ("TALLY_VALUE", self.value.cuda_type().to_string()),
            ("TALLY_OUT", self.output.cuda_type().to_string()),
            ("TALLY_OUT_FLOAT", (self.output.is_float() as u32).to_string()),
            ("TALLY_OUT_SIGNED", (self.output.is_signed_int() as u32).to_string()),
            ("TALLY_RUNS", self.op.cpp().to_string()),
            ("TALLY_BLOCK_THREADS", block_threads.to_string()),
            ("TALLY_VECS", vecs.to_string()),
            ("TALLY_MIN_BLOCKS", min_blocks.to_string()),
        ]
    }
}

/// Unique, run-length encoding or reduce-by-key of `n` resident keys of `K` (with values of
/// `V` combined into `O`), ready to launch: policy resolved, kernel loaded, result words
/// allocated. Build it once and run it many times; a launch queues the work (the one kernel,
/// after a memset of the tile states at the plan's first and second launch on a stream, and,
/// for checked sums, of the result words where the tile states come from the workspace: a
/// launch from the plan's kept states keeps its words in their header) and
/// [`RunsPlan::read`] waits and returns the number of runs (two words through page-locked
/// memory), so the launch alone can be timed. One stream at a time uses a plan.
///
/// `RunsPlan<K>` ([`RunsPlan::unique`], [`RunsPlan::encode`]) writes keys and `u64` lengths;
/// [`RunsPlan::reduce_by_key`] writes keys and values of `O`.
pub struct RunsPlan<K, V = K, O = u64> {
    dev: Arc<CudaDevice>,
    kernel: Option<Kernel<RunsParams>>,
    variant: RunsVariant,
    policy: RunsPolicy,
    deterministic: bool,
    /// Whether the kernel checks its sums for overflow (`CHECKED` in `runs.cu`): only then does
    /// it write result word 1, which a launch then clears and `read` then tests.
    checked: bool,
    /// Whether the last launch wrote its result words into its kept tile states' header (a
    /// checked sum's launch from a kept set, whose words are zeroed with the states) rather
    /// than into `result`.
    result_in_states: bool,
    n: usize,
    result: DeviceBuffer<u64>,
    /// The result words' page-locked copy on the host (one stream at a time uses a plan).
    result_back: PlanReadBack,
    tile_states: TileStates,
    /// The capacities of the last launch's outputs (keys, values).
    capacity: (u64, u64),
    _types: PhantomData<fn(K, V) -> O>,
}

impl<K, V, O> std::fmt::Debug for RunsPlan<K, V, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunsPlan")
            .field("variant", &self.variant)
            .field("policy", &self.policy)
            .field("deterministic", &self.deterministic)
            .finish()
    }
}

impl<K: RunKey> RunsPlan<K> {
    /// Prepares unique (the first key of every run) of `n` keys.
    pub fn unique(dev: &Arc<CudaDevice>, n: usize) -> Result<Self> {
        RunsPlan::build(dev, RunsKernelOp::Unique, n)
    }

    /// Prepares the run-length encoding (the first key and the length of every run) of `n` keys.
    pub fn encode(dev: &Arc<CudaDevice>, n: usize) -> Result<Self> {
        RunsPlan::build(dev, RunsKernelOp::Encode, n)
    }

    /// Queues unique of `keys` into `out_keys` (which should hold `keys.len()` elements: a
    /// shorter output holds the first runs, and [`RunsPlan::read`] reports that it was short).
    pub fn launch_unique(
        &mut self,
        stream: &Stream,
        keys: &DeviceView<'_, K>,
        out_keys: &mut DeviceViewMut<'_, K>,
    ) -> Result<()> {
        self.require(RunsKernelOp::Unique, "unique")?;
        self.check_len("keys", keys.len())?;
        let cu = stream.cuda_stream();
        self.capacity = (out_keys.len() as u64, 0);
        self.launch_raw(stream, keys.ptr(cu).cast(), DevPtr::default(), out_keys.ptr_mut(cu).cast(), DevPtr::default())
    }

    /// Queues the run-length encoding of `keys` into `out_keys` and `out_counts` (see
    /// [`RunsPlan::launch_unique`] on their lengths).
    pub fn launch_encode(
        &mut self,
        stream: &Stream,
        keys: &DeviceView<'_, K>,
        out_keys: &mut DeviceViewMut<'_, K>,
        out_counts: &mut DeviceViewMut<'_, u64>,
    ) -> Result<()> {
        self.require(RunsKernelOp::Encode, "encode")?;
        self.check_len("keys", keys.len())?;
        let cu = stream.cuda_stream();
        self.capacity = (out_keys.len() as u64, out_counts.len() as u64);
        let (k, c) = (out_keys.ptr_mut(cu).cast(), out_counts.ptr_mut(cu).cast());
        self.launch_raw(stream, keys.ptr(cu).cast(), DevPtr::default(), k, c)
    }
}

impl<K: RunKey, V: ReduceByKeyInto<O>, O: ScanValue> RunsPlan<K, V, O> {
    /// Prepares reduce-by-key of `n` keys and values by `op`. Count runs the encoding and
    /// writes `u64` counts (`O` must be `u64`); sum, min and max need a value type that
    /// combines into `O` (every type into itself, narrow integers' sums into 64 bits).
    pub fn reduce_by_key(dev: &Arc<CudaDevice>, op: RunOp, n: usize) -> Result<Self> {
        super::check_output::<V, O>(op)?;
        let kernel_op = match op {
            RunOp::Sum => RunsKernelOp::Sum,
            RunOp::Min => RunsKernelOp::Min,
            RunOp::Max => RunsKernelOp::Max,
            RunOp::Count => RunsKernelOp::Encode,
        };
        RunsPlan::build(dev, kernel_op, n)
    }

    fn build(dev: &Arc<CudaDevice>, op: RunsKernelOp, n: usize) -> Result<Self> {
        let reduce = !matches!(op, RunsKernelOp::Unique | RunsKernelOp::Encode);
        let policy = policy::policy(K::TYPE, reduce.then_some((V::TYPE, O::TYPE)), op, n as u64, dev.tuning())?;
        let variant = RunsVariant { shape: policy.shape(), ..RunsVariant::new(K::TYPE, V::TYPE, O::TYPE, op) };
        let stage_bytes = policy.stage_bytes as usize;
        let kernel = if n > 0 {
            Some(dev.kernel::<RunsParams>(&FAMILY, &variant.defines(), "tally_runs", stage_bytes)?)
        } else {
            None
        };
        let result = dev.stream().alloc_zeros::<u64>(2, "run count")?;
        let result_back = PlanReadBack::new(dev.stream(), 2)?;
        Ok(RunsPlan {
            dev: dev.clone(),
            kernel,
            variant,
            policy,
            deterministic: op == RunsKernelOp::Sum && O::TYPE.is_float(),
            checked: policy::checks_overflow(op, O::TYPE),
            result_in_states: false,
            n,
            result,
            result_back,
            tile_states: TileStates::new(policy.states),
            capacity: (0, 0),
            _types: PhantomData,
        })
    }

    /// Queues reduce-by-key of `keys` and `values` into `out_keys` and `out_values` (see
    /// [`RunsPlan::launch_unique`] on their lengths).
    pub fn launch_reduce(
        &mut self,
        stream: &Stream,
        keys: &DeviceView<'_, K>,
        values: &DeviceView<'_, V>,
        out_keys: &mut DeviceViewMut<'_, K>,
        out_values: &mut DeviceViewMut<'_, O>,
    ) -> Result<()> {
        if self.variant.op == RunsKernelOp::Unique {
            return Err(Error::invalid("this launch needs a plan made by reduce_by_key"));
        }
        self.check_len("keys", keys.len())?;
        self.check_len("values", values.len())?;
        let cu = stream.cuda_stream();
        self.capacity = (out_keys.len() as u64, out_values.len() as u64);
        let (k, v) = (out_keys.ptr_mut(cu).cast(), out_values.ptr_mut(cu).cast());
        self.launch_raw(stream, keys.ptr(cu).cast(), values.ptr(cu).cast(), k, v)
    }

    /// Waits for `stream` and returns the number of runs of the last launch; an
    /// [`Error::Overflow`] if a checked 64-bit integer sum left its range, and an
    /// [`Error::InvalidArgument`] if an output was shorter than the runs.
    pub fn read(&self, stream: &Stream) -> Result<u64> {
        if self.n == 0 {
            return Ok(0);
        }
        let words = if self.result_in_states {
            self.result_back.read(stream, &self.tile_states.result_words()?)?
        } else {
            self.result_back.read(stream, &self.result.view())?
        };
        if self.checked && words[1] != 0 {
            return Err(overflow_error::<O>());
        }
        let runs = words[0];
        let (keys, values) = self.capacity;
        let short = runs > keys || (self.variant.op != RunsKernelOp::Unique && runs > values);
        if short {
            return Err(Error::invalid(format!(
                "{runs} runs do not fit outputs of {keys} keys and {values} values (give them one element per key)"
            )));
        }
        Ok(runs)
    }

    /// The specialisation that runs.
    pub fn variant(&self) -> &RunsVariant {
        &self.variant
    }

    /// The policy: tile size, tiles, tile-state bytes.
    pub fn policy(&self) -> &RunsPolicy {
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

    /// For tests: whether the last launch wrote its result words into its kept tile states'
    /// header (a checked sum launched from a kept set) rather than the plan's own words.
    #[doc(hidden)]
    pub fn result_words_in_tile_states(&self) -> bool {
        self.result_in_states
    }

    /// Whether the fixed (deterministic) look-back runs: float sums.
    pub fn deterministic(&self) -> bool {
        self.deterministic
    }

    /// The kernel's launch: one block per tile.
    pub fn launch_shape(&self) -> LaunchShape {
        LaunchShape::new(self.policy.states.tiles as u32, self.policy.block_threads, self.policy.stage_bytes as usize)
    }

    /// Bytes a launch that found `runs` runs read and wrote (keys, values, and per run a key
    /// and a length or value): for bandwidth figures.
    pub fn bytes_moved(&self, runs: u64) -> u64 {
        let (k, v, o) = (K::TYPE.size() as u64, V::TYPE.size() as u64, O::TYPE.size() as u64);
        match self.variant.op {
            RunsKernelOp::Unique => self.n as u64 * k + runs * k,
            RunsKernelOp::Encode => self.n as u64 * k + runs * (k + 8),
            _ => self.n as u64 * (k + v) + runs * (k + o),
        }
    }

    /// The device the plan was made on.
    pub fn device(&self) -> &Arc<CudaDevice> {
        &self.dev
    }

    fn require(&self, op: RunsKernelOp, what: &str) -> Result<()> {
        if self.variant.op != op {
            return Err(Error::invalid(format!("this launch needs a plan made by {what}")));
        }
        Ok(())
    }

    fn check_len(&self, what: &str, len: usize) -> Result<()> {
        if len != self.n {
            return Err(Error::invalid(format!("this plan reads {} keys, but the {what} have {len}", self.n)));
        }
        Ok(())
    }

    fn launch_raw(
        &mut self,
        stream: &Stream,
        keys: DevPtr<u8>,
        values: DevPtr<u8>,
        out_keys: DevPtr<u8>,
        out_values: DevPtr<u8>,
    ) -> Result<()> {
        let Some(kernel) = &self.kernel else { return Ok(()) };
        let shape = self.launch_shape();
        // Until this launch is prepared, a read finds no result words in tile states.
        self.result_in_states = false;
        let mut workspace = stream.workspace();
        let tile_states = self.tile_states.for_launch(stream, &mut workspace, "run tile states")?;
        let LookbackStates { states, next: states_next, tiles, groups, supers } = tile_states;
        // The last tile always writes the count (word 0); only a checked sum writes word 1, which
        // must start at zero: a checked launch keeps both words in the kept set's header where
        // it has one, otherwise zeroes the plan's own. Other plans write their own words and skip
        // the memset (word 1 was zeroed when the plan was made).
        let in_states = tile_states.kept_header(RESULT_OFFSET).filter(|_| self.checked);
        self.result_in_states = in_states.is_some();
        let result = match in_states {
            Some(words) => words,
            None if self.checked => stream.zeroed(&mut self.result)?,
            None => self.result.view_mut().ptr_mut(stream.cuda_stream()),
        };
        let params = RunsParams {
            keys,
            values,
            out_keys,
            out_values,
            n: self.n as u64,
            key_capacity: self.capacity.0,
            value_capacity: self.capacity.1,
            result,
            states,
            states_next,
            tiles,
            groups,
            supers,
            deterministic: self.deterministic as u32,
        };
        stream.launch(kernel, shape, &params)?;
        self.tile_states.queued(&tile_states);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_layout_and_distinct_variants() {
        assert!(FAMILY.full_source().contains("sizeof(RunsParams) == 96"));
        let all = RunsVariant::all();
        let distinct: std::collections::HashSet<Defines> = all.iter().map(RunsVariant::defines).collect();
        assert_eq!((all.len(), distinct.len()), (12 * 5 + 10 + 12, all.len()));
    }
}
