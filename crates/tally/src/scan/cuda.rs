//! The CUDA side of the scans: the kernel family of `scan.cu`, its parameters, and the plan
//! that resolves the policy for one problem, loads the specialisation and launches it (the one
//! kernel; a memset of the tile states at a plan's first and second launch on a stream, and at
//! a checked sum's first on a stream, one of its overflow flag: later launches keep it in the
//! tile states).

use super::element::{ScanInto, ScanKey, ScanValue};
use super::lookback::{LookbackStates, TileStates, FLAG_OFFSET};
use super::policy::{self, ScanKernelOp, ScanPolicy, ScanShape};
use super::{overflow_error, ScanOp, ScanOptions};
use crate::device::params::KernelParams;
use crate::device::registry::{Defines, KernelFamily};
use crate::device::{CudaDevice, DevPtr, DeviceBuffer, DeviceView, DeviceViewMut, Kernel, LaunchShape, Stream};
use crate::error::{Error, Result};
use crate::histogram::Tuning;
use crate::reduce::ElementType;
use std::marker::PhantomData;
use std::sync::Arc;

crate::kernel_params! {
    /// What `tally_scan` reads.
    pub(crate) struct ScanParams as "ScanParams" {
        /// The elements (the kernel's `const T*`).
        input: DevPtr<u8>,
        /// Scan by key: the keys (`const Key*`); null otherwise.
        keys: DevPtr<u8>,
        /// The output (`O*`); the input's address for a scan in place.
        output: DevPtr<u8>,
        n: u64,
        /// Set to 1 by a checked sum that overflowed (zeroed before each launch of one: the plan's
        /// own word, or from a kept set of tile states a word of their header).
        overflow: DevPtr<u32>,
        /// The tile counter and slot arrays (zeroed before the launch).
        states: DevPtr<u8>,
        /// A kept plan's other set of tile states, which the launch zeroes; null for none.
        states_next: DevPtr<u8>,
        tiles: u32,
        groups: u32,
        supers: u32,
        exclusive: u32,
        deterministic: u32,
        check_overflow: u32,
        /// 1 where `carry` comes before element 0 (a shard of a scan over several devices).
        has_carry: u32,
        /// The carry's bits: a value of the output type in the low bytes.
        carry: u64,
    }
}

/// `scan.cu`: every scan.
pub static FAMILY: KernelFamily = KernelFamily {
    name: "scan.cu",
    source: include_str!("../kernels/scan.cu"),
    params: || vec![ScanParams::layout()],
    variants: |_| ScanVariant::all().iter().map(ScanVariant::defines).collect(),
};

/// The 64-bit output of a narrow integer type's sums.
fn wide_of(elem: ElementType) -> Option<ElementType> {
    use ElementType::*;
    match elem {
        U8 | U16 | U32 => Some(U64),
        I8 | I16 | I32 => Some(I64),
        _ => None,
    }
}

/// One specialisation of `scan.cu`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanVariant {
    /// The input type.
    pub input: ElementType,
    /// The output and accumulator type.
    pub output: ElementType,
    /// The operation.
    pub op: ScanKernelOp,
    /// Scan by key: bytes per key (4 or 8); 0 for a plain scan.
    pub key_bytes: u32,
    /// Custom: the expression and the identity.
    pub custom: Option<(String, String)>,
    /// The launch policy's shape of a tile: threads per block, rows, blocks per multiprocessor,
    /// staging.
    pub shape: ScanShape,
}

