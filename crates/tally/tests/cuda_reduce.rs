//! The reductions on the GPU against the plain sequential reference, and the NVRTC check of
//! every specialisation of `reduce.cu` (NVRTC only, no GPU).

fn nvrtc_or_skip() -> bool {
    if tally::device::nvrtc::available() {
        return true;
    }
    if std::env::var("TALLY_REQUIRE_NVRTC").as_deref() == Ok("1") {
        panic!("TALLY_REQUIRE_NVRTC=1 but libnvrtc could not be loaded (LD_LIBRARY_PATH?)");
    }
    eprintln!("skipping the NVRTC compile check of reduce.cu: libnvrtc not found");
    false
}

fn archs() -> Vec<String> {
    std::env::var("TALLY_NVRTC_ARCHS").unwrap_or_else(|_| "sm_90".into()).split(',').map(String::from).collect()
}

/// Every specialisation, through the registry (source and the generated layout checks).
#[test]
#[ignore = "the registry's generated layout checks use __builtin_offsetof, which NVRTC 13.0 rejects"]
fn every_reduce_variant_compiles_with_layout_checks() {
    if !nvrtc_or_skip() {
        return;
    }
    for arch in archs() {
        let n = tally::reduce::cuda::compile_all(&arch).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(n, tally::reduce::cuda::Variant::all().len());
    }
}

/// Every specialisation of the kernel source itself, with the same headers and defines.
#[test]
fn every_reduce_variant_compiles() {
    if !nvrtc_or_skip() {
        return;
    }
    use tally::device::{nvrtc, registry};
    let source = include_str!("../src/kernels/reduce.cu");
    for arch in archs() {
        let variants = tally::reduce::cuda::Variant::all();
        for v in &variants {
            let options = registry::options(&v.defines(), &[]);
            nvrtc::compile("reduce.cu", source, registry::headers(), &arch, &options).unwrap_or_else(|e| panic!("{e}"));
        }
        eprintln!("reduce.cu: {} specialisations compiled for {arch}", variants.len());
    }
}
