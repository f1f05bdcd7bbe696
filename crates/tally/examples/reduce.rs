//! Reductions on whatever backend this machine has (the CPU where there is no GPU): the typed
//! calls, the one-call API with its JSON result, a custom reduction, and, on a GPU, the kernel
//! times of a plan against the device's read bandwidth.
//!
//! `cargo run --release --example reduce [n]`

use tally::{Backend, CmpOp, Compare, CustomOp, ReduceOp, ReduceOptions, ReducePlan};

fn main() -> tally::Result<()> {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1 << 22);
    let detected = Backend::detect();
    println!("{detected}");
    let backend = detected.backend;
    let xs: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.618).sin() * 1e3).collect();

    println!("{n} f32 elements");
    println!("sum        {}", backend.sum(&xs)?);
    println!("exact sum  {}", backend.sum_exact(&xs)?);
    println!("mean       {}", backend.mean(&xs)?);
    println!("minmax     {:?}", backend.minmax(&xs)?);
    println!("argmax     {}", backend.argmax(&xs)?);
    println!("count > 0  {}", backend.count(&xs, Compare::new(CmpOp::Gt, 0.0))?);
    let absmax = CustomOp::new("fmaxf(fabsf(a), fabsf(b))", "0", 0.0f32, |a: f32, b: f32| a.abs().max(b.abs()));
    println!("max |x|    {}", backend.reduce_custom(&xs, &absmax)?);
    let r = backend.reduce(&xs, ReduceOp::Sum, ReduceOptions::exact())?;
    println!("{}", serde_json::to_string(&r).expect("a reduction serialises"));

    if let Some(dev) = backend.cuda_device() {
        let stream = dev.stream();
        let big = 1usize << 28;
        let read_gbs = dev.read_bandwidth(big * 4, 20)?;
        println!("read bandwidth {read_gbs:.0} GB/s");
        let f32s = stream.upload(&(0..big).map(|i| (i % 1000) as f32 - 500.0).collect::<Vec<_>>(), "f32")?;
        let f64s = stream.upload(&(0..big / 2).map(|i| (i % 1000) as f64 - 500.0).collect::<Vec<_>>(), "f64")?;
        let cases: [(&str, ReduceOp, ReduceOptions); 6] = [
            ("sum", ReduceOp::Sum, ReduceOptions::default()),
            ("exact sum", ReduceOp::Sum, ReduceOptions::exact()),
            ("argmin", ReduceOp::ArgMin, ReduceOptions::default()),
            ("minmax", ReduceOp::MinMax, ReduceOptions::default()),
            ("count", ReduceOp::Count(Compare::new(CmpOp::Lt, 0.0)), ReduceOptions::default()),
            ("sum skip_nan", ReduceOp::Sum, ReduceOptions::skip_nan()),
        ];
        for (name, op, options) in cases {
            let mut plan = ReducePlan::<f32>::new(dev, op, options, big)?;
            let view = f32s.view();
            let ms = stream.timer()?.median_ms(20, || plan.launch(stream, &view))?;
            let gbs = plan.bytes_read() as f64 / (ms * 1e6);
            println!("f32 {name:<13} 2^28: {ms:.3} ms, {gbs:.0} GB/s, {:.1}% of read", 100.0 * gbs / read_gbs);
        }
        for (name, op, options) in &cases[..4] {
            let mut plan = ReducePlan::<f64>::new(dev, *op, *options, big / 2)?;
            let view = f64s.view();
            let ms = stream.timer()?.median_ms(20, || plan.launch(stream, &view))?;
            let gbs = plan.bytes_read() as f64 / (ms * 1e6);
            println!("f64 {name:<13} 2^27: {ms:.3} ms, {gbs:.0} GB/s, {:.1}% of read", 100.0 * gbs / read_gbs);
        }
        let small = f32s.view();
        let small = small.slice(..1 << 20).expect("2^20 elements");
        let mut plan = ReducePlan::<f32>::new(dev, ReduceOp::Sum, ReduceOptions::default(), 1 << 20)?;
        let kernel_ms = stream.timer()?.median_ms(5, || {
            for _ in 0..100 {
                plan.launch(stream, &small)?;
            }
            Ok(())
        })? / 100.0;
        let mut times = Vec::new();
        for _ in 0..50 {
            let t = std::time::Instant::now();
            plan.launch(stream, &small)?;
            plan.read(stream)?;
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        times.sort_by(f64::total_cmp);
        println!("f32 sum 2^20: kernel {:.2} us, launch + read back {:.2} us (median)", kernel_ms * 1e3, times[25]);
    }
    Ok(())
}
