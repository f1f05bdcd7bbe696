//! Pieces every integration test binary of the library shares: finding the GPU, or saying why
//! a GPU test skips; a deterministic generator of random inputs; a histogram plan run on
//! poisoned counters.
#![allow(dead_code)] // each test binary uses its own subset

use std::sync::Arc;
use tally::device::CudaDevice;
use tally::histogram::{HistogramPlan, Tuning};
use tally::{Backend, Histogram, HistogramSpec, Sample, Strategy};

/// Counts `host[offset..]` on the device with a plan of `strategy`, its counters poisoned first
/// so that any the launch leaves unwritten show, and checks every count against the sequential
/// reference, three times, the counters poisoned again after the first: a plan of small
/// counters keeps a second set from its second launch on, whose kernel zeroes the first set
/// (poisoned) for the third to count into. Under TALLY_RACECHECK=1 (racecheck, whose cost is per
/// launch) twice: the second launch still runs the kernel that zeroes the other set. Returns the
/// result and the partition's slices and scratch bytes (None where it did not partition).
pub fn check_plan<T: Sample>(
    dev: &Arc<CudaDevice>,
    host: &[T],
    spec: &HistogramSpec,
    strategy: Strategy,
    offset: usize,
    tuning: &Tuning,
) -> (Histogram, Option<(usize, usize)>) {
    let stream = dev.stream();
    let buf = stream.upload(host, "test samples").unwrap();
    let start = offset.min(host.len());
    let all = buf.view();
    let samples = all.slice(start..).unwrap();
    let mut plan = HistogramPlan::new(dev, &samples, spec, strategy, tuning).unwrap();
    plan.fill_outputs(stream, 0xA5).unwrap();
    let want = tally::histogram::reference::histogram(&host[start..], spec);
    let what = format!("{} n={} offset={offset} spec={spec:?} strategy={strategy}", T::DTYPE, host.len() - start);
    plan.launch(stream, &samples).unwrap();
    let got = plan.read(stream).unwrap();
    assert_same_counts(&got, &want, &what);
    let launches = if racecheck() { 2 } else { 3 };
    for again in 1..launches {
        if again == 1 {
            // Before the second set exists: the second launch's kernel zeroes this poison.
            plan.fill_outputs(stream, 0x5A).unwrap();
        }
        plan.launch(stream, &samples).unwrap();
        let got = plan.read(stream).unwrap();
        assert_same_counts(&got, &want, &format!("{what}, launch {}", again + 1));
    }
    assert_eq!(got.backend, "cuda");
    (got, plan.partition_scratch())
}

/// TALLY_RACECHECK=1 (set by the racecheck runs): the tests launch each kernel variant fewer
/// times, racecheck's cost growing with launches (fewer sizes, misalignments, inputs).
pub fn racecheck() -> bool {
    std::env::var("TALLY_RACECHECK").as_deref() == Ok("1")
}

/// Panics with the outlier counts and the first differing bins where `got` and `want` differ.
pub fn assert_same_counts(got: &Histogram, want: &Histogram, what: &str) {
    if got.same_counts(want) {
        return;
    }
    let bad: Vec<_> = got
        .counts
        .iter()
        .flatten()
        .zip(want.counts.iter().flatten())
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .take(8)
        .collect();
    panic!(
        "{what} (ran {}):\n got below {:?} above {:?} nan {:?}\nwant below {:?} above {:?} nan {:?}\nfirst differing bins (bin, (got, want)): {bad:?}",
        got.strategy, got.below, got.above, got.nan, want.below, want.above, want.nan
    );
}

/// The GPUs that TALLY_REQUIRE_GPU asks for (a number; 0 where it is unset or not a number):
/// a test that needs that many or fewer fails, rather than skips, without them.
pub fn required_gpus() -> usize {
    std::env::var("TALLY_REQUIRE_GPU").ok().and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// The CUDA device, or None with a line on stderr; with TALLY_REQUIRE_GPU=1 (or more) no GPU is
/// a failure, so that a GPU host cannot pass these tests by skipping them.
pub fn gpu() -> Option<Arc<CudaDevice>> {
    match Backend::cuda() {
        Ok(Backend::Cuda(d)) => Some(d),
        Ok(Backend::Cpu) => unreachable!(),
        Err(e) => {
            let required = required_gpus();
            if required >= 1 {
                panic!("TALLY_REQUIRE_GPU={required} but no GPU: {e}");
            }
            eprintln!("skipping GPU test: {e}");
            None
        }
    }
}

/// A small deterministic generator: the splitmix64 sequence from a seed.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        let z = tally::data::splitmix64(self.0);
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z
    }
}

/// `n` values drawn by `gen` from the generator seeded with `seed`.
pub fn draw<T>(n: usize, seed: u64, mut gen: impl FnMut(&mut Rng) -> T) -> Vec<T> {
    let mut r = Rng(seed);
    (0..n).map(|_| gen(&mut r)).collect()
}

/// Implements a suite's generator trait `$gen` (`fn gen(r: &mut Rng) -> Self`) for integer
/// types as the generator's next bits, truncated: every value of the type.
#[allow(unused_macros)] // each test binary uses its own subset
macro_rules! gen_truncated {
    ($gen:ident: $($t:ty),*) => {$(
        impl $gen for $t {
            fn gen(r: &mut $crate::common::Rng) -> Self {
                r.next() as $t
            }
        }
    )*};
}
#[allow(unused_imports)]
pub(crate) use gen_truncated;

/// One `#[test]` per element type: `$name` runs the generic `$check::<$t>()`.
#[allow(unused_macros)] // each test binary uses its own subset
macro_rules! test_every_type {
    ($check:ident: $($name:ident: $t:ty),*) => {$(
        #[test]
        fn $name() {
            $check::<$t>();
        }
    )*};
}
#[allow(unused_imports)]
pub(crate) use test_every_type;

/// The length of the tests of kept look-back plans: 2^24 + 3 elements, more than 1,024 tiles of
/// every look-back kernel (each level of the look-back's states); under compute-sanitizer
/// (TALLY_SMALL=1) 40 tiles or more, two groups or more. With whether it is the small one.
pub fn kept_plan_len() -> (usize, bool) {
    let small = std::env::var("TALLY_SMALL").as_deref() == Ok("1");
    (if small { 40 * 12288 + 5 } else { (1 << 24) + 3 }, small)
}
