//! The CUDA device layer: one device (its properties, its compiled modules), streams with their
//! scratch workspace, typed kernels and the one launch path every primitive goes through.

use super::cache::{self, KernelCache};
use super::memory::{DevPtr, DeviceBuffer, DeviceView, DeviceViewMut};
use super::nvrtc;
use super::params::KernelParams;
use super::registry::{self, KernelFamily};
use super::workspace::Workspace;
use crate::error::{driver, Error, Result};
use crate::histogram::Tuning;
use cudarc::driver::sys::{self, CUdevice_attribute, CUfunction_attribute};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaStream, DeviceRepr, DriverError, PinnedHostSlice, ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;
use serde::Serialize;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

mod external;
#[cfg(test)]
mod fixtures;
mod readback;
mod timer;
pub use external::{CallerStreamOrder, ExternalBuffer};
pub use readback::ReadBack;
pub(crate) use readback::{PlanReadBack, POSTED_WORDS_MAX};
pub use timer::EventTimer;

/// What `tally info` reports about the device, and what policies decide from.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceInfo {
    /// The device's name.
    pub name: String,
    /// (major, minor).
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// L2 cache bytes.
    pub l2_bytes: usize,
    /// Shared memory one block may opt in to.
    pub smem_per_block_optin: usize,
    /// Shared memory of one multiprocessor.
    pub smem_per_multiprocessor: usize,
    /// Device memory bytes.
    pub total_memory: usize,
    /// NVRTC's (major, minor) version.
    pub nvrtc_version: (i32, i32),
    /// The NVRTC target: `sm_XX` (CUBIN) or `compute_XX` (PTX the driver finishes).
    pub target: String,
    /// Where compiled kernels are cached on disk, if anywhere.
    pub cache_dir: Option<String>,
}

impl DeviceInfo {
    /// Whether the device has thread-block clusters and distributed shared memory (sm_90+).
    pub fn has_clusters(&self) -> bool {
        self.compute_capability.0 >= 9
    }
}

/// How to open a device.
#[derive(Clone, Debug)]
pub struct DeviceOptions {
    /// The CUDA device ordinal.
    pub ordinal: usize,
    /// Where compiled kernels are cached on disk; None: no disk cache.
    pub cache_dir: Option<PathBuf>,
    /// Extra NVRTC options for every kernel (experiments); part of the cache key.
    pub nvrtc_options: Vec<String>,
    /// The primitives' tuning knobs (experiments; the defaults are the measured choices).
    pub tuning: Tuning,
}

impl Default for DeviceOptions {
    /// Device 0, the platform's cache directory (`$XDG_CACHE_HOME/tally`, else
    /// `~/.cache/tally`), no extra options.
    fn default() -> Self {
        DeviceOptions {
            ordinal: 0,
            cache_dir: cache::default_dir(),
            nvrtc_options: Vec::new(),
            tuning: Tuning::default(),
        }
    }
}

/// One CUDA device: its context, properties, compiled modules and default stream.
pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Stream,
    info: DeviceInfo,
    /// Shared with the views of this device on other streams ([`CudaDevice::with_stream`]).
    modules: Arc<Mutex<HashMap<String, Arc<CudaModule>>>>,
    /// Pinned staging buffers kept between streamed calls (pinning is a call's largest fixed
    /// cost); shared with the views on other streams, like the modules.
    pinned: Arc<Mutex<Vec<PinnedHostSlice<u8>>>>,
    cache: KernelCache,
    nvrtc_options: Vec<String>,
    tuning: Tuning,
}

/// Bytes of pinned staging buffers a device keeps between calls at most: the default pipeline
/// (three 64 MiB chunks) with room for a second one.
pub const KEPT_PINNED_BYTES: usize = 512 << 20;

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice").field("info", &self.info).finish()
    }
}

/// Whether the driver and NVRTC libraries can be loaded, or why not. cudarc panics on first use
/// of a library that is missing, so this is asked before anything else.
pub fn libraries_present() -> Result<()> {
    // SAFETY: only tries to dlopen the driver library.
    if !unsafe { sys::is_culib_present() } {
        return Err(Error::CudaUnavailable("libcuda (the NVIDIA driver) was not found".into()));
    }
    if !nvrtc::available() {
        return Err(Error::CudaUnavailable("libnvrtc (the CUDA run-time compiler) was not found".into()));
    }
    Ok(())
}

