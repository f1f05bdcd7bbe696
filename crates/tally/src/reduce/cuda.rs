//! The CUDA side of the reductions: the kernel family of `reduce.cu`, its parameters, and the
//! plan that resolves the policy for one problem, loads the specialisation and launches it.
//!
//! The kernel writes its result to the plan's `out` words:
//! - sum: floats `[f64 bits, NaNs]`, integers `[low 64 bits, high 64 bits]` (two's complement);
//! - extrema: `[min bits, max bits, min index, max index, NaNs]`;
//! - count: `[count, NaNs]`; custom: `[bits]`;
//! - exact: `[NaN, +inf, -inf, 0]`, then each digit as `[low, high]` (128 bits).

use super::cpu::Extrema;
use super::element::CountBounds;
use super::exact::ExactSum;
use super::partial::Partial;
use super::policy::{self, KernelOp, ReducePolicy, OUT_WORDS};
use super::{empty_error, ElementType, ReduceElement, ReduceOp, ReduceOptions, Reduction};
use crate::device::params::KernelParams;
use crate::device::registry::{Defines, KernelFamily};
use crate::device::{CudaDevice, DevPtr, DeviceBuffer, DeviceView, Kernel, LaunchShape, PlanReadBack, Stream};
use crate::error::{Error, Result};
use std::marker::PhantomData;
use std::sync::Arc;

crate::kernel_params! {
    /// What `tally_reduce` and `tally_reduce_exact` read.
    pub(crate) struct ReduceParams as "ReduceParams" {
        /// The elements (the kernel's `const T*`; typed per plan).
        input: DevPtr<u8>,
        n: u64,
        /// grid partials of the policy's partial bytes (the stream's workspace).
        partials: DevPtr<u8>,
        /// Zero between launches; the last block sets it back.
        ticket: DevPtr<u32>,
        out: DevPtr<u64>,
        lo: f64,
        hi: f64,
        lo_int: i64,
        hi_int: i64,
        lo_open: u32,
        hi_open: u32,
        negate: u32,
        /// Result words the last block posts to the host (`post_to_host`, block.cuh).
        post_words: u32,
        /// The read-back's mapped host words to post them to; null: none.
        post: DevPtr<u64>,
        /// The launch's number, posted after the words.
        sequence: u64,
    }
}

/// `reduce.cu`: every reduction.
pub(crate) static FAMILY: KernelFamily = KernelFamily {
    name: "reduce.cu",
    source: include_str!("../kernels/reduce.cu"),
    params: || vec![ReduceParams::layout()],
    variants: |_| Variant::all().iter().map(Variant::defines).collect(),
};

/// One specialisation of `reduce.cu`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variant {
    /// The element type.
    pub elem: ElementType,
    /// The kernel operation.
    pub op: KernelOp,
    /// Extrema: 1 min, 2 max, 3 both.
    pub sides: u32,
    /// Extrema: track the first index.
    pub want_index: bool,
    /// NaNs are counted and left out.
    pub skip_nan: bool,
    /// Threads per block.
    pub block_threads: u32,
    /// 16-byte loads in flight per thread.
    pub vecs: u32,
    /// Bytes of a block's partial.
    pub partial_bytes: usize,
    /// Custom: the expression and the identity.
    pub custom: Option<(String, String)>,
}

impl Variant {
    /// The kernel operation, sides and index tracking of `op`.
    fn shape_of(op: &ReduceOp, options: &ReduceOptions, elem: ElementType) -> (KernelOp, u32, bool) {
        match op {
            ReduceOp::Sum | ReduceOp::Mean if options.exact && elem.is_float() => (KernelOp::Exact, 3, false),
            ReduceOp::Sum | ReduceOp::Mean => (KernelOp::Sum, 3, false),
            ReduceOp::Min => (KernelOp::Extrema, 1, false),
            ReduceOp::Max => (KernelOp::Extrema, 2, false),
            ReduceOp::MinMax => (KernelOp::Extrema, 3, false),
            ReduceOp::ArgMin => (KernelOp::Extrema, 1, true),
            ReduceOp::ArgMax => (KernelOp::Extrema, 2, true),
            ReduceOp::Count(_) => (KernelOp::Count, 3, false),
        }
    }

