//! The lab's kernels leave exactly the final values they should: counts, sums, maxima (the
//! integer trick with negative floats and both zeros included) and +inf. Without a GPU each
//! test prints a line and returns; with TALLY_REQUIRE_GPU=1 that is a failure.

use std::sync::Arc;
use tally::device::CudaDevice;
use tally::lab::cuda::{global_row, shared_check, shared_run};
use tally::lab::{CounterType, GlobalMode, SharedInput, SharedOp, SHARED_THREADS};

mod common;
use common::gpu;

/// Operations per global-lab row: TALLY_SMALL=1 (under compute-sanitizer) keeps every type,
/// mode and contention but drops the largest count.
fn op_counts() -> &'static [u64] {
    if std::env::var("TALLY_SMALL").as_deref() == Ok("1") {
        &[1 << 10, 1 << 16]
    } else {
        &[1 << 10, 1 << 16, 1 << 20]
    }
}

#[test]
fn cuda_lab_global_counts_are_exact_for_every_type_and_mode() {
    let Some(dev) = gpu() else { return };
    for t in CounterType::ALL {
        for mode in GlobalMode::ALL {
            for &ops in op_counts() {
                for addresses in [1u64, 2, 32, 256, 1024, 65536, 1 << 20] {
                    if addresses > ops {
                        continue;
                    }
                    let row = global_row(&dev, t, mode, ops, addresses, 1).unwrap();
                    assert!(row.verified, "{t:?} {mode:?} {ops} ops over {addresses}: {:?}", row.error);
                    assert!(row.ops_per_second.unwrap() > 0.0);
                }
            }
        }
    }
}

#[test]
fn cuda_lab_global_f32_stops_at_2_pow_24() {
    let Some(dev) = gpu() else { return };
    // 2^25 single adds of 1.0 to one f32 end at exactly 2^24; a warp's combined adds end
    // between 2^24 and 2^25; f64 and u32 count all the way.
    for mode in GlobalMode::ALL {
        let row = global_row(&dev, CounterType::F32, mode, 1 << 25, 1, 1).unwrap();
        assert!(row.verified, "{mode:?}: {:?}", row.error);
        for t in [CounterType::F64, CounterType::U32] {
            let row = global_row(&dev, t, mode, 1 << 25, 1, 1).unwrap();
            assert!(row.verified, "{t:?} {mode:?}: {:?}", row.error);
        }
    }
}

/// Runs `op` on `input` and checks every block's targets against the host's expectation.
fn run_checked(dev: &Arc<CudaDevice>, op: SharedOp, input: &SharedInput) -> Vec<f64> {
    let run = shared_run(dev, op, input).unwrap();
    if let Err(e) = shared_check(op, input, &run) {
        panic!("{op:?} with {} threads per address: {e}", input.threads_per_address);
    }
    assert_eq!(run.warp_cycles.len(), run.blocks as usize * (SHARED_THREADS / 32) as usize);
    assert!(run.warp_cycles.iter().all(|&c| c > 0), "every warp reports its cycles");
    run.finals
}

#[test]
fn cuda_lab_shared_every_op_at_every_contention_is_exact() {
    let Some(dev) = gpu() else { return };
    for op in SharedOp::ALL {
        for e in 0..=8 {
            let input = op.lab_input(1 << e, 64);
            run_checked(&dev, op, &input);
        }
    }
}

fn input(values: Vec<f64>, init: f64, threads_per_address: u32, rounds: u32) -> SharedInput {
    assert_eq!(values.len(), SHARED_THREADS as usize * 4);
    SharedInput { values, init, step: 0.0, first_round: 0, threads_per_address, rounds }
}