impl CudaDevice {
    /// Opens device `ordinal` with default options, or says why not. Never panics for want of
    /// libraries or devices.
    pub fn new(ordinal: usize) -> Result<Arc<CudaDevice>> {
        CudaDevice::with_options(DeviceOptions { ordinal, ..DeviceOptions::default() })
    }

    /// Opens a device as `options` say.
    pub fn with_options(options: DeviceOptions) -> Result<Arc<CudaDevice>> {
        libraries_present()?;
        let count = CudaContext::device_count()
            .map_err(|e| Error::CudaUnavailable(format!("the driver found no usable device ({e})")))?;
        if count <= 0 {
            return Err(Error::CudaUnavailable("the driver reports no CUDA device".into()));
        }
        if options.ordinal >= count as usize {
            return Err(Error::CudaUnavailable(format!("no device {}: {count} present", options.ordinal)));
        }
        let ctx = CudaContext::new(options.ordinal).map_err(driver("cuCtxCreate"))?;
        // SAFETY: tally orders its work on each stream itself and shares no cudarc slice across
        // streams, so cudarc's cross-stream event tracking would only add work.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        CudaDevice::open(ctx, stream, options)
    }

    /// Adopts a caller's cudarc stream (and so its context): tally's default stream is then the
    /// caller's, and its slices can be read in place with no copy.
    pub fn from_cudarc_stream(stream: Arc<CudaStream>, options: DeviceOptions) -> Result<Arc<CudaDevice>> {
        libraries_present()?;
        CudaDevice::open(stream.context().clone(), stream, options)
    }

    fn open(ctx: Arc<CudaContext>, stream: Arc<CudaStream>, options: DeviceOptions) -> Result<Arc<CudaDevice>> {
        let attr = |a: CUdevice_attribute| ctx.attribute(a).map_err(driver("cuDeviceGetAttribute"));
        let cc = ctx.compute_capability().map_err(driver("cuDeviceGetAttribute"))?;
        let nvrtc_version = nvrtc::version()?;
        let (target, _cubin) = nvrtc::arch_option(cc)?;
        let cache = KernelCache::new(options.cache_dir.clone());
        let total_memory = ctx.total_mem().map_err(driver("cuDeviceTotalMem"))?;
        let info = DeviceInfo {
            name: ctx.name().map_err(driver("cuDeviceGetName"))?,
            compute_capability: cc,
            multiprocessors: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            l2_bytes: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as usize,
            smem_per_block_optin: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?
                as usize,
            smem_per_multiprocessor: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?
                as usize,
            total_memory,
            nvrtc_version,
            target,
            cache_dir: cache.dir().map(|d| d.display().to_string()),
        };
        let stream = Stream::wrap(stream, Workspace::default_limit(total_memory));
        Ok(Arc::new(CudaDevice {
            ctx,
            stream,
            info,
            modules: Arc::default(),
            pinned: Arc::default(),
            cache,
            nvrtc_options: options.nvrtc_options,
            tuning: options.tuning,
        }))
    }

    /// The device's properties.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The tuning the device was opened with.
    pub fn tuning(&self) -> &Tuning {
        &self.tuning
    }

    /// The device's default stream: what the `Backend` calls queue their work on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// A pinned host buffer of at least `bytes`: one kept by an earlier call where one is
    /// large enough (its contents are that call's), else a new, zeroed one.
    pub(crate) fn take_pinned(&self, bytes: usize) -> Result<PinnedHostSlice<u8>> {
        {
            let mut kept = self.pinned.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            // The smallest that fits, so that large buffers stay for large chunks.
            let fit = (0..kept.len()).filter(|&i| kept[i].len() >= bytes).min_by_key(|&i| kept[i].len());
            if let Some(i) = fit {
                return Ok(kept.swap_remove(i));
            }
        }
        // Write-combined (cudarc's `alloc_pinned`): the CPU only writes these buffers, and
        // streaming a file through them ran 5-12% faster than through cached ones, from host
        // memory within about 5% either way (an H100 host, docs/PERF.md v31, call 6).
        // SAFETY: the memory is zeroed below before anything reads it.
        let mut host = unsafe { self.ctx.alloc_pinned::<u8>(bytes.max(1)) }
            .map_err(|e| oom_or(e, "cuMemHostAlloc", bytes, "pinned staging buffer"))?;
        host.as_mut_slice().map_err(driver("cuEventSynchronize"))?.fill(0);
        Ok(host)
    }