    fn new(elem: ElementType, op: KernelOp, sides: u32, want_index: bool, skip_nan: bool) -> Variant {
        // Integers have no NaN: one variant for both settings.
        let skip_nan = skip_nan && elem.is_float() && op != KernelOp::Exact;
        let p = policy::policy(&placeholder_info(), &crate::Tuning::default(), op, elem, 0);
        Variant {
            elem,
            op,
            sides,
            want_index,
            skip_nan,
            block_threads: p.block_threads,
            vecs: p.vecs,
            partial_bytes: p.partial_bytes,
            custom: None,
        }
    }

    /// Every specialisation tally can ask for (custom ones: one example per type).
    pub fn all() -> Vec<Variant> {
        let mut v = Vec::new();
        for elem in ElementType::ALL {
            let skips: &[bool] = if elem.is_float() { &[false, true] } else { &[false] };
            for &skip in skips {
                v.push(Variant::new(elem, KernelOp::Sum, 3, false, skip));
                v.push(Variant::new(elem, KernelOp::Count, 3, false, skip));
                for sides in 1..=3 {
                    v.push(Variant::new(elem, KernelOp::Extrema, sides, false, skip));
                }
                v.push(Variant::new(elem, KernelOp::Extrema, 1, true, skip));
                v.push(Variant::new(elem, KernelOp::Extrema, 2, true, skip));
            }
            if elem.is_float() {
                v.push(Variant::new(elem, KernelOp::Exact, 3, false, false));
            }
            let mut c = Variant::new(elem, KernelOp::Custom, 3, false, false);
            c.custom = Some(("max(a, b)".into(), "0".into()));
            v.push(c);
        }
        v
    }

    /// The defines that select this specialisation.
    pub fn defines(&self) -> Defines {
        let mut d: Defines = vec![
            ("TALLY_ELEM", self.elem.cuda_type().to_string()),
            ("TALLY_ELEM_FLOAT", (self.elem.is_float() as u32).to_string()),
            ("TALLY_ELEM_SIGNED", (self.elem.is_signed_int() as u32).to_string()),
            ("TALLY_REDUCE", self.op.cpp().to_string()),
            ("TALLY_SIDES", self.sides.to_string()),
            ("TALLY_WANT_INDEX", (self.want_index as u32).to_string()),
            ("TALLY_SKIP_NAN", (self.skip_nan as u32).to_string()),
            ("TALLY_BLOCK_THREADS", self.block_threads.to_string()),
            ("TALLY_VECS", self.vecs.to_string()),
            ("TALLY_PARTIAL_BYTES", self.partial_bytes.to_string()),
        ];
        if let Some((expr, identity)) = &self.custom {
            d.push(("TALLY_CUSTOM_EXPR", expr.clone()));
            d.push(("TALLY_CUSTOM_IDENTITY", identity.clone()));
        }
        d
    }
}

/// The shape-independent parts of the policy need no device.
fn placeholder_info() -> crate::device::DeviceInfo {
    crate::device::DeviceInfo {
        name: String::new(),
        compute_capability: (9, 0),
        multiprocessors: 1,
        l2_bytes: 0,
        smem_per_block_optin: 0,
        smem_per_multiprocessor: 0,
        total_memory: 0,
        nvrtc_version: (0, 0),
        target: String::new(),
        cache_dir: None,
    }
}

/// The words of the result that the kernel of `op` writes.
fn result_words(op: KernelOp) -> usize {
    match op {
        KernelOp::Exact => OUT_WORDS,
        KernelOp::Extrema => 5,
        KernelOp::Sum | KernelOp::Count | KernelOp::Custom => 2,
    }
}

/// A reduction ready to launch on `n` resident elements of `T`: policy resolved, kernel loaded,
/// result words and ticket allocated. Build it once for an op, type and size and run it many
/// times; [`ReducePlan::launch`] queues the one kernel and [`ReducePlan::read`] waits for and
/// reads the result, so the kernel alone can be timed (its last block's post to the host
/// included: 1-2 us at small sizes, docs/PERF.md v26). One stream at a time uses a plan.
pub struct ReducePlan<T> {
    dev: Arc<CudaDevice>,
    kernel: Option<Kernel<ReduceParams>>,
    variant: Variant,
    policy: ReducePolicy,
    params: ReduceParams,
    op: ReduceOp,
    options: ReduceOptions,
    n: usize,
    /// The result words' page-locked copy on the host (a plan reads on one stream at a time).
    /// Declared before the device buffers, so that a plan dropped with a launch unread waits
    /// for its event before `out` and the ticket are freed.
    read_back: PlanReadBack,
    out: DeviceBuffer<u64>,
    /// Kept alive for the kernels that take their ticket from it.
    _ticket: DeviceBuffer<u32>,
    _elements: PhantomData<fn(T)>,
}

