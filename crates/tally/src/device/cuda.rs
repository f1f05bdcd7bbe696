//! The CUDA backend: one device, one stream, checked calls, and compiled kernels cached in the
//! process and on disk.

use super::cache::{self, KernelCache};
use super::nvrtc;
use crate::error::{Error, Result};
use crate::kernels::{KernelSource, HEADERS};
use cudarc::driver::sys::{CUdevice_attribute, CUevent_flags, CUfunction_attribute};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DeviceRepr, DriverError, LaunchConfig,
    PushKernelArg, ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What `tally info` reports about the device.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceInfo {
    pub name: String,
    pub compute_capability: (i32, i32),
    pub multiprocessors: u32,
    pub l2_bytes: usize,
    pub smem_per_block_optin: usize,
    pub smem_per_multiprocessor: usize,
    pub total_memory: usize,
    pub nvrtc_version: (i32, i32),
    /// The NVRTC target: `sm_XX` (CUBIN) or `compute_XX` (PTX the driver finishes).
    pub target: String,
    pub cache_dir: Option<String>,
}

/// Maps a driver error to ours, naming the call; out-of-memory gets its own variant.
pub(crate) fn driver(call: &str) -> impl FnOnce(DriverError) -> Error + '_ {
    move |e| Error::Cuda { call: call.to_string(), message: format!("{e}") }
}

pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
    cubin: bool,
    modules: Mutex<HashMap<String, Arc<CudaModule>>>,
    cache: KernelCache,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice").field("info", &self.info).finish()
    }
}

impl CudaDevice {
    /// Opens device `ordinal`, or says why not. Never panics for want of libraries or devices.
    pub fn new(ordinal: usize) -> Result<Arc<CudaDevice>> {
        // SAFETY: only tries to dlopen the library.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(Error::CudaUnavailable("libcuda (the NVIDIA driver) was not found".into()));
        }
        if !nvrtc::available() {
            return Err(Error::CudaUnavailable("libnvrtc (the CUDA run-time compiler) was not found".into()));
        }
        let count = CudaContext::device_count()
            .map_err(|e| Error::CudaUnavailable(format!("the driver found no usable device ({e})")))?;
        if count <= 0 {
            return Err(Error::CudaUnavailable("the driver reports no CUDA device".into()));
        }
        if ordinal >= count as usize {
            return Err(Error::CudaUnavailable(format!("no device {ordinal}: {count} present")));
        }
        let ctx = CudaContext::new(ordinal).map_err(driver("cuCtxCreate"))?;
        // One stream, in order: cudarc's cross-stream event tracking would only add work.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let attr = |a: CUdevice_attribute| ctx.attribute(a).map_err(driver("cuDeviceGetAttribute"));
        let cc = ctx.compute_capability().map_err(driver("cuDeviceGetAttribute"))?;
        let nvrtc_version = nvrtc::version()?;
        let (target, cubin) = nvrtc::arch_option(cc)?;
        let cache = KernelCache::new(cache::default_dir());
        let info = DeviceInfo {
            name: ctx.name().map_err(driver("cuDeviceGetName"))?,
            compute_capability: cc,
            multiprocessors: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            l2_bytes: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as usize,
            smem_per_block_optin: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?
                as usize,
            smem_per_multiprocessor: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?
                as usize,
            total_memory: ctx.total_mem().map_err(driver("cuDeviceTotalMem"))?,
            nvrtc_version,
            target,
            cache_dir: cache.dir().map(|d| d.display().to_string()),
        };
        Ok(Arc::new(CudaDevice { ctx, stream, info, cubin, modules: Mutex::default(), cache }))
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The module for `src` under `defines`, compiled at most once per process and, across
    /// processes, once per machine (the disk cache).
    pub fn module(&self, src: &KernelSource, defines: &[(&str, String)]) -> Result<Arc<CudaModule>> {
        let mut options: Vec<String> = defines.iter().map(|(k, v)| format!("-D{k}={v}")).collect();
        // Extra NVRTC options for experiments (e.g. -DTALLY_MIN_BLOCKS=1); part of the cache key.
        if let Ok(extra) = std::env::var("TALLY_NVRTC_OPTIONS") {
            options.extend(extra.split_whitespace().map(String::from));
        }
        let key = module_key(src, &options, &self.info.target, self.info.nvrtc_version);
        if let Some(m) = self.modules.lock().unwrap().get(&key) {
            return Ok(m.clone());
        }
        let t = std::time::Instant::now();
        let module = match self.cache.load(&key) {
            // A cached image that the driver refuses is treated like a missing one.
            Some(img) => match self.load_image(img.bytes) {
                Ok(m) => m,
                Err(_) => self.compile_and_store(src, &options, &key)?,
            },
            None => self.compile_and_store(src, &options, &key)?,
        };
        if std::env::var_os("TALLY_TRACE").is_some() {
            eprintln!(
                "tally: module {} {} ready in {:.1} ms",
                src.name,
                options.join(" "),
                t.elapsed().as_secs_f64() * 1e3
            );
        }
        self.modules.lock().unwrap().insert(key, module.clone());
        Ok(module)
    }

