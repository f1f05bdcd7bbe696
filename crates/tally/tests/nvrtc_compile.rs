//! Every kernel specialisation of every registered family must compile under NVRTC for sm_80
//! and sm_90, with the generated layout checks of its parameter structs. Needs libnvrtc only,
//! no GPU: CI installs the NVRTC wheel and sets TALLY_REQUIRE_NVRTC=1 so that a missing library
//! fails instead of skipping.

use tally::device::params::ParamLayout;
use tally::device::registry::{self, KernelFamily};

fn nvrtc_or_skip(what: &str) -> bool {
    if tally::device::nvrtc::available() {
        return true;
    }
    if std::env::var("TALLY_REQUIRE_NVRTC").as_deref() == Ok("1") {
        panic!("TALLY_REQUIRE_NVRTC=1 but libnvrtc could not be loaded (LD_LIBRARY_PATH?)");
    }
    eprintln!("skipping {what}: libnvrtc not found");
    false
}

#[test]
fn every_kernel_variant_compiles_for_sm80_and_sm90() {
    if !nvrtc_or_skip("the NVRTC compile check") {
        return;
    }
    let (major, minor) = tally::device::nvrtc::version().expect("nvrtcVersion");
    // TALLY_NVRTC_ARCHS narrows the check for a quick local run; CI checks both.
    let archs = std::env::var("TALLY_NVRTC_ARCHS").unwrap_or_else(|_| "sm_80,sm_90".into());
    // TALLY_NVRTC_FAMILIES (e.g. "scan.cu,select.cu") narrows it to some kernel files.
    let only = std::env::var("TALLY_NVRTC_FAMILIES").ok();
    let families: Vec<_> = tally::kernels::families()
        .into_iter()
        .filter(|f| only.as_deref().is_none_or(|list| list.split(',').any(|name| name == f.name)))
        .collect();
    assert!(!families.is_empty(), "TALLY_NVRTC_FAMILIES names no kernel file");
    for arch in archs.split(',') {
        let t = std::time::Instant::now();
        let n = tally::device::registry::compile_all(&families, arch).unwrap_or_else(|e| panic!("{e}"));
        eprintln!("NVRTC {major}.{minor}: {n} kernels compiled for {arch} in {:.1} s", t.elapsed().as_secs_f64());
        assert!(only.is_some() || n > 1000, "expected every specialisation, compiled {n}");
    }
}

#[test]
fn a_broken_kernel_is_reported_with_its_log() {
    if !tally::device::nvrtc::available() {
        return;
    }
    let no_headers: &[(&str, &str)] = &[];
    let err = tally::device::nvrtc::compile(
        "broken.cu",
        "extern \"C\" __global__ void k() { undeclared(); }",
        no_headers,
        "sm_90",
        &[],
    )
    .expect_err("must not compile");
    let msg = err.to_string();
    assert!(msg.contains("broken.cu") && msg.contains("undeclared"), "{msg}");
}

/// A parameter struct whose C++ side has drifted from the Rust side fails to compile.
#[test]
fn a_parameter_struct_that_differs_from_the_rust_side_does_not_compile() {
    if !tally::device::nvrtc::available() {
        return;
    }
    static DRIFTED: KernelFamily = KernelFamily {
        name: "drifted.cu",
        source: "struct P { unsigned int a; unsigned long long b; };\nextern \"C\" __global__ void k(const P p) {}\n",
        params: || vec![ParamLayout { cpp_name: "P", size: 16, fields: vec![("a", 0), ("b", 4)] }],
        variants: |_| vec![vec![]],
    };
    let err = registry::compile_all(&[&DRIFTED], "sm_90").expect_err("the offset of b differs");
    assert!(err.to_string().contains("P::b: offset differs from the Rust side"), "{err}");
    static MATCHING: KernelFamily = KernelFamily {
        name: "matching.cu",
        source: DRIFTED.source,
        params: || vec![ParamLayout { cpp_name: "P", size: 16, fields: vec![("a", 0), ("b", 8)] }],
        variants: |_| vec![vec![]],
    };
    assert_eq!(registry::compile_all(&[&MATCHING], "sm_90").unwrap(), 1);
}