    /// Keeps `buffers` for later calls, as many as fit in [`KEPT_PINNED_BYTES`] with those
    /// already kept (the largest first); the rest are freed. Nothing may still read or write
    /// them.
    pub(crate) fn keep_pinned(&self, buffers: impl IntoIterator<Item = PinnedHostSlice<u8>>) {
        let mut kept = self.pinned.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        kept.extend(buffers);
        kept.sort_by_key(|b| std::cmp::Reverse(b.len()));
        let mut total = 0;
        kept.retain(|b| {
            let fits = total + b.len() <= KEPT_PINNED_BYTES;
            total += if fits { b.len() } else { 0 };
            fits
        });
    }

    /// Bytes of pinned staging memory this device keeps for later streamed calls (at most
    /// [`KEPT_PINNED_BYTES`]).
    pub fn kept_pinned_bytes(&self) -> usize {
        self.pinned.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).iter().map(|b| b.len()).sum()
    }

    /// Frees the pinned staging memory kept for later streamed calls.
    pub fn release_pinned(&self) {
        self.pinned.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clear();
    }

    /// A new stream of this device, with a workspace of its own.
    pub fn new_stream(&self) -> Result<Stream> {
        let s = self.ctx.new_stream().map_err(driver("cuStreamCreate"))?;
        Ok(Stream::wrap(s, Workspace::default_limit(self.info.total_memory)))
    }

    /// The cudarc context underneath, for callers that mix tally with their own cudarc code.
    pub fn cuda_context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Entry point `entry` of one specialisation of `family`, with its dynamic shared-memory
    /// limit raised to `smem` bytes. Compiled at most once per process and, across processes,
    /// once per machine (the disk cache).
    pub fn kernel<P: KernelParams>(
        &self,
        family: &KernelFamily,
        defines: &[(&str, String)],
        entry: &'static str,
        smem: usize,
    ) -> Result<Kernel<P>> {
        let layout = P::layout();
        assert!(
            (family.params)().contains(&layout),
            "{}: {} is not a parameter struct the registry checks for {entry}",
            family.name,
            layout.cpp_name
        );
        let module = self.module(family, defines)?;
        // A module found in the cache was loaded in this device's context, which another
        // device's work (a device set's) may have replaced on this thread.
        self.ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        let function = module.load_function(entry).map_err(driver("cuModuleGetFunction"))?;
        // A block's static and dynamic shared memory together may not pass 48 KiB unless the
        // limit is raised (48 KiB of dynamic memory beside a few hundred static bytes was refused
        // at launch with CUDA_ERROR_INVALID_VALUE). Raised only where needed, never lowered:
        // callers may launch with less than `smem`, or with up to the default. More than the
        // device grants a block is refused here, for every plan, with the sizes in the error.
        if smem > 0 {
            let static_bytes = function
                .get_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
                .map_err(driver("cuFuncGetAttribute(static shared memory)"))?
                .max(0) as usize;
            if smem + static_bytes > self.info.smem_per_block_optin {
                return Err(Error::invalid(format!(
                    "{entry}: {smem} bytes of dynamic and {static_bytes} of static shared memory; a block of \
                     this device takes at most {}",
                    self.info.smem_per_block_optin
                )));
            }
            // The limit belongs to the function, which every plan of these defines shares: a plan
            // that asks for less must not take it from one that asked for more.
            let limit = function
                .get_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
                .map_err(driver("cuFuncGetAttribute(max dynamic shared memory)"))?
                .max(0) as usize;
            if smem + static_bytes > 48 * 1024 && smem > limit {
                function
                    .set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)
                    .map_err(driver("cuFuncSetAttribute(max dynamic shared memory)"))?;
            }
        }
        Ok(Kernel { function, context: self.ctx.clone(), entry, smem, _params: PhantomData })
    }

    fn module(&self, family: &KernelFamily, defines: &[(&str, String)]) -> Result<Arc<CudaModule>> {
        let options = registry::options(defines, &self.nvrtc_options);
        // A family's source is fixed for the process (one `.cu` file per family name), so its
        // name and the options name a loaded module: a plan made per call finds it without
        // hashing the source (a hundred kilobytes with the headers) each time.
        let loaded = format!("{} {}", family.name, options.join(" "));
        if let Some(m) = self.modules.lock().expect("module map").get(&loaded) {
            return Ok(m.clone());
        }
        let source = family.full_source();
        let key = module_key(family.name, &source, &options, &self.info.target, self.info.nvrtc_version);
        let module = match self.cache.load(&key) {
            // A cached image that the driver refuses is treated like a missing one.
            Some(img) => match self.load_image(img.bytes) {
                Ok(m) => m,
                Err(_) => self.compile_and_store(family.name, &source, &options, &key)?,
            },
            None => self.compile_and_store(family.name, &source, &options, &key)?,
        };
        self.modules.lock().expect("module map").insert(loaded, module.clone());
        Ok(module)
    }

    fn compile_and_store(&self, name: &str, source: &str, options: &[String], key: &str) -> Result<Arc<CudaModule>> {
        let img = nvrtc::compile(name, source, registry::headers(), &self.info.target, options)?;
        let module = self.load_image(img.bytes.clone())?;
        self.cache.store(key, &img);
        Ok(module)
    }

    fn load_image(&self, bytes: Vec<u8>) -> Result<Arc<CudaModule>> {
        self.ctx.load_module(Ptx::from_binary(bytes)).map_err(driver("cuModuleLoadData"))
    }

    /// Median read bandwidth in GB/s of a read-only 16-byte-load kernel over `bytes` of memory:
    /// the yardstick every benchmark reports its figures against.
    pub fn read_bandwidth(&self, bytes: usize, reps: usize) -> Result<f64> {
        crate::kernels::bandwidth::read_bandwidth(self, bytes, reps)
    }
}

