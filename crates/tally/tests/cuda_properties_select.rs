//! Select on the GPU against the sequential reference on random problems: 10,000 cases by
//! default (`TALLY_PROPERTY_CASES`), each from its own seed, which a failure prints
//! (`TALLY_PROPERTY_SEED` runs that case alone). A case draws the element type, the size
//! (mostly small, a tail up to 2^22), a misaligned start, the data (limits, NaN, infinities,
//! -0.0, a hot value) and one of the entry points: stable, unordered, indices, flags,
//! partition in either layout, count. Outputs are poisoned first. The predicates come from a
//! small generator (comparisons with constants in and beyond the type's range, NaN and
//! infinities, `&&`, `||`, `!`, `isnan`, a bare `x`) seeded once per element type, so that a
//! run compiles a bounded number of kernels. Without a GPU the test skips (with
//! TALLY_REQUIRE_GPU=1 that is a failure).

mod common;
mod properties_common;
mod select_common;

use properties_common::{elements, for_each_case, warm_up, Draw, WarmJob};
use select_common::{same_bits, sort_bits};
use std::sync::Arc;
use tally::data::splitmix64;
use tally::select::reference;
use tally::{CudaDevice, ElementType, Predicate, SelectElement, SelectMode, SelectPlan};

/// Predicates of one element type; the same on every run (seeded by the type).
const PREDICATES_PER_TYPE: usize = 3;

/// A constant for a comparison on elements of `ty`: small, a half, the type's limits and just
/// beyond them, far beyond, infinite or NaN.
fn constant(d: &mut Draw, ty: ElementType) -> String {
    let small = d.below(121) as i64 - 60;
    if ty.is_float() {
        let max = if ty == ElementType::F32 { f32::MAX as f64 } else { f64::MAX };
        return match d.below(10) {
            0 => format!("{max:e}"),
            1 => format!("{:e}", -max),
            2 => d.pick(&["inf", "-inf", "nan", "1e39", "1e-45", "-0.0"]).into(),
            3 => format!("{small}.5"),
            _ => small.to_string(),
        };
    }
    let (lo, hi) = ty.int_range();
    match d.below(10) {
        0 => lo.to_string(),
        1 => hi.to_string(),
        2 => (lo - 1).to_string(),
        3 => (hi + 1).to_string(),
        4 => format!("{small}.5"),
        5 => d.pick(&["1e30", "-1e30", "inf", "nan"]).into(),
        _ => small.to_string(),
    }
}

fn comparison(d: &mut Draw, ty: ElementType) -> String {
    match d.below(8) {
        0 => "isnan(x)".into(),
        1 => "x".into(),
        2 => "!isfinite(x)".into(),
        _ => {
            let op = d.pick(&["<", "<=", ">", ">=", "==", "!="]);
            format!("x {op} {}", constant(d, ty))
        }
    }
}

fn predicate(d: &mut Draw, ty: ElementType, depth: u32) -> String {
    if depth == 0 || d.below(3) == 0 {
        return comparison(d, ty);
    }
    match d.below(3) {
        0 => format!("({}) && ({})", predicate(d, ty, depth - 1), predicate(d, ty, depth - 1)),
        1 => format!("({}) || ({})", predicate(d, ty, depth - 1), predicate(d, ty, depth - 1)),
        _ => format!("!({})", predicate(d, ty, depth - 1)),
    }
}

/// The predicates of element type `ty`: drawn until all but at most one of them depend on the
/// element (many fold to a constant on a type, `x > 300` on u8, say).
fn predicates(ty: ElementType) -> Vec<String> {
    let mut d = Draw(splitmix64(0x5e1ec7 ^ ty as u64));
    let mut pool: Vec<String> = Vec::new();
    let mut constant = false;
    while pool.len() < PREDICATES_PER_TYPE {
        let text = predicate(&mut d, ty, 3);
        let cpp = Predicate::parse(&text).and_then(|p| p.cpp_for(ty)).expect("the generator's predicates parse");
        let folded = cpp == "true" || cpp == "false";
        if !folded || !constant {
            constant |= folded;
            pool.push(text);
        }
    }
    pool
}

const MODES: [SelectMode; 7] = [
    SelectMode::Stable,
    SelectMode::Unordered,
    SelectMode::Indices,
    SelectMode::Flagged,
    SelectMode::Partition,
    SelectMode::PartitionReversed,
    SelectMode::Count,
];

fn ok<X>(r: tally::Result<X>, label: &str) -> X {
    r.unwrap_or_else(|e| panic!("{label}: {e}"))
}