impl ScanVariant {
    /// Every specialisation tally compiles ahead (CI's check): every type into itself (f16 and
    /// bf16 into f32) by sum, min and max, narrow integers' sums into 64 bits, plain and by 4- and 8-byte keys, and
    /// one custom example per type; the sums whose shape depends on the size in both their shapes
    /// (plain 4-byte sums into their own type or 64 bits, f32 by 4-byte keys). Other combinations (min and max into 64 bits, custom
    /// operations) compile on first use, from the same source.
    pub fn all() -> Vec<ScanVariant> {
        let mut v = Vec::new();
        for key_bytes in [0, 4, 8] {
            for elem in ElementType::ALL {
                let variant_at = |n: u64, output: ElementType, op, custom| {
                    let p = policy::policy(elem, output, op, key_bytes, n, &Tuning::default()).expect("default policy");
                    ScanVariant { input: elem, output, op, key_bytes, custom, shape: p.shape() }
                };
                let variant = |output, op, custom| variant_at(0, output, op, custom);
                // A sum's shape at the smallest sizes, and where it differs (the `SMALL_*_MAX_ITEMS`
                // of the policy: plain 4-byte sums, into their own type or 64 bits, and f32 by
                // 4-byte keys) at the largest.
                let sums = |output| {
                    let (small, large) = (
                        variant(output, ScanKernelOp::Sum, None),
                        variant_at(1 << 40, output, ScanKernelOp::Sum, None),
                    );
                    let differs = large.shape != small.shape;
                    std::iter::once(small).chain(differs.then_some(large))
                };
                // 16-bit floats scan into f32, their accumulator; every other type into itself.
                let own = elem.arithmetic();
                v.extend(sums(own));
                for op in [ScanKernelOp::Min, ScanKernelOp::Max] {
                    v.push(variant(own, op, None));
                }
                if let Some(wide) = wide_of(elem) {
                    v.extend(sums(wide));
                }
                if key_bytes == 0 || elem == ElementType::F32 {
                    let custom = Some(("a > b ? a : b".to_string(), "0".to_string()));
                    v.push(variant(own, ScanKernelOp::Custom, custom));
                }
            }
        }
        v
    }

    /// The defines that select this specialisation.
    pub fn defines(&self) -> Defines {
        let ScanShape { block_threads, vecs, min_blocks, staged, windows, split, tiles_by_block, ordered } = self.shape;
        let mut d: Defines = vec![
            ("TALLY_ELEM", self.input.cuda_type().to_string()),
            ("TALLY_OUT", self.output.cuda_type().to_string()),
            ("TALLY_OUT_FLOAT", (self.output.is_float() as u32).to_string()),
            ("TALLY_OUT_SIGNED", (self.output.is_signed_int() as u32).to_string()),
            ("TALLY_SCAN", self.op.cpp().to_string()),
            ("TALLY_KEY_BYTES", self.key_bytes.to_string()),
            ("TALLY_BLOCK_THREADS", block_threads.to_string()),
            ("TALLY_VECS", vecs.to_string()),
            ("TALLY_MIN_BLOCKS", min_blocks.to_string()),
            ("TALLY_SCAN_STAGE", (staged as u32).to_string()),
            ("TALLY_LOOKBACK_WINDOWS", windows.to_string()),
            ("TALLY_SPLIT_LOOKBACK", (split as u32).to_string()),
            ("TALLY_TILES_BY_BLOCK", (tiles_by_block as u32).to_string()),
            ("TALLY_LOOKBACK_ORDERED", (ordered as u32).to_string()),
        ];
        if let Some((expr, identity)) = &self.custom {
            d.push(("TALLY_CUSTOM_EXPR", expr.clone()));
            d.push(("TALLY_CUSTOM_IDENTITY", identity.clone()));
        }
        d
    }
}

/// A scan ready to launch on `n` resident elements of `T` into `O`: policy resolved, kernel
/// loaded, overflow flag allocated. Build it once for an op, types and size and run it many
/// times; [`ScanPlan::launch`] queues the work (the one kernel, after a memset of the tile
/// states at the plan's first and second launch on a stream only, and of a checked sum's
/// overflow flag where its tile states come from the workspace) and [`ScanPlan::read`] waits and reports an overflow, so the
/// launch alone can be timed.
/// One stream at a time uses a plan.
pub struct ScanPlan<T, O> {
    dev: Arc<CudaDevice>,
    kernel: Option<Kernel<ScanParams>>,
    variant: ScanVariant,
    policy: ScanPolicy,
    options: ScanOptions,
    deterministic: bool,
    checked: bool,
    n: usize,
    overflow: DeviceBuffer<u32>,
    tile_states: TileStates,
    /// Whether the last launch tried (its kernel queued, or not) kept its overflow flag in its
    /// tile states' header.
    flag_in_states: bool,
    /// The carry-in's bits, where the plan scans a shard that continues earlier ones.
    carry: Option<u64>,
    _types: PhantomData<fn(T) -> O>,
}

