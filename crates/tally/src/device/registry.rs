//! The kernel registry: each primitive declares its translation unit once, as a
//! [`KernelFamily`] (source, entry points with their parameter structs, every specialisation
//! it can ask for). Loading a kernel on a device, the disk cache and CI's compile check of every
//! variant all work from these declarations.

use super::nvrtc;
use super::params::ParamLayout;
use crate::error::Result;

/// The preprocessor defines that pick one specialisation of a translation unit.
pub type Defines = Vec<(&'static str, String)>;

/// One `.cu` translation unit and what is compiled from it.
pub struct KernelFamily {
    /// The file name, as NVRTC reports it in errors.
    pub name: &'static str,
    /// The source, embedded in the binary.
    pub source: &'static str,
    /// The layouts of the parameter structs of its entry points (checked in every build).
    pub params: fn() -> Vec<ParamLayout>,
    /// Every specialisation tally can ask for on a device of compute capability `cc`
    /// (e.g. 90), as define lists.
    pub variants: fn(cc: u32) -> Vec<Defines>,
}

impl KernelFamily {
    /// The source as compiled: the file, then the layout checks of its parameter structs.
    pub fn full_source(&self) -> String {
        let mut text = String::with_capacity(self.source.len() + 2048);
        text.push_str(self.source);
        text.push_str("\n// Generated: the Rust side's layout of each parameter struct.\n");
        for layout in (self.params)() {
            text.push_str(&layout.static_asserts());
        }
        text
    }
}

/// `-DNAME=VALUE` options for `defines`, then `extra` options as given.
pub fn options(defines: &[(&str, String)], extra: &[String]) -> Vec<String> {
    defines.iter().map(|(k, v)| format!("-D{k}={v}")).chain(extra.iter().cloned()).collect()
}

/// The headers every kernel may include, by the name it includes them with: the fixed ones and
/// the generated `codes.cuh` (the C++ names of the variant codes).
pub fn headers() -> &'static [(&'static str, String)] {
    static HEADERS: std::sync::OnceLock<Vec<(&'static str, String)>> = std::sync::OnceLock::new();
    HEADERS.get_or_init(|| {
        let mut h: Vec<(&'static str, String)> =
            crate::kernels::HEADERS.iter().map(|(name, text)| (*name, text.to_string())).collect();
        h.push(("codes.cuh", crate::kernels::codes_header()));
        h
    })
}

/// Compiles every specialisation of every family for `arch` (e.g. "sm_90") with NVRTC alone,
/// no device needed: CI's check. Returns how many compiled.
pub fn compile_all(families: &[&KernelFamily], arch: &str) -> Result<usize> {
    use rayon::prelude::*;
    let cc: u32 = arch.trim_start_matches("sm_").trim_start_matches("compute_").parse().unwrap_or(0);
    let jobs: Vec<(&KernelFamily, Defines)> =
        families.iter().flat_map(|f| (f.variants)(cc).into_iter().map(move |d| (*f, d))).collect();
    let sources: Vec<String> = families.iter().map(|f| f.full_source()).collect();
    jobs.par_iter().try_for_each(|(family, defines)| {
        let index = families.iter().position(|f| std::ptr::eq(*f, *family)).expect("listed");
        nvrtc::compile(family.name, &sources[index], headers(), arch, &options(defines, &[])).map(|_| ())
    })?;
    Ok(jobs.len())
}