fn select_case<T: SelectElement>(dev: &Arc<CudaDevice>, d: &mut Draw) -> Result<(), String> {
    let stream = dev.stream();
    let n = d.mostly_small(13, 22);
    let offset = d.below(4) as usize;
    let xs: Vec<T> = elements(d, n + offset, false);
    let ys = &xs[offset..];
    let pool = predicates(T::TYPE);
    let text = &pool[d.below(pool.len() as u64) as usize];
    let p = Predicate::parse(text).map_err(|e| format!("{text:?}: {e}"))?;
    let mode = d.pick(&MODES);
    let label = format!("{} n={n} offset={offset} {mode:?} {text:?}", T::TYPE);
    let input = ok(stream.upload(&xs, "property input"), &label);
    let view = input.view();
    let view = view.slice(offset..).expect("in range");
    let poison = T::from_bits64(0xa5a5_a5a5_a5a5_a5a5);
    let poisoned = |len: usize| ok(stream.upload(&vec![poison; len], "poisoned output"), &label);
    match mode {
        SelectMode::Count => {
            let mut plan = ok(SelectPlan::<T>::new(dev, &p, mode, n), &label);
            ok(plan.launch_count(stream, &view), &label);
            let kept = ok(plan.read(stream), &label);
            assert_eq!(kept, reference::count_if(ys, &p), "{label}");
        }
        SelectMode::Indices => {
            let mut plan = ok(SelectPlan::<T>::new(dev, &p, mode, n), &label);
            let mut out = ok(stream.upload(&vec![u64::MAX; n], "poisoned indices"), &label);
            ok(plan.launch_indices(stream, &view, &mut out.view_mut()), &label);
            let kept = ok(plan.read(stream), &label) as usize;
            let got = ok(stream.download(&out.view()), &label);
            assert_eq!(&got[..kept], &reference::select_indices(ys, &p)[..], "{label}");
            assert!(got[kept..].iter().all(|&i| i == u64::MAX), "{label}: wrote past the count");
        }
        SelectMode::Flagged => {
            // Flags start at their own offset; any nonzero byte keeps.
            let flag_offset = d.below(4) as usize;
            let density = d.unit();
            let flags: Vec<u8> =
                (0..n + flag_offset).map(|_| if d.unit() < density { 1 + d.below(255) as u8 } else { 0 }).collect();
            let flag_buf = ok(stream.upload(&flags, "property flags"), &label);
            let fview = flag_buf.view();
            let fview = fview.slice(flag_offset..).expect("in range");
            let mut plan = ok(SelectPlan::<T>::flagged(dev, n), &label);
            let mut out = poisoned(n);
            ok(plan.launch_flagged(stream, &view, &fview, &mut out.view_mut()), &label);
            let kept = ok(plan.read(stream), &label) as usize;
            let got = ok(stream.download(&out.view()), &label);
            let want = reference::select_flagged(ys, &flags[flag_offset..]);
            assert!(same_bits(&got[..kept], &want), "{label} flags from {flag_offset}");
            assert!(same_bits(&got[kept..], &vec![poison; n - kept]), "{label}: wrote past the count");
        }
        _ => {
            let mut plan = ok(SelectPlan::<T>::new(dev, &p, mode, n), &label);
            let mut out = poisoned(n);
            ok(plan.launch(stream, &view, &mut out.view_mut()), &label);
            let kept = ok(plan.read(stream), &label) as usize;
            let mut got = ok(stream.download(&out.view()), &label);
            let mut want = reference::select(ys, &p);
            assert_eq!(kept, want.len(), "{label}: count");
            match mode {
                SelectMode::Stable | SelectMode::Unordered => {
                    if mode == SelectMode::Unordered {
                        sort_bits(&mut got[..kept]);
                        sort_bits(&mut want);
                    }
                    assert!(same_bits(&got[..kept], &want), "{label}");
                    assert!(same_bits(&got[kept..], &vec![poison; n - kept]), "{label}: wrote past the count");
                }
                _ => {
                    let (mut parted, _) = reference::partition(ys, &p);
                    if mode == SelectMode::PartitionReversed {
                        parted[kept..].reverse();
                    }
                    assert!(same_bits(&got, &parted), "{label}");
                }
            }
        }
    }
    Ok(())
}

/// Loads every specialisation the cases of `T` can ask for.
fn warm<T: SelectElement>(dev: &Arc<CudaDevice>) -> tally::Result<()> {
    for text in predicates(T::TYPE) {
        let p = Predicate::parse(&text)?;
        for &mode in MODES.iter().filter(|&&m| m != SelectMode::Flagged) {
            SelectPlan::<T>::new(dev, &p, mode, 1)?;
        }
    }
    SelectPlan::<T>::flagged(dev, 1).map(|_| ())
}