impl<T, O> std::fmt::Debug for ScanPlan<T, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanPlan")
            .field("variant", &self.variant)
            .field("options", &self.options)
            .field("policy", &self.policy)
            .field("deterministic", &self.deterministic)
            .finish()
    }
}

impl<T: ScanInto<O>, O: ScanValue> ScanPlan<T, O> {
    /// Prepares a scan by `op` of `n` elements.
    pub fn new(dev: &Arc<CudaDevice>, op: ScanOp, options: ScanOptions, n: usize) -> Result<Self> {
        ScanPlan::build(dev, builtin(op), options, n, 0, None)
    }

    /// Prepares a scan by key (keys of type `K`) by `op` of `n` elements.
    pub fn by_key<K: ScanKey>(dev: &Arc<CudaDevice>, op: ScanOp, options: ScanOptions, n: usize) -> Result<Self> {
        ScanPlan::build(dev, builtin(op), options, n, K::BYTES, None)
    }

    fn build(
        dev: &Arc<CudaDevice>,
        op: ScanKernelOp,
        options: ScanOptions,
        n: usize,
        key_bytes: u32,
        custom: Option<(String, String)>,
    ) -> Result<Self> {
        let policy = policy::policy(T::TYPE, O::TYPE, op, key_bytes, n as u64, dev.tuning())?;
        let variant = ScanVariant { input: T::TYPE, output: O::TYPE, op, key_bytes, custom, shape: policy.shape() };
        if policy.states.tiles > u32::MAX as u64 {
            return Err(Error::invalid(format!("a scan of {n} elements has more tiles than a launch can number")));
        }
        let kernel =
            if n > 0 { Some(dev.kernel::<ScanParams>(&FAMILY, &variant.defines(), "tally_scan", 0)?) } else { None };
        let overflow = dev.stream().alloc_zeros::<u32>(1, "scan overflow flag")?;
        Ok(ScanPlan {
            dev: dev.clone(),
            kernel,
            variant,
            policy,
            options,
            deterministic: options.resolved_deterministic::<O>(op),
            checked: op == ScanKernelOp::Sum && O::CHECKED && !options.wrapping,
            n,
            overflow,
            tile_states: TileStates::new(policy.states),
            flag_in_states: false,
            carry: None,
            _types: PhantomData,
        })
    }

    /// The specialisation that runs.
    pub fn variant(&self) -> &ScanVariant {
        &self.variant
    }