/// Everything that could change the compiled image.
pub(crate) fn module_key(name: &str, source: &str, options: &[String], target: &str, nvrtc: (i32, i32)) -> String {
    let mut text_hash = cache::fnv1a(source.as_bytes());
    for (header, text) in registry::headers() {
        text_hash ^= cache::fnv1a(header.as_bytes()).rotate_left(7) ^ cache::fnv1a(text.as_bytes()).rotate_left(13);
    }
    format!(
        "tally {} | {name} {text_hash:016x} | {} | {target} | nvrtc {}.{}",
        env!("CARGO_PKG_VERSION"),
        options.join(" "),
        nvrtc.0,
        nvrtc.1
    )
}

/// A loaded kernel entry point that takes one parameter struct `P` by value.
pub struct Kernel<P> {
    function: CudaFunction,
    /// The context the function belongs to: made current before driver calls that act on the
    /// thread's current context (a device set drives several from one thread).
    context: Arc<CudaContext>,
    entry: &'static str,
    smem: usize,
    _params: PhantomData<fn(P)>,
}

/// A launch's shape: a one-dimensional grid of `grid` blocks of `block` threads, `smem` bytes of
/// dynamic shared memory per block, in clusters of `cluster` blocks where that is `Some` (a
/// kernel that uses cluster features needs a cluster launch even for clusters of one block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    /// Blocks.
    pub grid: u32,
    /// Threads per block.
    pub block: u32,
    /// Dynamic shared memory per block, bytes.
    pub smem: u32,
    /// Blocks per cluster (None: a plain launch).
    pub cluster: Option<u32>,
}

impl LaunchShape {
    /// A plain launch.
    pub fn new(grid: u32, block: u32, smem: usize) -> Self {
        LaunchShape { grid, block, smem: smem as u32, cluster: None }
    }
}