#[test]
fn cuda_select_equals_the_reference_on_random_problems() {
    let Some(dev) = common::gpu() else { return };
    let jobs: Vec<WarmJob> = vec![
        Box::new(|| warm::<u8>(&dev)),
        Box::new(|| warm::<i8>(&dev)),
        Box::new(|| warm::<u16>(&dev)),
        Box::new(|| warm::<i16>(&dev)),
        Box::new(|| warm::<u32>(&dev)),
        Box::new(|| warm::<i32>(&dev)),
        Box::new(|| warm::<u64>(&dev)),
        Box::new(|| warm::<i64>(&dev)),
        Box::new(|| warm::<f32>(&dev)),
        Box::new(|| warm::<f64>(&dev)),
        Box::new(|| warm::<tally::half::f16>(&dev)),
        Box::new(|| warm::<tally::half::bf16>(&dev)),
    ];
    warm_up(jobs);
    for_each_case("select", 0x5e1, |d| match d.pick(&ElementType::ALL) {
        ElementType::U8 => select_case::<u8>(&dev, d),
        ElementType::I8 => select_case::<i8>(&dev, d),
        ElementType::U16 => select_case::<u16>(&dev, d),
        ElementType::I16 => select_case::<i16>(&dev, d),
        ElementType::U32 => select_case::<u32>(&dev, d),
        ElementType::I32 => select_case::<i32>(&dev, d),
        ElementType::U64 => select_case::<u64>(&dev, d),
        ElementType::I64 => select_case::<i64>(&dev, d),
        ElementType::F32 => select_case::<f32>(&dev, d),
        ElementType::F64 => select_case::<f64>(&dev, d),
        ElementType::F16 => select_case::<tally::half::f16>(&dev, d),
        ElementType::BF16 => select_case::<tally::half::bf16>(&dev, d),
    });
}

/// The generator's predicates parse, and on every type all but at most one of them depend on
/// the element (the properties test selections, not only constant predicates). Runs without a
/// GPU.
#[test]
fn the_generated_predicates_parse_and_depend_on_x() {
    for ty in ElementType::ALL {
        let cpp: Vec<String> = predicates(ty)
            .iter()
            .map(|text| Predicate::parse(text).and_then(|p| p.cpp_for(ty)).unwrap_or_else(|e| panic!("{text:?}: {e}")))
            .collect();
        let constant = cpp.iter().filter(|c| *c == "true" || *c == "false").count();
        assert!(constant <= 1, "{ty}: {cpp:?}");
        eprintln!("{ty}: {:?}", predicates(ty));
    }
}

/// Every select specialisation the property test can load compiles under NVRTC (sm_90), with
/// no GPU: the generated predicates' C++ (constants at the limits, NaN, infinities) included.
/// Skips without libnvrtc (TALLY_REQUIRE_NVRTC=1 makes that a failure).
#[test]
fn the_generated_predicates_compile_with_nvrtc() {
    use tally::device::registry::{compile_all, KernelFamily};
    use tally::select::cuda::{SelectVariant, FAMILY};
    use tally::select::policy::{policy, SelectKernel};
    if !tally::device::nvrtc::available() {
        assert_ne!(std::env::var("TALLY_REQUIRE_NVRTC").as_deref(), Ok("1"), "TALLY_REQUIRE_NVRTC=1 but no libnvrtc");
        eprintln!("skipping: libnvrtc not found");
        return;
    }
    fn variants(_: u32) -> Vec<tally::device::registry::Defines> {
        let mut v = Vec::new();
        for elem in ElementType::ALL {
            for text in predicates(elem) {
                let cpp = Predicate::parse(&text).and_then(|p| p.cpp_for(elem)).expect("binds");
                for &kernel in SelectKernel::ALL.iter().filter(|&&k| k != SelectKernel::Flagged) {
                    let shape = policy(elem, kernel, 0, &tally::Tuning::default()).expect("policy").shape();
                    v.push(SelectVariant { elem, kernel, predicate: Some(cpp.clone()), shape }.defines());
                }
            }
        }
        v
    }
    let pool = KernelFamily { name: FAMILY.name, source: FAMILY.source, params: FAMILY.params, variants };
    let t = std::time::Instant::now();
    let n = compile_all(&[&pool], "sm_90").unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{n} select specialisations of the generated predicates compiled in {:.1} s", t.elapsed().as_secs_f64());
}
