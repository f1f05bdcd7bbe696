//! The read-bandwidth probe: the yardstick every benchmark reports its figures against.

use crate::device::registry::KernelFamily;
use crate::device::{CudaDevice, DevPtr, LaunchShape};
use crate::error::Result;

crate::kernel_params! {
    /// What `tally_read_bandwidth` reads.
    pub(crate) struct BandwidthParams as "BandwidthParams" {
        data: DevPtr<u8>,
        n_vec: u64,
        sink: DevPtr<u32>,
    }
}

pub(crate) static FAMILY: KernelFamily = KernelFamily {
    name: "bandwidth.cu",
    source: include_str!("bandwidth.cu"),
    params: || vec![<BandwidthParams as crate::device::params::KernelParams>::layout()],
    variants: |_| vec![vec![]],
};

/// Median read bandwidth in GB/s of a read-only 16-byte-load kernel over `bytes` of memory.
pub(crate) fn read_bandwidth(dev: &CudaDevice, bytes: usize, reps: usize) -> Result<f64> {
    let stream = dev.stream();
    let kernel = dev.kernel::<BandwidthParams>(&FAMILY, &[], "tally_read_bandwidth", 0)?;
    let n_vec = bytes / 16;
    let data = stream.alloc_zeros::<u8>(n_vec * 16, "bandwidth probe buffer")?;
    let mut sink = stream.alloc_zeros::<u32>(1, "bandwidth sink")?;
    let threads = 256;
    let grid = dev.info().multiprocessors * kernel.blocks_per_sm(threads, 0)?;
    let params = BandwidthParams {
        data: data.view().ptr(stream.cuda_stream()),
        n_vec: n_vec as u64,
        sink: sink.view_mut().ptr_mut(stream.cuda_stream()),
    };
    let shape = LaunchShape::new(grid, threads, 0);
    let ms = stream.timer()?.median_ms(reps, || stream.launch(&kernel, shape, &params))?;
    Ok((n_vec * 16) as f64 / (ms * 1e6))
}
