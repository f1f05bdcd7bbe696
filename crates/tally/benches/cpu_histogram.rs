//! CPU histogram throughput against the machine's read bandwidth, measured in the same run.
//!
//! The target: a 256-bin histogram of 2^26 i32 at no less than 50% of the read bandwidth of
//! the same buffer (a parallel xor-reduction over it). Every case reads 256 MiB: 2^26 i32,
//! f32, or 2^28 u8. After criterion's own report, one summary line per case compares the
//! median of a few timed repetitions with the median read bandwidth of the i32 buffer.
//!
//! `cargo bench --bench cpu_histogram` (about a minute on two cores).

use criterion::{Criterion, Throughput};
use rayon::prelude::*;
use std::hint::black_box;
use std::time::{Duration, Instant};
use tally::data::{samples, Distribution};
use tally::histogram::cpu;
use tally::{HistogramSpec, Sample};

const N: usize = 1 << 26;
const BINS: u32 = 256;
const REPS: usize = 7;

/// The reading yardstick: every element loaded once, on every worker, nothing else done.
fn xor_reduce(data: &[i32]) -> i32 {
    data.par_chunks(1 << 16).map(|c| c.iter().fold(0i32, |a, &x| a ^ x)).reduce(|| 0, |a, b| a ^ b)
}

/// One histogram; returns the number of samples counted (so that nothing can be skipped).
fn histogram<T: Sample>(data: &[T], spec: &HistogramSpec) -> u64 {
    let h = cpu::histogram(black_box(data), spec).expect("valid spec");
    black_box(&h.counts);
    h.total()
}

struct Case<'a> {
    name: &'static str,
    elements: usize,
    bytes: usize,
    run: Box<dyn Fn() -> u64 + 'a>,
}

fn case<'a, T: Sample>(name: &'static str, data: &'a [T], spec: &'a HistogramSpec) -> Case<'a> {
    Case {
        name,
        elements: data.len(),
        bytes: std::mem::size_of_val(data),
        run: Box::new(move || histogram(data, spec)),
    }
}

fn median_secs(reps: usize, f: &dyn Fn()) -> f64 {
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[reps / 2]
}

fn main() {
    let threads = rayon::current_num_threads();
    let spec = HistogramSpec::even(BINS, 0.0, BINS as f64);
    // The i32 uniform buffer is also the one the read bandwidth is measured on.
    let i32_uniform: Vec<i32> = samples(Distribution::Uniform, BINS, N, 1);
    let i32_hot90: Vec<i32> = samples(Distribution::Hot90, BINS, N, 2);
    let u8_uniform: Vec<u8> = samples(Distribution::Uniform, BINS, 4 * N, 3);
    let f32_uniform: Vec<f32> = samples(Distribution::Uniform, BINS, N, 4);
    let cases = [
        case("i32 256 uniform", &i32_uniform, &spec),
        case("i32 256 hot90", &i32_hot90, &spec),
        case("u8 256 uniform", &u8_uniform, &spec),
        case("f32 256 uniform", &f32_uniform, &spec),
    ];
    for case in &cases {
        assert_eq!((case.run)(), case.elements as u64, "{}: not every sample counted", case.name);
    }

    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    {
        let mut g = c.benchmark_group("cpu_histogram");
        g.throughput(Throughput::Bytes(std::mem::size_of_val(&i32_uniform[..]) as u64));
        g.bench_function("read bandwidth (xor-reduce i32)", |b| {
            b.iter(|| black_box(xor_reduce(black_box(&i32_uniform))))
        });
        for case in &cases {
            g.throughput(Throughput::Bytes(case.bytes as u64));
            g.bench_function(case.name, |b| b.iter(|| black_box((case.run)())));
        }
        g.finish();
    }
    c.final_summary();

    let read_s = median_secs(REPS, &|| {
        black_box(xor_reduce(black_box(&i32_uniform)));
    });
    let read_gbs = std::mem::size_of_val(&i32_uniform[..]) as f64 / read_s / 1e9;
    println!();
    println!("summary ({threads} rayon threads, 256 MiB per case, median of {REPS}):");
    println!("read bandwidth (xor-reduce of the i32 buffer): {read_gbs:.2} GB/s");
    for case in &cases {
        let s = median_secs(REPS, &|| {
            black_box((case.run)());
        });
        let gbs = case.bytes as f64 / s / 1e9;
        println!(
            "cpu hist {}: {:.2} GB/s = {:.0}% of read bandwidth {:.2} GB/s",
            case.name,
            gbs,
            100.0 * gbs / read_gbs,
            read_gbs
        );
    }
}