    /// The policy: tile size, tiles, tile-state bytes.
    pub fn policy(&self) -> &ScanPolicy {
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

    /// Whether the deterministic look-back runs (see [`ScanOptions::deterministic`]).
    pub fn deterministic(&self) -> bool {
        self.deterministic
    }

    /// The kernel's launch: one block per tile.
    pub fn launch_shape(&self) -> LaunchShape {
        LaunchShape::new(self.policy.states.tiles as u32, self.policy.block_threads, 0)
    }

    /// Bytes one launch reads and writes (input, keys and output; for bandwidth figures).
    pub fn bytes_moved(&self) -> u64 {
        (self.n * (std::mem::size_of::<T>() + std::mem::size_of::<O>() + self.variant.key_bytes as usize)) as u64
    }

    fn check_len(&self, what: &str, len: usize) -> Result<()> {
        if len != self.n {
            return Err(Error::invalid(format!("this plan scans {} elements, but the {what} has {len}", self.n)));
        }
        Ok(())
    }

    /// Queues the scan of `input` into `output` (both of the plan's length) on `stream`.
    pub fn launch(
        &mut self,
        stream: &Stream,
        input: &DeviceView<'_, T>,
        output: &mut DeviceViewMut<'_, O>,
    ) -> Result<()> {
        self.require_keys(false)?;
        self.check_len("input", input.len())?;
        self.check_len("output", output.len())?;
        let cu = stream.cuda_stream();
        self.launch_raw(stream, DevPtr::default(), input.ptr(cu).cast(), output.ptr_mut(cu).cast())
    }

    /// Queues the scan by key of `input` into `output`, restarting where `keys` change.
    pub fn launch_by_key<K: ScanKey>(
        &mut self,
        stream: &Stream,
        keys: &DeviceView<'_, K>,
        input: &DeviceView<'_, T>,
        output: &mut DeviceViewMut<'_, O>,
    ) -> Result<()> {
        self.require_key_type::<K>()?;
        self.check_len("keys", keys.len())?;
        self.check_len("input", input.len())?;
        self.check_len("output", output.len())?;
        let cu = stream.cuda_stream();
        self.launch_raw(stream, keys.ptr(cu).cast(), input.ptr(cu).cast(), output.ptr_mut(cu).cast())
    }

    fn require_keys(&self, keyed: bool) -> Result<()> {
        if (self.variant.key_bytes != 0) != keyed {
            let want = if keyed { "a plan made by key" } else { "a plan made without keys" };
            return Err(Error::invalid(format!("this launch needs {want}")));
        }
        Ok(())
    }

    fn require_key_type<K: ScanKey>(&self) -> Result<()> {
        self.require_keys(true)?;
        if K::BYTES != self.variant.key_bytes {
            return Err(Error::invalid(format!(
                "this plan was made for {}-byte keys, not {}-byte ones",
                self.variant.key_bytes,
                K::BYTES
            )));
        }
        Ok(())
    }

    fn launch_raw(&mut self, stream: &Stream, keys: DevPtr<u8>, input: DevPtr<u8>, output: DevPtr<u8>) -> Result<()> {
        let Some(kernel) = &self.kernel else { return Ok(()) };
        let shape = self.launch_shape();
        // Until this launch is prepared, a read finds no flag in tile states.
        self.flag_in_states = false;
        let mut workspace = stream.workspace();
        let tile_states = self.tile_states.for_launch(stream, &mut workspace, "scan tile states")?;
        let LookbackStates { states, next: states_next, tiles, groups, supers } = tile_states;
        // Only a checked sum writes the flag: in the kept set's header where it has one,
        // otherwise in the plan's own flag, zeroed first; the other plans skip the memset.
        let in_states = tile_states.kept_header(FLAG_OFFSET).filter(|_| self.checked);
        self.flag_in_states = in_states.is_some();
        let overflow = match in_states {
            Some(flag) => flag,
            None if self.checked => stream.zeroed(&mut self.overflow)?,
            None => self.overflow.view_mut().ptr_mut(stream.cuda_stream()),
        };
        let params = ScanParams {
            input,
            keys,
            output,
            n: self.n as u64,
            overflow,
            states,
            states_next,
            tiles,
            groups,
            supers,
            exclusive: self.options.exclusive as u32,
            deterministic: self.deterministic as u32,
            check_overflow: self.checked as u32,
            has_carry: self.carry.is_some() as u32,
            carry: self.carry.unwrap_or(0),
        };
        stream.launch(kernel, shape, &params)?;
        self.tile_states.queued(&tile_states);
        Ok(())
    }

    /// Waits for `stream`; an [`Error::Overflow`] if the last launch's checked 64-bit integer
    /// sum left its range (the output then holds the wrapped values).
    pub fn read(&self, stream: &Stream) -> Result<()> {
        if self.n == 0 {
            return Ok(());
        }
        if !self.checked {
            return stream.synchronize("the scan");
        }
        let flag = if self.flag_in_states {
            self.tile_states.read_flag(stream)?
        } else {
            stream.download(&self.overflow.view())?[0]
        };
        if flag != 0 {
            return Err(overflow_error::<O>());
        }
        Ok(())
    }

    /// Starts the scan from `carry` (None: from the first element): the result is that of
    /// the scan of `carry` followed by the input, less its first element, as a shard that
    /// continues the shards before it needs (the exclusive scan's first output is `carry`).
    /// Not for scans by key.
    pub fn set_carry(&mut self, carry: Option<O>) -> Result<()> {
        if self.variant.key_bytes != 0 && carry.is_some() {
            return Err(Error::invalid("a scan by key takes no carry-in"));
        }
        self.carry = carry.map(|c| {
            let mut bytes = [0u8; 8];
            // SAFETY: O is a plain value of at most 8 bytes (a scan's element type), copied out
            // byte for byte into the low bytes of the word, as the kernel reads them back.
            unsafe {
                std::ptr::copy_nonoverlapping(&c as *const O as *const u8, bytes.as_mut_ptr(), std::mem::size_of::<O>())
            };
            u64::from_le_bytes(bytes)
        });
        Ok(())
    }

    /// The device the plan was made on.
    pub fn device(&self) -> &Arc<CudaDevice> {
        &self.dev
    }

    /// Whether the plan checks its sums for overflow (64-bit integer sums, not wrapping): only
    /// then does [`ScanPlan::read`] have anything to report, and a caller that does not need to
    /// wait for the results may skip it otherwise.
    pub fn checks_overflow(&self) -> bool {
        self.checked
    }
}

impl<T: ScanInto<T>> ScanPlan<T, T> {
    /// Prepares a custom scan of `n` elements: `expr` is `a OP b` in C++ (associative; it need
    /// not commute), `identity` its neutral element (what an exclusive scan puts first);
    /// `key_bytes` 4 or 8 for a scan by key, 0 otherwise. Compiled once and cached.
    pub fn custom(
        dev: &Arc<CudaDevice>,
        n: usize,
        expr: &str,
        identity: &str,
        options: ScanOptions,
        key_bytes: u32,
    ) -> Result<Self> {
        for (what, text) in [("expression", expr), ("identity", identity)] {
            if text.trim().is_empty() || text.contains(['\n', '\r']) {
                return Err(Error::invalid(format!("the custom {what} must be one non-empty line of C++")));
            }
        }
        if ![0, 4, 8].contains(&key_bytes) {
            return Err(Error::invalid("keys are 4 or 8 bytes"));
        }
        let custom = Some((expr.to_string(), identity.to_string()));
        ScanPlan::build(dev, ScanKernelOp::Custom, options, n, key_bytes, custom)
    }

