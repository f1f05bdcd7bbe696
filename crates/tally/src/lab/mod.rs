//! The atomics lab: the measurements tally's hierarchy rests on, as a feature anyone can run on
//! their own GPU (`tally lab global|shared|histogram`).
//!
//! * [`cuda::global`]: throughput of `atomicAdd` on global memory against the number of distinct
//!   addresses, per counter type, issued plainly, warp-aggregated by hand, or left to the compiler.
//! * [`cuda::shared`]: cycles per shared-memory atomic against the number of threads that share
//!   a target, for integer, float and compare-and-swap operations.
//! * The histogram lab (tally's strategies over bin counts and skew, CUB beside them) is a
//!   harness of the command-line tool, built on the public histogram API.
//!
//! Every measurement checks the final values its kernel left behind against the exact expected
//! ones; a row whose values are wrong carries an error and no figure. [`cpu::global`] is the CPU
//! backend's version of the global lab: rayon threads hammering `AtomicU32`/`AtomicU64`.

pub mod cpu;
pub mod cuda;
mod global;
mod shared;

pub use global::{
    check_counters, global_expected, scramble, CounterType, Expected, GlobalConfig, GlobalMode, GlobalReport,
    GlobalRow, DEFAULT_ADDRESSES,
};
pub use shared::{
    shared_expected, SharedConfig, SharedInput, SharedOp, SharedReport, SharedRow, SharedType, SHARED_THREADS,
};

/// Something to tell the caller as the lab goes: `(done, total, what is running now)`.
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize, &str);

// ---------------------------------------------------------------------------------------------
// Compile check

/// log2 of the default address counts: the compiler-mode specialisations `tally lab global`
/// asks for unless told otherwise.
pub fn default_address_bits() -> Vec<i32> {
    DEFAULT_ADDRESSES.iter().map(|a| a.trailing_zeros() as i32).collect()
}

pub(crate) fn global_defines(t: CounterType, address_bits: i32) -> Vec<(&'static str, String)> {
    vec![
        ("LAB_PART", "0".to_string()),
        ("LAB_TYPE", t.cuda_type().to_string()),
        ("LAB_ADDRESS_BITS", address_bits.to_string()),
    ]
}

pub(crate) fn shared_defines() -> Vec<(&'static str, String)> {
    vec![("LAB_PART", "1".to_string())]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scramble_is_a_bijection_so_every_counter_gets_the_same_count() {
        for bits in 0..=16u32 {
            let n = 1usize << bits;
            let mut seen = vec![false; n];
            for k in 0..n as u32 {
                let x = scramble(k, bits) as usize;
                assert!(x < n && !seen[x], "bits {bits}: {k} -> {x} repeats");
                seen[x] = true;
            }
        }
        // And it spreads a warp: 32 consecutive operations over 32 counters are not 32 distinct ones.
        let distinct: std::collections::HashSet<u32> = (0..32).map(|k| scramble(k, 20) & 31).collect();
        assert!(distinct.len() < 32 && distinct.len() > 8, "{}", distinct.len());
    }

    #[test]
    fn f32_saturates_at_2_pow_24() {
        let e = global_expected(CounterType::F32, GlobalMode::Plain, 1 << 28, 1);
        assert_eq!(e, Expected::Exact(16777216.0));
        let mut x = 16777216f32;
        x += 1.0;
        assert_eq!(x, 16777216.0);
        assert_eq!(
            global_expected(CounterType::F32, GlobalMode::Plain, 1 << 28, 32),
            Expected::Exact((1 << 23) as f64)
        );
        assert!(matches!(
            global_expected(CounterType::F32, GlobalMode::WarpAggregated, 1 << 28, 1),
            Expected::Between(..)
        ));
        assert_eq!(
            global_expected(CounterType::U32, GlobalMode::Plain, 1 << 28, 1),
            Expected::Exact((1u64 << 28) as f64)
        );
    }

    #[test]
    fn shared_expectations() {
        // Sums: every thread of a target adds its four values rounds/4 times.
        let input = SharedOp::AddU32.lab_input(4, 8);
        let e = shared_expected(SharedOp::AddU32, &input);
        assert_eq!(e.len(), 64);
        let want: f64 = (0..16).map(|i| (1 + i % 7) as f64).sum::<f64>() * 2.0;
        assert_eq!(e[0], want);
        // +inf absorbs every finite addend.
        let e = shared_expected(SharedOp::AddF32Inf, &SharedOp::AddF32Inf.lab_input(256, 8));
        assert_eq!(e, vec![f64::INFINITY]);
        // Rising maxima: the last round wins; the float ones cross zero half-way.
        let input = SharedOp::MaxF32Int.lab_input(256, 1024);
        let e = shared_expected(SharedOp::MaxF32Int, &input);
        let last: f64 = (0..256).map(|t| input.value(SharedType::F32, t, 1023)).fold(f64::MIN, f64::max);
        assert_eq!(e, vec![last]);
        assert!(input.value(SharedType::F32, 0, 0) < 0.0 && last > 0.0);
        // -0 beats every negative number and loses to +0.
        let mut input = SharedInput {
            values: vec![-1.0; 1024],
            init: f64::NEG_INFINITY,
            step: 0.0,
            first_round: 0,
            threads_per_address: 256,
            rounds: 4,
        };
        input.values[5] = -0.0;
        let e = shared_expected(SharedOp::MaxF32Int, &input);
        assert!(e[0] == 0.0 && e[0].is_sign_negative());
        input.values[9] = 0.0;
        let e = shared_expected(SharedOp::MaxF32Int, &input);
        assert!(e[0] == 0.0 && e[0].is_sign_positive());
    }
}