    fn compile_and_store(&self, src: &KernelSource, options: &[String], key: &str) -> Result<Arc<CudaModule>> {
        let img = nvrtc::compile(src.name, src.text, HEADERS, &self.info.target, options)?;
        debug_assert_eq!(img.cubin, self.cubin);
        let module = self.load_image(img.bytes.clone())?;
        self.cache.store(key, &img);
        Ok(module)
    }

    fn load_image(&self, bytes: Vec<u8>) -> Result<Arc<CudaModule>> {
        self.ctx.load_module(Ptx::from_binary(bytes)).map_err(driver("cuModuleLoadData"))
    }

    /// A kernel function with its dynamic shared-memory limit raised to `smem` bytes.
    pub fn function(&self, module: &Arc<CudaModule>, name: &str, smem: usize) -> Result<CudaFunction> {
        let f = module.load_function(name).map_err(driver("cuModuleGetFunction"))?;
        if smem > 48 * 1024 {
            f.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)
                .map_err(driver("cuFuncSetAttribute"))?;
        }
        Ok(f)
    }

    /// Blocks of `threads` threads and `smem` bytes that fit on one multiprocessor at once.
    pub fn blocks_per_sm(&self, f: &CudaFunction, threads: u32, smem: usize) -> Result<u32> {
        let n = f
            .occupancy_max_active_blocks_per_multiprocessor(threads, smem, None)
            .map_err(driver("cuOccupancyMaxActiveBlocksPerMultiprocessor"))?;
        if n == 0 {
            return Err(Error::Cuda {
                call: "cuOccupancyMaxActiveBlocksPerMultiprocessor".into(),
                message: format!("a block of {threads} threads and {smem} B of shared memory does not fit"),
            });
        }
        Ok(n)
    }

    /// Clusters of `cluster` blocks (each `threads` threads, `smem` bytes) that can run at once;
    /// 0 when such a cluster does not fit on the device.
    pub fn max_active_clusters(&self, f: &CudaFunction, threads: u32, smem: usize, cluster: u32) -> Result<u32> {
        use cudarc::driver::sys;
        self.allow_cluster_size(f, cluster)?;
        let mut attr = cluster_attribute(cluster);
        let cfg = self.cluster_config(cluster, threads, smem, &mut attr);
        let mut count: std::ffi::c_int = 0;
        self.ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        // SAFETY: cfg and attr outlive the call; the function belongs to this context.
        unsafe { sys::cuOccupancyMaxActiveClusters(&mut count, f.cu_function(), &cfg) }
            .result()
            .map_err(driver("cuOccupancyMaxActiveClusters"))?;
        Ok(count.max(0) as u32)
    }

    /// A one-dimensional launch on the stream with the cluster attribute `attr` (which must
    /// outlive the configuration's use).
    fn cluster_config(
        &self,
        grid: u32,
        threads: u32,
        smem: usize,
        attr: &mut cudarc::driver::sys::CUlaunchAttribute,
    ) -> cudarc::driver::sys::CUlaunchConfig {
        cudarc::driver::sys::CUlaunchConfig {
            gridDimX: grid,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: threads,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: smem as u32,
            hStream: self.stream.cu_stream(),
            attrs: attr,
            numAttrs: 1,
        }
    }

    /// Clusters above 8 blocks are "non-portable" and must be allowed per function.
    fn allow_cluster_size(&self, f: &CudaFunction, cluster: u32) -> Result<()> {
        if cluster > 8 {
            f.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
                .map_err(driver("cuFuncSetAttribute(non-portable cluster size)"))?;
        }
        Ok(())
    }

    /// Launches `f` on the stream in clusters of `cluster` blocks with one by-value argument
    /// (`cfg`: one-dimensional; its grid a multiple of `cluster`).
    pub fn launch_clusters<P: DeviceRepr>(
        &self,
        f: &CudaFunction,
        name: &str,
        cfg: LaunchConfig,
        cluster: u32,
        arg: &P,
    ) -> Result<()> {
        let (grid, threads, smem) = (cfg.grid_dim.0, cfg.block_dim.0, cfg.shared_mem_bytes as usize);
        use cudarc::driver::sys;
        debug_assert!(grid.is_multiple_of(cluster));
        self.allow_cluster_size(f, cluster)?;
        let mut attr = cluster_attribute(cluster);
        let cfg = self.cluster_config(grid, threads, smem, &mut attr);
        let mut params = [arg as *const P as *mut std::ffi::c_void];
        self.ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        // SAFETY: the kernel takes exactly one parameter of type P (checked by the caller's
        // kernel signature); cfg, attr and params outlive the call, which copies the argument.
        unsafe { sys::cuLaunchKernelEx(&cfg, f.cu_function(), params.as_mut_ptr(), std::ptr::null_mut()) }
            .result()
            .map_err(|e| Error::Cuda { call: format!("cuLaunchKernelEx({name})"), message: format!("{e}") })
    }

    /// Allocates `len` elements (at least one, so that empty inputs still have an address).
    pub fn alloc<T: DeviceRepr>(&self, len: usize, what: &str) -> Result<CudaSlice<T>> {
        let bytes = len.max(1) * std::mem::size_of::<T>();
        // SAFETY: every caller writes before it reads (memset, upload or a kernel).
        unsafe { self.stream.alloc::<T>(len.max(1)) }.map_err(|e| oom_or(e, bytes, what))
    }

    pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(&self, len: usize, what: &str) -> Result<CudaSlice<T>> {
        let mut s = self.alloc::<T>(len, what)?;
        self.stream.memset_zeros(&mut s).map_err(driver("cuMemsetD8Async"))?;
        Ok(s)
    }

    pub fn upload<T: DeviceRepr>(&self, data: &[T], what: &str) -> Result<CudaSlice<T>> {
        let mut s = self.alloc::<T>(data.len(), what)?;
        if !data.is_empty() {
            self.stream.memcpy_htod(data, &mut s).map_err(driver("cuMemcpyHtoDAsync"))?;
        }
        Ok(s)
    }

    pub fn download<T: DeviceRepr + Default + Clone>(&self, s: &CudaSlice<T>, len: usize) -> Result<Vec<T>> {
        let mut out = vec![T::default(); len];
        if len > 0 {
            self.stream.memcpy_dtoh(&s.slice(0..len), &mut out).map_err(driver("cuMemcpyDtoHAsync"))?;
        }
        self.synchronize("cuMemcpyDtoH")?;
        Ok(out)
    }

    /// Waits for the stream; an error here is a fault in an earlier kernel, named by `after`.
    pub fn synchronize(&self, after: &str) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| Error::Cuda { call: format!("cuStreamSynchronize after {after}"), message: format!("{e}") })
    }

    pub fn ptr<T, S: DevicePtr<T>>(&self, s: &S) -> u64 {
        let (p, _sync) = s.device_ptr(&self.stream);
        p
    }

    pub fn timer(&self) -> Result<EventTimer> {
        let ev = || self.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(driver("cuEventCreate"));
        Ok(EventTimer { start: ev()?, stop: ev()?, stream: self.stream.clone() })
    }

    /// Median read bandwidth in GB/s of a read-only 16-byte-load kernel over `bytes` of memory.
    pub fn read_bandwidth(&self, bytes: usize, reps: usize) -> Result<f64> {
        let n_vec = bytes / 16;
        let module = self.module(&crate::kernels::BANDWIDTH, &[])?;
        let f = self.function(&module, "tally_read_bandwidth", 0)?;
        let mut data = self.alloc::<u8>(n_vec * 16, "bandwidth probe buffer")?;
        self.stream.memset_zeros(&mut data).map_err(driver("cuMemsetD8Async"))?;
        let sink = self.alloc_zeros::<u32>(1, "bandwidth sink")?;
        let threads = 256;
        let grid = self.info.multiprocessors * self.blocks_per_sm(&f, threads, 0)?;
        let (pd, ps) = (self.ptr(&data), self.ptr(&sink));
        let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 };
        let n = n_vec as u64;
        let run = || -> Result<()> {
            unsafe { self.stream.launch_builder(&f).arg(&pd).arg(&n).arg(&ps).launch(cfg) }
                .map(|_| ())
                .map_err(driver("cuLaunchKernel(tally_read_bandwidth)"))
        };
        let timer = self.timer()?;
        let ms = timer.median_ms(reps, run)?;
        drop(data);
        Ok(bytes as f64 / (ms * 1e6))
    }
}