impl<T: ReduceElement> ReducePlan<T> {
    /// Prepares `op` over `n` elements.
    pub fn new(dev: &Arc<CudaDevice>, op: ReduceOp, options: ReduceOptions, n: usize) -> Result<Self> {
        super::validate::<T>(&op, &options)?;
        let (kop, sides, index) = Variant::shape_of(&op, &options, T::TYPE);
        let variant = Variant::new(T::TYPE, kop, sides, index, options.skip_nan);
        ReducePlan::build(dev, op, options, n, variant)
    }

    /// Prepares a custom reduction over `n` elements: `expr` is `a OP b` in C++ (associative
    /// and commutative), `identity` its neutral element; compiled once and cached.
    pub fn custom(dev: &Arc<CudaDevice>, n: usize, expr: &str, identity: &str) -> Result<Self> {
        for (what, text) in [("expression", expr), ("identity", identity)] {
            if text.trim().is_empty() || text.contains(['\n', '\r']) {
                return Err(Error::invalid(format!("the custom {what} must be one non-empty line of C++")));
            }
        }
        let mut variant = Variant::new(T::TYPE, KernelOp::Custom, 3, false, false);
        variant.custom = Some((expr.to_string(), identity.to_string()));
        ReducePlan::build(dev, ReduceOp::Sum, ReduceOptions::default(), n, variant)
    }

    fn build(dev: &Arc<CudaDevice>, op: ReduceOp, options: ReduceOptions, n: usize, variant: Variant) -> Result<Self> {
        let stream = dev.stream();
        let mut policy = policy::policy(dev.info(), dev.tuning(), variant.op, T::TYPE, n as u64);
        // A tuning may change the loads in flight, which the kernel is compiled for.
        let variant = Variant { vecs: policy.vecs, ..variant };
        let entry = if variant.op == KernelOp::Exact { "tally_reduce_exact" } else { "tally_reduce" };
        let kernel = if n > 0 {
            let k = dev.kernel::<ReduceParams>(&FAMILY, &variant.defines(), entry, policy.smem)?;
            // Never more resident blocks than the occupancy calculator allows (a cap, not a
            // requirement: the last-block pattern needs no co-residency).
            let resident = dev.info().multiprocessors * k.blocks_per_sm(policy.block_threads, policy.smem)?;
            if variant.op != KernelOp::Exact {
                policy.grid = policy.grid.min(resident.max(1));
            }
            Some(k)
        } else {
            None
        };
        let mut out = stream.alloc_zeros::<u64>(OUT_WORDS, "reduction result")?;
        let read_back = PlanReadBack::new(stream, result_words(variant.op))?;
        let mut ticket = stream.alloc_zeros::<u32>(1, "reduction ticket")?;
        let mut params = ReduceParams {
            n: n as u64,
            ticket: ticket.view_mut().ptr_mut(stream.cuda_stream()),
            out: out.view_mut().ptr_mut(stream.cuda_stream()),
            ..Default::default()
        };
        if let ReduceOp::Count(cmp) = op {
            let b = CountBounds::new(cmp, T::TYPE);
            (params.lo, params.hi, params.lo_open, params.hi_open) = (b.lo, b.hi, b.lo_open as u32, b.hi_open as u32);
            // The element's bits: u64 bounds above i64::MAX wrap to the same 64 bits.
            (params.lo_int, params.hi_int, params.negate) = (b.lo_int as i64, b.hi_int as i64, b.negate as u32);
        }
        Ok(ReducePlan {
            dev: dev.clone(),
            kernel,
            variant,
            policy,
            params,
            op,
            options,
            n,
            out,
            read_back,
            _ticket: ticket,
            _elements: PhantomData,
        })
    }

    /// The specialisation that runs.
    pub fn variant(&self) -> &Variant {
        &self.variant
    }

    /// The launch: blocks, threads and shared memory.
    pub fn launch_shape(&self) -> LaunchShape {
        LaunchShape::new(self.policy.grid, self.policy.block_threads, self.policy.smem)
    }

    /// Bytes one launch reads (for bandwidth figures).
    pub fn bytes_read(&self) -> u64 {
        (self.n * std::mem::size_of::<T>()) as u64
    }

