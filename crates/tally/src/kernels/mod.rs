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
    ("exact.cuh", include_str!("exact.cuh")),
];

/// Declares a Rust enum whose values select kernel variants, together with the C++ names the
/// kernels compare against: `Binning::Float` is passed as `-DTALLY_BINNING=TALLY_BINNING_FLOAT`,
/// and `codes.cuh` (generated from these declarations) says `#define TALLY_BINNING_FLOAT 2`.
/// A value's code is its place in the declaration and its C++ name is the prefix and the
/// variant's name in upper snake case (`GlobalL2` in `TALLY_STRATEGY` is
/// `TALLY_STRATEGY_GLOBAL_L2`): one list on the Rust side, no magic numbers on either.
#[macro_export]
#[doc(hidden)]
macro_rules! kernel_codes {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident as $prefix:literal {
            $( $(#[$vmeta:meta])* $variant:ident ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )*
        }
        impl $name {
            /// Every value.
            #[allow(dead_code)]
            pub const ALL: &'static [$name] = &[$($name::$variant),*];
            /// The C++ name of this value, as passed in the define.
            pub fn cpp(self) -> &'static str {
                match self {
                    $( $name::$variant => {
                        const LEN: usize = $crate::kernels::cpp_name_len($prefix, stringify!($variant));
                        const NAME: [u8; LEN] = $crate::kernels::cpp_name($prefix, stringify!($variant));
                        $crate::kernels::ascii(&NAME)
                    } )*
                }
            }
            /// The `#define`s of every value, for `codes.cuh`.
            pub(crate) fn cpp_defines() -> String {
                Self::ALL.iter().map(|&v| format!("#define {} {}\n", v.cpp(), v as u32)).collect()
            }
        }
    };
}

/// Whether `kernel_codes!` puts an underscore before byte `i` of a variant's name: at an upper
/// case letter that follows a lower case one (`GlobalL2` is `GLOBAL_L2`, `Table8` is `TABLE8`).
const fn word_starts_at(variant: &[u8], i: usize) -> bool {
    i > 0 && variant[i].is_ascii_uppercase() && variant[i - 1].is_ascii_lowercase()
}

/// The length of the C++ name of `variant` in the codes of `prefix` (see [`kernel_codes!`]).
#[doc(hidden)]
pub const fn cpp_name_len(prefix: &str, variant: &str) -> usize {
    let v = variant.as_bytes();
    let mut len = prefix.len() + 1 + v.len();
    let mut i = 0;
    while i < v.len() {
        len += word_starts_at(v, i) as usize;
        i += 1;
    }
    len
}

/// The C++ name of `variant` in the codes of `prefix`, `N` bytes long (see [`kernel_codes!`]).
#[doc(hidden)]
pub const fn cpp_name<const N: usize>(prefix: &str, variant: &str) -> [u8; N] {
    let (p, v) = (prefix.as_bytes(), variant.as_bytes());
    let mut out = [0u8; N];
    let mut at = 0;
    while at < p.len() {
        out[at] = p[at];
        at += 1;
    }
    out[at] = b'_';
    at += 1;
    let mut i = 0;
    while i < v.len() {
        if word_starts_at(v, i) {
            out[at] = b'_';
            at += 1;
        }
        out[at] = v[i].to_ascii_uppercase();
        at += 1;
        i += 1;
    }
    out
}

/// `bytes` as text; they are the ASCII of a Rust identifier and a prefix (see [`kernel_codes!`]).
#[doc(hidden)]
pub const fn ascii(bytes: &'static [u8]) -> &'static str {
    match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(_) => panic!("a kernel code's name is ASCII"),
    }
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
        s.push_str(&defines);
    }
    s
}

/// Every translation unit tally compiles.
pub fn families() -> Vec<&'static KernelFamily> {
    vec![
        &crate::histogram::cuda::FAMILY,
        &crate::histogram::cuda_general::FAMILY,
        &crate::histogram::partition::FAMILY,
        &crate::histogram::image::cuda::FAMILY,
        &bandwidth::FAMILY,
        &crate::lab::cuda::FAMILY,
        &crate::reduce::cuda::FAMILY,
        &crate::scan::cuda::FAMILY,
        &crate::select::cuda::FAMILY,
        &crate::runs::cuda::FAMILY,
        &crate::histogram::stream::FAMILY,
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

    /// A code's C++ name is the prefix and the variant's name in upper snake case, and its value
    /// is its place in the declaration.
    #[test]
    fn kernel_codes_names_and_values() {
        use crate::histogram::axis::Binning;
        use crate::histogram::policy::KernelStrategy;
        assert_eq!(KernelStrategy::GlobalL2.cpp(), "TALLY_STRATEGY_GLOBAL_L2");
        assert_eq!(KernelStrategy::WarpAggregated.cpp(), "TALLY_STRATEGY_WARP_AGGREGATED");
        assert_eq!(Binning::Integer32.cpp(), "TALLY_BINNING_INTEGER32");
        assert_eq!(Binning::Table8.cpp(), "TALLY_BINNING_TABLE8");
        let header = super::codes_header();
        assert!(header.contains("\n#define TALLY_STRATEGY_GLOBAL_ATOMIC 0\n"), "{header}");
        assert!(header.contains("\n#define TALLY_STRATEGY_GLOBAL_L2 5\n"), "{header}");
        assert!(header.contains("\n#define TALLY_BINNING_TABLE8 0\n#define TALLY_BINNING_INTEGER 1\n"), "{header}");
    }
}