impl<P: KernelParams> Kernel<P> {
    /// The entry point's name.
    pub fn entry(&self) -> &'static str {
        self.entry
    }

    /// Blocks of `block` threads and `smem` bytes that fit on one multiprocessor at once
    /// (an error where not even one does).
    pub fn blocks_per_sm(&self, block: u32, smem: usize) -> Result<u32> {
        self.context.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        let n = self
            .function
            .occupancy_max_active_blocks_per_multiprocessor(block, smem, None)
            .map_err(driver("cuOccupancyMaxActiveBlocksPerMultiprocessor"))?;
        if n == 0 {
            return Err(Error::Unsupported {
                what: format!("{} in blocks of {block} threads", self.entry),
                why: format!("{smem} B of shared memory per block do not fit a multiprocessor"),
            });
        }
        Ok(n)
    }

    /// Clusters of `cluster` blocks (each `block` threads, `smem` bytes) that can be resident at
    /// once; 0 when such a cluster does not fit.
    pub fn max_active_clusters(&self, stream: &Stream, block: u32, smem: usize, cluster: u32) -> Result<u32> {
        // Bound first: `allow_cluster` sets a function attribute, which cudarc does not bind for.
        stream.inner.context().bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        self.allow_cluster(cluster)?;
        let shape = LaunchShape { grid: cluster, block, smem: smem as u32, cluster: Some(cluster) };
        let mut attr = cluster_attribute(cluster);
        let config = launch_config(&shape, stream, &mut attr);
        let mut count: std::ffi::c_int = 0;
        // SAFETY: `config` and the attribute it points to live until the call returns; the
        // function belongs to the stream's context, which is current on this thread.
        unsafe { sys::cuOccupancyMaxActiveClusters(&mut count, self.function.cu_function(), &config) }
            .result()
            .map_err(driver("cuOccupancyMaxActiveClusters"))?;
        Ok(count.max(0) as u32)
    }

    /// Clusters above 8 blocks are "non-portable" and must be allowed per function.
    fn allow_cluster(&self, cluster: u32) -> Result<()> {
        if cluster > 8 {
            self.function
                .set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
                .map_err(driver("cuFuncSetAttribute(non-portable cluster size)"))?;
        }
        Ok(())
    }
}

fn cluster_attribute(cluster: u32) -> sys::CUlaunchAttribute {
    // SAFETY: an all-zero launch attribute is a valid value of the C union; the fields used
    // are set next.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = cluster;
    attr.value.clusterDim.y = 1;
    attr.value.clusterDim.z = 1;
    attr
}

/// The driver's launch configuration for `shape` on `stream`; a cluster launch points at
/// `attr`, which must outlive the configuration's use.
fn launch_config(shape: &LaunchShape, stream: &Stream, attr: &mut sys::CUlaunchAttribute) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
        gridDimX: shape.grid,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: shape.block,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: shape.smem,
        hStream: stream.inner.cu_stream(),
        attrs: attr,
        numAttrs: shape.cluster.is_some() as u32,
    }
}

/// A CUDA stream: work queued on it runs in order, and the calls of one stream may be queued
/// without a synchronisation between them. Each stream has its own scratch workspace.
pub struct Stream {
    inner: Arc<CudaStream>,
    workspace: Mutex<Workspace>,
    /// Page-locked result words that plans gave back, for the next plans (`readback.rs`).
    read_backs: readback::ReadBackPool,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream").field("workspace_bytes", &self.workspace_bytes()).finish()
    }
}

impl Stream {
    fn wrap(inner: Arc<CudaStream>, workspace_limit: usize) -> Stream {
        Stream { inner, workspace: Mutex::new(Workspace::new(workspace_limit)), read_backs: Default::default() }
    }

    /// A caller's cudarc stream, for queueing tally's work with theirs (its context must be
    /// the device's).
    pub fn from_cudarc(stream: Arc<CudaStream>, workspace_limit: usize) -> Stream {
        Stream::wrap(stream, workspace_limit)
    }

    /// The cudarc stream underneath.
    pub fn cuda_stream(&self) -> &Arc<CudaStream> {
        &self.inner
    }