    /// Queues the kernel on `stream`, asynchronously: one launch (and an event after it), whose
    /// last block also posts the result words into the plan's page-locked host words, where
    /// [`ReducePlan::read`] polls for them. `input` must have the length the plan was made for.
    /// Where the plan's last launch or read was on another stream, this first waits for it
    /// (the plan's result words and ticket serve one launch at a time).
    pub fn launch(&mut self, stream: &Stream, input: &DeviceView<'_, T>) -> Result<()> {
        self.queue(stream, input, true)
    }

    /// [`ReducePlan::launch`] for a caller that reads the result words on the device
    /// ([`ReducePlan::out_words`]) rather than by [`ReducePlan::read`]: the kernel posts
    /// nothing to the host, and no event is recorded (a streamed reduction launches one a
    /// chunk). A later read copies the device's words.
    pub(crate) fn launch_unposted(&mut self, stream: &Stream, input: &DeviceView<'_, T>) -> Result<()> {
        self.read_back.forget_post();
        self.queue(stream, input, false)
    }

    fn queue(&mut self, stream: &Stream, input: &DeviceView<'_, T>, post: bool) -> Result<()> {
        if input.len() != self.n {
            return Err(Error::invalid(format!(
                "this plan reduces {} elements, but {} were given",
                self.n,
                input.len()
            )));
        }
        let Some(kernel) = &self.kernel else { return Ok(()) };
        let mut workspace = stream.workspace();
        let bytes = self.policy.grid as usize * self.policy.partial_bytes;
        let mut partials = workspace.reserve(stream, bytes, "reduction partials")?;
        let base = ReduceParams {
            input: input.ptr(stream.cuda_stream()).cast(),
            partials: partials.ptr_mut(stream.cuda_stream()),
            post_words: self.result_words() as u32,
            ..self.params
        };
        let shape = self.launch_shape();
        if !post {
            return stream.launch(kernel, shape, &base);
        }
        // The last block posts the result words to the host as well, where `read` waits for
        // them (the device's words stay for device-side readers: device sets).
        self.read_back.launch_posting(stream, |target| {
            let params = match target {
                Some(t) => ReduceParams { post: t.words, sequence: t.sequence, ..base },
                None => base,
            };
            stream.launch(kernel, shape, &params)
        })
    }

    /// Whether the last launch posts its result for the next read (tests: the posted path ran).
    #[doc(hidden)]
    pub fn result_posted(&self) -> bool {
        self.read_back.has_post()
    }

    /// Fills the result words and the workspace's partials with a garbage pattern (tests: a
    /// result must not depend on what the memory held).
    #[doc(hidden)]
    pub fn poison(&mut self, stream: &Stream) -> Result<()> {
        let garbage = vec![0xa5a5_a5a5_a5a5_a5a5u64; OUT_WORDS];
        let cu = stream.cuda_stream().clone();
        let mut view = self.out.view_mut();
        cu.memcpy_htod(&garbage, view.inner_mut()).map_err(crate::error::driver("cuMemcpyHtoDAsync"))?;
        let bytes = (self.policy.grid as usize * self.policy.partial_bytes).max(1);
        let mut workspace = stream.workspace();
        let mut partials = workspace.reserve(stream, bytes, "reduction partials")?;
        let junk = vec![0xa5u8; partials.len()];
        cu.memcpy_htod(&junk, partials.inner_mut()).map_err(crate::error::driver("cuMemcpyHtoDAsync"))?;
        stream.synchronize("poisoning")
    }

    /// Reads the result of the last launch: as soon as the kernel posted it, which may be
    /// before the launch has retired, and without waiting for work queued on `stream` after it
    /// (synchronise the stream for that). A second read of the same launch, or a read after
    /// work on the device's words, copies them after the work queued on `stream` so far.
    pub fn read(&self, stream: &Stream) -> Result<Reduction> {
        if self.n == 0 {
            if self.op.needs_elements() {
                return Err(empty_error(&self.op));
            }
            return super::cpu::reduce::<T>(&[], self.op, self.options).map(|e| Reduction { backend: "cuda", ..e });
        }
        let w = self.read_words(stream)?;
        self.partial(&w, 0)?.finish(self.op, self.options, self.n as u64, "cuda")
    }