fn cluster_attribute(cluster: u32) -> cudarc::driver::sys::CUlaunchAttribute {
    use cudarc::driver::sys;
    // SAFETY: an all-zero launch attribute is a valid value of the C union; the fields used
    // are then set.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = cluster;
    attr.value.clusterDim.y = 1;
    attr.value.clusterDim.z = 1;
    attr
}

fn oom_or(e: DriverError, bytes: usize, what: &str) -> Error {
    if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        Error::OutOfMemory { bytes, what: what.to_string() }
    } else {
        Error::Cuda { call: format!("cuMemAlloc ({what})"), message: format!("{e}") }
    }
}

/// Everything that could change the compiled image.
pub(crate) fn module_key(src: &KernelSource, options: &[String], target: &str, nvrtc: (i32, i32)) -> String {
    let mut text_hash = cache::fnv1a(src.text.as_bytes());
    for (name, text) in HEADERS {
        text_hash ^= cache::fnv1a(name.as_bytes()).rotate_left(7) ^ cache::fnv1a(text.as_bytes()).rotate_left(13);
    }
    format!(
        "tally {} | {} {:016x} | {} | {} | nvrtc {}.{}",
        env!("CARGO_PKG_VERSION"),
        src.name,
        text_hash,
        options.join(" "),
        target,
        nvrtc.0,
        nvrtc.1
    )
}