    /// Bytes the workspace holds now (scratch is kept for reuse by later calls).
    pub fn workspace_bytes(&self) -> usize {
        self.workspace.lock().map(|w| w.capacity()).unwrap_or(0)
    }

    /// The most scratch one call on this stream has asked for.
    pub fn workspace_peak(&self) -> usize {
        self.workspace.lock().map(|w| w.peak()).unwrap_or(0)
    }

    /// The most bytes the workspace may hold (its cap).
    pub fn workspace_limit(&self) -> usize {
        self.workspace.lock().map(|w| w.limit()).unwrap_or(0)
    }

    /// Free memory on the stream's device, in bytes (`cuMemGetInfo` in its context).
    pub fn free_memory(&self) -> Result<usize> {
        let (free, _total) = self.inner.context().mem_get_info().map_err(driver("cuMemGetInfo"))?;
        Ok(free)
    }

    /// Caps the workspace: a call that needs more scratch fails with a message that says how
    /// much, rather than allocating it.
    pub fn set_workspace_limit(&self, bytes: usize) {
        if let Ok(mut w) = self.workspace.lock() {
            w.set_limit(bytes);
        }
    }

    /// The workspace, for one call's scratch (held until the call has queued its work).
    pub(crate) fn workspace(&self) -> MutexGuard<'_, Workspace> {
        self.workspace.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Launches `kernel` with `params` as its one by-value argument: the only kernel launch in
    /// tally. Plain and cluster launches alike; multi-pass strategies call it once per pass.
    pub(crate) fn launch<P: KernelParams>(&self, kernel: &Kernel<P>, shape: LaunchShape, params: &P) -> Result<()> {
        debug_assert!(shape.smem as usize <= kernel.smem.max(48 * 1024), "{}: shared memory", kernel.entry);
        debug_assert!(
            shape.cluster.is_none_or(|c| shape.grid.is_multiple_of(c)),
            "{}: grid of whole clusters",
            kernel.entry
        );
        if shape.grid == 0 {
            return Ok(());
        }
        // Bound first: `allow_cluster` sets a function attribute, which cudarc does not bind for.
        self.inner.context().bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        if let Some(c) = shape.cluster {
            kernel.allow_cluster(c)?;
        }
        let mut attr = cluster_attribute(shape.cluster.unwrap_or(1));
        let config = launch_config(&shape, self, &mut attr);
        let mut args = [params as *const P as *mut std::ffi::c_void];
        // SAFETY: the kernel was loaded for parameter struct `P` (`CudaDevice::kernel` checks that
        // the registry lists P's layout for this family, and the family's generated
        // static_asserts pin the C++ struct to that layout), so the one argument the driver
        // copies from `params` is exactly what the kernel reads. Every device address inside
        // `params` comes from a view whose borrow the caller holds across this call, and work on
        // this stream runs in order, so the memory is live when the kernel runs as long as the
        // caller keeps its buffers until it synchronises (the plans own theirs). `config`,
        // `attr` and `args` outlive the call, which copies them.
        unsafe {
            sys::cuLaunchKernelEx(&config, kernel.function.cu_function(), args.as_mut_ptr(), std::ptr::null_mut())
        }
        .result()
        .map_err(|source| Error::Cuda { call: format!("cuLaunchKernelEx({})", kernel.entry), source })
    }

    /// Allocates `len` elements (at least one, so that an empty buffer still has an address);
    /// their contents are whatever the memory held.
    pub fn alloc<T: DeviceRepr>(&self, len: usize, what: &str) -> Result<DeviceBuffer<T>> {
        let bytes = len.max(1).saturating_mul(std::mem::size_of::<T>());
        // SAFETY: the contents are not read before something writes them: every caller fills
        // the buffer (memset, upload or a kernel's writes) before reading it.
        let slice = unsafe { self.inner.alloc::<T>(len.max(1)) }.map_err(|e| oom_or(e, "cuMemAlloc", bytes, what))?;
        Ok(DeviceBuffer::from_parts(slice, len))
    }

