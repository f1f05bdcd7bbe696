//! What the GPU-against-CPU property tests share: the draws of one case from its seed, the
//! seeds of a run (`TALLY_PROPERTY_CASES`, default 10,000, or the one `TALLY_PROPERTY_SEED`),
//! and the loop that names the seed of a failing case, whether it returned an error or panicked.
#![allow(dead_code)] // each test binary uses its own subset

use std::panic::{catch_unwind, AssertUnwindSafe};
use tally::data::splitmix64;

/// Draws from one case's seed.
pub struct Draw(pub u64);
impl Draw {
    pub fn next(&mut self) -> u64 {
        self.0 = splitmix64(self.0);
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// Sizes spread over orders of magnitude, 0 included.
    pub fn size(&mut self, max_log2: u64) -> usize {
        let bits = self.below(max_log2 + 1);
        (self.next() & ((1u64 << bits) - 1)) as usize
    }
    /// Mostly small sizes (up to 2^`small_log2`), one case in 64 up to 2^`large_log2`.
    pub fn mostly_small(&mut self, small_log2: u64, large_log2: u64) -> usize {
        if self.below(64) == 0 {
            self.size(large_log2)
        } else {
            self.size(small_log2)
        }
    }
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// One of `items`.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// The seeds of the cases to run: one given seed, or `TALLY_PROPERTY_CASES` of them.
pub fn seeds(salt: u64) -> Vec<u64> {
    if let Some(s) = std::env::var("TALLY_PROPERTY_SEED").ok().and_then(|s| s.parse().ok()) {
        return vec![s];
    }
    let cases: u64 = std::env::var("TALLY_PROPERTY_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    (0..cases).map(|i| splitmix64(salt ^ i)).collect()
}

/// Runs `case` for every seed, naming the seed of the first failure (an error, or a panic of
/// an assertion inside the case).
pub fn for_each_case(name: &str, salt: u64, mut case: impl FnMut(&mut Draw) -> Result<(), String>) {
    let seeds = seeds(salt);
    let start = std::time::Instant::now();
    for &seed in &seeds {
        let outcome = catch_unwind(AssertUnwindSafe(|| case(&mut Draw(seed))));
        let failure = match outcome {
            Ok(Ok(())) => continue,
            Ok(Err(e)) => e,
            Err(panic) => panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".into()),
        };
        panic!("{name}: case with TALLY_PROPERTY_SEED={seed} failed: {failure}");
    }
    eprintln!("{name}: {} cases agreed in {:.1} s", seeds.len(), start.elapsed().as_secs_f64());
}

/// Samples with skew: a share of them on one value, the rest spread over a span a little wider
/// than the range, with NaN and infinities among floats.
pub fn samples<T>(d: &mut Draw, n: usize, lo: f64, hi: f64, from: impl Fn(f64) -> T, float: bool) -> Vec<T> {
    let hot = d.unit() * d.unit();
    let hot_value = lo + d.unit() * (hi - lo);
    let span = (hi - lo) * 1.2;
    (0..n)
        .map(|_| {
            let r = d.unit();
            if float && r < 0.01 {
                from([f64::NAN, f64::INFINITY, f64::NEG_INFINITY, lo, hi][d.below(5) as usize])
            } else if r < hot {
                from(hot_value)
            } else {
                from(lo - 0.1 * (hi - lo) + d.unit() * span)
            }
        })
        .collect()
}

/// One element of any type: mostly small values around zero (with a hot value repeated, see
/// [`elements`]), the type's limits and their neighbours, any bits, and among floats NaN, the
/// infinities, -0.0 and the smallest subnormal. `tame`: no limits or random bits (values whose
/// sums stay far from overflow).
pub fn element<T: tally::ReduceElement>(d: &mut Draw, tame: bool) -> T {
    let pick = if tame { 8 + d.below(24) } else { d.below(32) };
    if T::TYPE.is_float() {
        let special = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0];
        return match pick {
            0..=3 => T::from_value(special[pick as usize], None),
            4 | 5 => T::from_bits64(d.next()),
            6 => T::from_bits64(1),
            _ => T::from_value((d.below(1201) as f64 - 600.0) / 10.0, None),
        };
    }
    let (lo, hi) = T::TYPE.int_range();
    let v = match pick {
        0 => lo,
        1 => hi,
        2 => lo + 1,
        3 => hi - 1,
        4 | 5 => return T::from_bits64(d.next()),
        _ if lo == 0 => d.below(121) as i128,
        _ => d.below(121) as i128 - 60,
    };
    T::from_value(v as f64, Some(v))
}

/// `n` elements, a random share of them one hot value.
pub fn elements<T: tally::ReduceElement>(d: &mut Draw, n: usize, tame: bool) -> Vec<T> {
    let hot_share = d.unit() * d.unit();
    let hot = element::<T>(d, tame);
    (0..n).map(|_| if d.unit() < hot_share { hot } else { element(d, tame) }).collect()
}

/// A job of [`warm_up`].
pub type WarmJob<'a> = Box<dyn FnOnce() -> tally::Result<()> + Send + 'a>;

/// Runs `jobs` (each making the plans of some specialisations) on threads of their own, so
/// that the kernels a run loads compile in parallel on a cold cache: NVRTC takes about a
/// second per specialisation, and the cases would load them one at a time. Best effort: a job
/// that fails leaves its kernels to the case that needs them, which reports the error.
pub fn warm_up(jobs: Vec<WarmJob<'_>>) {
    let start = std::time::Instant::now();
    let n = jobs.len();
    std::thread::scope(|s| {
        for job in jobs {
            s.spawn(move || catch_unwind(AssertUnwindSafe(job)));
        }
    });
    eprintln!("{n} warm-up jobs in {:.1} s", start.elapsed().as_secs_f64());
}