/// Two CUDA events around work on the stream.
pub struct EventTimer {
    start: cudarc::driver::CudaEvent,
    stop: cudarc::driver::CudaEvent,
    stream: Arc<CudaStream>,
}

impl EventTimer {
    /// Milliseconds of one run of `work`, measured on the device.
    pub fn time_ms(&self, work: impl FnOnce() -> Result<()>) -> Result<f64> {
        self.start.record(&self.stream).map_err(driver("cuEventRecord"))?;
        work()?;
        self.stop.record(&self.stream).map_err(driver("cuEventRecord"))?;
        self.stop
            .synchronize()
            .map_err(|e| Error::Cuda { call: "cuEventSynchronize after timed work".into(), message: format!("{e}") })?;
        Ok(self.start.elapsed_ms(&self.stop).map_err(driver("cuEventElapsedTime"))? as f64)
    }

    /// Median over `reps` runs after three warm-ups.
    pub fn median_ms(&self, reps: usize, mut work: impl FnMut() -> Result<()>) -> Result<f64> {
        for _ in 0..3 {
            work()?;
        }
        let mut t = Vec::with_capacity(reps);
        for _ in 0..reps.max(1) {
            t.push(self.time_ms(&mut work)?);
        }
        t.sort_by(|a, b| a.total_cmp(b));
        Ok(t[t.len() / 2])
    }
}