    /// The result words of the last launch (only those this op writes: a small read is a fast
    /// read): as the kernel posted them to page-locked memory ([`ReducePlan::read`]), or copied
    /// there after the work queued on `stream`.
    pub(crate) fn read_words(&self, stream: &Stream) -> Result<Vec<u64>> {
        self.read_back.read(stream, &self.out_words().slice(..self.result_words()).expect("the result words"))
    }

    /// The words of `out` that this op writes (a small read is a fast read).
    pub(crate) fn result_words(&self) -> usize {
        result_words(self.variant.op)
    }

    /// The result words of the last launch, in place.
    pub(crate) fn out_words(&self) -> DeviceView<'_, u64> {
        self.out.view()
    }

    /// The state that result words `w` of this plan's last launch stand for, its elements
    /// numbered from `first` in the whole input.
    pub(crate) fn partial(&self, w: &[u64], first: u64) -> Result<Partial<T>> {
        self.partial_of(w, first, self.n as u64)
    }

    /// The state that result words `w` of a launch of this plan's op over elements
    /// `first..first + n` stand for (another device's words, for a device set).
    pub(crate) fn partial_of(&self, w: &[u64], first: u64, n: u64) -> Result<Partial<T>> {
        let skip = self.options.skip_nan;
        Ok(match self.variant.op {
            KernelOp::Sum if T::TYPE.is_float() => Partial::FloatSum { sum: f64::from_bits(w[0]), nan: w[1] },
            KernelOp::Sum => Partial::IntSum((w[0] as u128 | (w[1] as u128) << 64) as i128),
            KernelOp::Exact => {
                let mut e = ExactSum::new();
                e.add_special_counts(w[0], w[1], w[2]);
                // Digit d weighs 2^(8d) units of 2^-149 (f32, f16, bf16) or 2^(32d) units of 2^-1074 (f64).
                let (bits, base) = if policy::exact_as_f32(T::TYPE) { (8, 1074 - 149) } else { (32, 0) };
                for d in 0..policy::exact_digits(T::TYPE) {
                    let v = (w[4 + 2 * d] as u128 | (w[5 + 2 * d] as u128) << 64) as i128;
                    if v != 0 {
                        e.add_scaled(v, base + bits * d as u32);
                    }
                }
                Partial::Exact(Box::new(e))
            }
            KernelOp::Count => Partial::Count { count: w[0], nan: w[1] },
            KernelOp::Extrema => {
                let nan = if skip { w[4] } else { 0 };
                // Every element a skipped NaN: no extremum. Without index tracking, the chunk's
                // first index stands for "here", so that ties across chunks keep the earlier.
                let index = |side: u32, word: u64| match () {
                    _ if nan == n || self.variant.sides & side == 0 => u64::MAX,
                    _ if !self.variant.want_index => first,
                    _ if word == u64::MAX => u64::MAX,
                    _ => first + word,
                };
                Partial::Extrema(Extrema {
                    min: T::from_bits64(w[0]),
                    max: T::from_bits64(w[1]),
                    imin: index(1, w[2]),
                    imax: index(2, w[3]),
                    nan,
                })
            }
            KernelOp::Custom => return Err(Error::invalid("a custom plan is read with read_custom")),
        })
    }

    /// Waits for `stream` and reads a custom reduction's result (the identity for no input).
    pub fn read_custom(&self, stream: &Stream) -> Result<T> {
        if self.variant.op != KernelOp::Custom {
            return Err(Error::invalid("read_custom reads custom plans only"));
        }
        if self.n == 0 {
            return Err(Error::EmptyInput("a custom reduction of an empty input: its value is the identity".into()));
        }
        let w = self.read_words(stream)?;
        Ok(T::from_bits64(w[0]))
    }

    /// Launches on the device's default stream and reads the result.
    pub fn run(&mut self, input: &DeviceView<'_, T>) -> Result<Reduction> {
        let dev = self.dev.clone();
        self.launch(dev.stream(), input)?;
        self.read(dev.stream())
    }
}

impl<T> std::fmt::Debug for ReducePlan<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReducePlan").field("variant", &self.variant).field("policy", &self.policy).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_layout_and_variants() {
        let l = ReduceParams::layout();
        assert_eq!(l.size, 104);
        let all = Variant::all();
        assert_eq!(all.len(), 8 * 7 + 4 * 14 + 4 + 12);
        let src = FAMILY.full_source();
        assert!(src.contains("sizeof(ReduceParams) == 104"));
        for v in &all {
            assert!(v.defines().iter().any(|(k, _)| *k == "TALLY_REDUCE"));
        }
    }
}