    /// Allocates `len` zeroed elements.
    pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(&self, len: usize, what: &str) -> Result<DeviceBuffer<T>> {
        let mut b = self.alloc::<T>(len, what)?;
        self.memset_zeros(&mut b.view_mut())?;
        Ok(b)
    }

    /// Copies `data` to a new device buffer.
    pub fn upload<T: DeviceRepr>(&self, data: &[T], what: &str) -> Result<DeviceBuffer<T>> {
        let mut b = self.alloc::<T>(data.len(), what)?;
        if !data.is_empty() {
            let mut view = b.view_mut();
            self.inner.memcpy_htod(data, view.inner_mut()).map_err(driver("cuMemcpyHtoDAsync"))?;
        }
        Ok(b)
    }

    /// Copies `data` into `view` (the same length), in stream order.
    pub fn copy_to_device<T: DeviceRepr>(&self, data: &[T], view: &mut DeviceViewMut<'_, T>) -> Result<()> {
        if data.len() != view.len() {
            return Err(Error::invalid(format!("{} elements do not fit a view of {}", data.len(), view.len())));
        }
        if data.is_empty() {
            return Ok(());
        }
        self.inner.memcpy_htod(data, view.inner_mut()).map_err(driver("cuMemcpyHtoDAsync"))
    }

    /// Copies `from` into `to` (the same length) on the device, in stream order.
    pub fn copy_on_device<T: DeviceRepr>(&self, from: &DeviceView<'_, T>, to: &mut DeviceViewMut<'_, T>) -> Result<()> {
        if from.len() != to.len() {
            return Err(Error::invalid(format!("{} elements do not fit a view of {}", from.len(), to.len())));
        }
        if from.is_empty() {
            return Ok(());
        }
        self.inner.memcpy_dtod(from.as_cuda_view(), to.inner_mut()).map_err(driver("cuMemcpyDtoDAsync"))
    }

    /// Waits for the stream's work and copies `view` back.
    pub fn download<T: DeviceRepr + Default + Clone>(&self, view: &DeviceView<'_, T>) -> Result<Vec<T>> {
        let mut out = vec![T::default(); view.len()];
        self.download_into(view, &mut out)?;
        Ok(out)
    }

    /// Waits for the stream's work and copies `view` into `out` (the same length): for callers
    /// that gather several devices' parts into one host array without a second copy.
    pub fn download_into<T: DeviceRepr>(&self, view: &DeviceView<'_, T>, out: &mut [T]) -> Result<()> {
        if out.len() != view.len() {
            return Err(Error::invalid(format!("{} elements do not fit a host slice of {}", view.len(), out.len())));
        }
        if !out.is_empty() {
            self.inner.memcpy_dtoh(view.as_cuda_view(), out).map_err(driver("cuMemcpyDtoHAsync"))?;
        }
        self.synchronize("the copy back")
    }

    /// Zeroes `view`, in stream order.
    pub fn memset_zeros<T: DeviceRepr + ValidAsZeroBits>(&self, view: &mut DeviceViewMut<'_, T>) -> Result<()> {
        super::memory::memset_zeros(&self.inner, view)
    }

    /// Zeroes `buffer` in stream order and returns its address, for a kernel's parameters: the
    /// words a kernel counts or flags into.
    pub(crate) fn zeroed<T: DeviceRepr + ValidAsZeroBits>(&self, buffer: &mut DeviceBuffer<T>) -> Result<DevPtr<T>> {
        let mut view = buffer.view_mut();
        self.memset_zeros(&mut view)?;
        Ok(view.ptr_mut(&self.inner))
    }

    /// Waits for the stream; an error here is a fault in earlier work, named by `after`.
    pub fn synchronize(&self, after: &str) -> Result<()> {
        self.inner
            .synchronize()
            .map_err(|source| Error::Cuda { call: format!("cuStreamSynchronize after {after}"), source })
    }
}

/// An allocation's failure: out of memory as such, any other error as the failed `call`.
fn oom_or(e: DriverError, call: &str, bytes: usize, what: &str) -> Error {
    if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        Error::OutOfMemory { bytes, what: what.to_string() }
    } else {
        Error::Cuda { call: format!("{call} ({what})"), source: e }
    }
}
