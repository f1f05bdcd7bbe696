//! The CUDA C++ sources, embedded in the binary and compiled at run time by NVRTC, and the
//! registry of every translation unit. `warp.cuh`, `block.cuh` and `cluster.cuh` hold the
//! pieces every primitive is built from; each primitive has one `.cu` whose specialisations are
//! chosen with defines, declared once as a [`KernelFamily`] beside the primitive's host code.

pub(crate) mod bandwidth;

use crate::device::registry::KernelFamily;
use crate::error::Result;

/// Headers every kernel may include, by the name it includes them with (the generated
/// `codes.cuh` is added by the registry).
pub const HEADERS: &[(&str, &str)] = &[
    ("common.cuh", include_str!("common.cuh")),
    ("warp.cuh", include_str!("warp.cuh")),
    ("block.cuh", include_str!("block.cuh")),
    ("cluster.cuh", include_str!("cluster.cuh")),
    ("binning.cuh", include_str!("binning.cuh")),
    ("lookback.cuh", include_str!("lookback.cuh")),
    ("compact.cuh", include_str!("compact.cuh")),
];

/// Declares a Rust enum whose values select kernel variants, together with the C++ names the
/// kernels compare against: `Binning::Float` is passed as `-DTALLY_BINNING=TALLY_BINNING_FLOAT`,
/// and `codes.cuh` (generated from these declarations) says `#define TALLY_BINNING_FLOAT 2`.
/// One list on the Rust side, no magic numbers on either.
#[macro_export]
#[doc(hidden)]
macro_rules! kernel_codes {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident as $prefix:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $code:literal => $cpp:literal ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant = $code, )*
        }
        impl $name {
            /// Every value.
            #[allow(dead_code)]
            pub const ALL: &'static [$name] = &[$($name::$variant),*];
            /// The C++ name of this value, as passed in the define.
            pub fn cpp(self) -> &'static str {
                match self { $( $name::$variant => concat!($prefix, "_", $cpp), )* }
            }
            /// The `#define`s of every value, for `codes.cuh`.
            pub(crate) fn cpp_defines() -> &'static str {
                concat!( $( "#define ", $prefix, "_", $cpp, " ", $code, "\n", )* )
            }
        }
    };
}

/// The generated `codes.cuh`: the C++ names of every variant code.
pub(crate) fn codes_header() -> String {
    let mut s = String::from(
        "// Generated from the Rust declarations (kernel_codes!): the names of variant codes.\n#pragma once\n",
    );
    for defines in [
        crate::histogram::axis::Binning::cpp_defines(),
        crate::histogram::policy::KernelStrategy::cpp_defines(),
        crate::histogram::cuda_general::AccumCode::cpp_defines(),
        crate::histogram::cuda_general::WeightCode::cpp_defines(),
        crate::reduce::policy::KernelOp::cpp_defines(),
        crate::scan::policy::ScanKernelOp::cpp_defines(),
        crate::select::policy::SelectKernel::cpp_defines(),
        crate::runs::policy::RunsKernelOp::cpp_defines(),
    ] {
        s.push_str(defines);
    }
    s
}

/// Every translation unit tally compiles.
pub fn families() -> Vec<&'static KernelFamily> {
    vec![
        &crate::histogram::cuda::FAMILY,
        &crate::histogram::cuda_general::FAMILY,
        &crate::histogram::partition::FAMILY,
        &bandwidth::FAMILY,
        &crate::lab::cuda::FAMILY,
        &crate::reduce::cuda::FAMILY,
        &crate::scan::cuda::FAMILY,
        &crate::select::cuda::FAMILY,
        &crate::runs::cuda::FAMILY,
    ]
}

/// Compiles every specialisation of every kernel for `arch` (e.g. "sm_90") with NVRTC alone,
/// no device needed (CI's check). Returns how many compiled.
pub fn compile_all(arch: &str) -> Result<usize> {
    crate::device::registry::compile_all(&families(), arch)
}

#[cfg(test)]
mod tests {
    /// A loaded module is found by its family's name and options (`CudaDevice::kernel`): two
    /// families may not share a name.
    #[test]
    fn family_names_are_unique() {
        let names: std::collections::HashSet<&str> = super::families().iter().map(|f| f.name).collect();
        assert_eq!(names.len(), super::families().len());
    }
}