    /// Queues the scan of `data` in place.
    pub fn launch_in_place(&mut self, stream: &Stream, data: &mut DeviceViewMut<'_, T>) -> Result<()> {
        self.require_keys(false)?;
        self.check_len("data", data.len())?;
        let p = data.ptr_mut(stream.cuda_stream()).cast();
        self.launch_raw(stream, DevPtr::default(), p, p)
    }

    /// Queues the scan by key of `data` in place.
    pub fn launch_by_key_in_place<K: ScanKey>(
        &mut self,
        stream: &Stream,
        keys: &DeviceView<'_, K>,
        data: &mut DeviceViewMut<'_, T>,
    ) -> Result<()> {
        self.require_key_type::<K>()?;
        self.check_len("keys", keys.len())?;
        self.check_len("data", data.len())?;
        let cu = stream.cuda_stream();
        let p = data.ptr_mut(cu).cast();
        self.launch_raw(stream, keys.ptr(cu).cast(), p, p)
    }
}

fn builtin(op: ScanOp) -> ScanKernelOp {
    match op {
        ScanOp::Sum => ScanKernelOp::Sum,
        ScanOp::Min => ScanKernelOp::Min,
        ScanOp::Max => ScanKernelOp::Max,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_layout_and_variants() {
        assert!(FAMILY.full_source().contains("sizeof(ScanParams) == 96"));
        let all = ScanVariant::all();
        // And the large shapes of the same-width 4-byte sums (f32, i32, u32), the widening ones
        // (i32, u32) and the f32 sum by 4-byte keys.
        assert_eq!(all.len(), 3 * (36 + 6) + 12 + 2 + 3 + 2 + 1);
        assert!(all.iter().all(|v| (v.op == ScanKernelOp::Custom) == v.custom.is_some()));
    }
}
