//! The CUDA C++ sources, embedded in the binary and compiled at run time by NVRTC.
//! `warp.cuh`, `block.cuh` and `cluster.cuh` hold the pieces every primitive is built from; each primitive has
//! one `.cu` whose specialisations are chosen with defines.

/// Headers every kernel may include, by the name it includes them with.
pub const HEADERS: &[(&str, &str)] = &[
    ("common.cuh", include_str!("common.cuh")),
    ("warp.cuh", include_str!("warp.cuh")),
    ("block.cuh", include_str!("block.cuh")),
    ("cluster.cuh", include_str!("cluster.cuh")),
    ("binning.cuh", include_str!("binning.cuh")),
];

/// One `.cu` translation unit.
#[derive(Clone, Copy, Debug)]
pub struct KernelSource {
    pub name: &'static str,
    pub text: &'static str,
}

pub const HISTOGRAM: KernelSource = KernelSource { name: "histogram.cu", text: include_str!("histogram.cu") };
pub const HISTOGRAM_GENERAL: KernelSource =
    KernelSource { name: "histogram_general.cu", text: include_str!("histogram_general.cu") };
pub const BANDWIDTH: KernelSource = KernelSource { name: "bandwidth.cu", text: include_str!("bandwidth.cu") };
pub const LAB: KernelSource = KernelSource { name: "lab.cu", text: include_str!("lab.cu") };