#[test]
fn cuda_lab_float_max_trick_handles_negatives_and_zeros() {
    let Some(dev) = gpu() else { return };
    let n = SHARED_THREADS as usize * 4;
    for op in [SharedOp::MaxF32Int, SharedOp::MaxF32Cas] {
        // All negative: the largest (least negative) wins, not the largest bit pattern.
        let neg: Vec<f64> = (0..n).map(|i| -1.0 - ((i * 7919) % 1000) as f64 * 0.25).collect();
        for tpa in [1, 32, 256] {
            let f = run_checked(&dev, op, &input(neg.clone(), f64::NEG_INFINITY, tpa, 8));
            if tpa == 256 {
                assert!(f.iter().all(|&x| x == -1.0), "{op:?}: {:?}", &f[..4]);
            }
        }
        // Mixed signs, the target starting at -inf.
        let mixed: Vec<f64> = (0..n).map(|i| ((i * 7919) % 2001) as f64 * 0.5 - 500.0).collect();
        let top = mixed.iter().copied().fold(f64::MIN, f64::max);
        let f = run_checked(&dev, op, &input(mixed, f64::NEG_INFINITY, 256, 8));
        assert!(f.iter().all(|&x| x == top), "{op:?}: {:?}, want {top}", &f[..4]);
        // -0.0 beats every negative number.
        let mut v = neg.clone();
        v[4 * 77 + 2] = -0.0;
        let f = run_checked(&dev, op, &input(v.clone(), f64::NEG_INFINITY, 256, 8));
        assert!(f.iter().all(|&x| x == 0.0 && x.is_sign_negative()), "{op:?}: -0.0 expected, got {:?}", &f[..4]);
        // A target already above every value stays.
        let f = run_checked(&dev, op, &input(v.clone(), 3.5, 256, 8));
        assert!(f.iter().all(|&x| x == 3.5), "{op:?}: {:?}", &f[..4]);
        // Both zeros: the integer trick orders -0 < +0, so +0 must win, bits and all.
        v[4 * 200 + 1] = 0.0;
        let f = run_checked(&dev, op, &input(v, f64::NEG_INFINITY, 256, 8));
        if op == SharedOp::MaxF32Int {
            assert!(f.iter().all(|&x| x == 0.0 && x.is_sign_positive()), "+0.0 expected, got {:?}", &f[..4]);
        } else {
            assert!(f.iter().all(|&x| x == 0.0), "{:?}", &f[..4]);
        }
    }
}

#[test]
fn cuda_lab_float_add_onto_infinity_and_cas_sum() {
    let Some(dev) = gpu() else { return };
    let n = SHARED_THREADS as usize * 4;
    let halves: Vec<f64> = (0..n).map(|i| ((i % 31) as f64 - 15.0) * 0.5).collect();
    for op in [SharedOp::AddF32, SharedOp::AddF32Cas, SharedOp::AddF32Inf] {
        // +inf absorbs every finite addend, whichever way the add is done.
        let f = run_checked(&dev, op, &input(halves.clone(), f64::INFINITY, 8, 16));
        assert!(f.iter().all(|&x| x == f64::INFINITY), "{op:?}: {:?}", &f[..4]);
        // From zero: the exact sum of halves, native and CAS loop alike.
        let f = run_checked(&dev, op, &input(halves.clone(), 0.0, 256, 16));
        let want: f64 = halves.iter().sum::<f64>() * 4.0;
        assert!(f.iter().all(|&x| x == want), "{op:?}: {:?}, want {want}", &f[..4]);
    }
}

#[test]
fn cuda_lab_integer_ops_carry_and_saturate_correctly() {
    let Some(dev) = gpu() else { return };
    let n = SHARED_THREADS as usize * 4;
    // u64 sums cross 2^32 many times over.
    let big = vec![u32::MAX as f64; n];
    let f = run_checked(&dev, SharedOp::AddU64, &input(big.clone(), 0.0, 256, 64));
    assert!(f.iter().all(|&x| x == u32::MAX as f64 * 256.0 * 64.0));
    // u32 max reaches the top value, and never wraps to a "larger" smaller one.
    let mut v: Vec<f64> = (0..n).map(|i| (i * 1_000_003 % 4_000_000_000) as f64).collect();
    v[123] = u32::MAX as f64;
    let f = run_checked(&dev, SharedOp::MaxU32, &input(v, 0.0, 256, 8));
    assert!(f.iter().all(|&x| x == u32::MAX as f64));
    // u32 add wraps modulo 2^32, as the host's expectation does.
    let f = run_checked(&dev, SharedOp::AddU32, &input(big, 0.0, 256, 8));
    assert!(f.iter().all(|&x| x == ((u32::MAX as u64 * 256 * 8) % (1 << 32)) as f64), "{:?}", &f[..2]);
}

/// The bandwidth probe (the yardstick of every benchmark) reads buffers of one 16-byte vector,
/// of an odd number of vectors and of many, in bounds (compute-sanitizer's memcheck runs this).
#[test]
fn cuda_read_bandwidth_probe_reads_every_size() {
    let Some(dev) = gpu() else { return };
    for bytes in [16usize, 16 * 1001, (1 << 22) + 16] {
        let gbs = dev.read_bandwidth(bytes, 3).unwrap();
        assert!(gbs.is_finite() && gbs > 0.0, "{bytes} bytes: {gbs} GB/s");
    }
}
