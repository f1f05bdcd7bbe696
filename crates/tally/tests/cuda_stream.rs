//! Streamed histograms and reductions on the GPU through the chunk pipeline, against the
//! one-shot CPU call: tiny chunks (many of them, so that every slot is reused many times),
//! two and three slots, staging buffers and device chunks poisoned before each run, and the
//! automatic streaming of host input above the threshold.

mod common;
mod stream_common;

use std::sync::Arc;
use stream_common::*;
use tally::device::staging::ChunkLayout;
use tally::device::{ChunkPipeline, SliceSource};
use tally::{Backend, CudaDevice, DeviceOptions, HistogramSpec, ReduceOp, ReduceOptions, Strategy, Tuning};

fn pipeline<T: tally::device::PlainData>(dev: &Arc<CudaDevice>, chunk: usize, buffers: usize) -> ChunkPipeline<T> {
    let layout = ChunkLayout { chunk_elements: chunk, element_bytes: std::mem::size_of::<T>(), buffers };
    let mut p = ChunkPipeline::new(dev, layout).unwrap();
    p.poison(0xff).unwrap();
    p
}

#[test]
fn gpu_streamed_histograms_equal_the_cpu() {
    let Some(dev) = common::gpu() else { return };
    for n in sizes() {
        let mut xs: Vec<f32> = samples(n, 15);
        for (i, x) in xs.iter_mut().enumerate().skip(2).step_by(89) {
            *x = [f32::NAN, -3.0, 300.0][i % 3];
        }
        for buffers in [2, 3] {
            check_histograms(&xs, "f32", |xs, chunk, spec| {
                pipeline::<f32>(&dev, chunk, buffers).histogram(&mut SliceSource::new(xs), spec, Strategy::Auto)
            });
        }
        let bytes: Vec<u8> = samples(n, 16);
        for strategy in [Strategy::Auto, Strategy::GlobalAtomic, Strategy::BlockShared] {
            check_histograms(&bytes, "u8", |xs, chunk, spec| {
                pipeline::<u8>(&dev, chunk, 3).histogram(&mut SliceSource::new(xs), spec, strategy)
            });
        }
    }
}

#[test]
fn gpu_streamed_reductions_equal_the_cpu() {
    let Some(dev) = common::gpu() else { return };
    for n in sizes() {
        let mut xs: Vec<f64> = samples::<f64>(n, 17).iter().map(|x| x - 100.0).collect();
        let mut ys: Vec<f32> = samples::<f32>(n, 18);
        if n > 10 {
            (xs[n / 2], xs[n - 1], xs[3], xs[4]) = (f64::NAN, f64::NAN, 1e300, -1e300);
            (ys[1], ys[n - 2]) = (f32::NAN, f32::INFINITY);
        }
        check_reductions(&xs, "f64", |xs, chunk, op, options| {
            pipeline::<f64>(&dev, chunk, 3).reduce(&mut SliceSource::new(xs), op, options)
        });
        check_reductions(&ys, "f32", |xs, chunk, op, options| {
            pipeline::<f32>(&dev, chunk, 2).reduce(&mut SliceSource::new(xs), op, options)
        });
        let ints: Vec<i64> = samples::<i64>(n, 19).iter().map(|x| (x - 128) << 50).collect();
        check_reductions(&ints, "i64", |xs, chunk, op, options| {
            pipeline::<i64>(&dev, chunk, 3).reduce(&mut SliceSource::new(xs), op, options)
        });
        let all_nan = vec![f32::NAN; n];
        check_reductions(&all_nan, "all NaN", |xs, chunk, op, options| {
            pipeline::<f32>(&dev, chunk, 3).reduce(&mut SliceSource::new(xs), op, options)
        });
    }
}

#[test]
fn gpu_host_input_above_the_threshold_streams() {
    let Some(_) = common::gpu() else { return };
    let tuning = Tuning { stream_threshold: Some(0), stream_chunk_bytes: Some(4096), ..Tuning::default() };
    let dev = CudaDevice::with_options(DeviceOptions { tuning, ..DeviceOptions::default() }).unwrap();
    let gpu = Backend::Cuda(dev);
    let xs: Vec<f32> = samples((1 << 20) + 3, 20);
    let spec = HistogramSpec::even(256, 0.0, 256.0);
    let want = Backend::cpu().histogram(&xs, &spec, Strategy::Auto).unwrap();
    assert!(gpu.histogram(&xs, &spec, Strategy::Auto).unwrap().same_counts(&want));
    for (op, options) in ops(true) {
        let want = Backend::cpu().reduce(&xs, op, options);
        let got = gpu.reduce(&xs, op, options);
        let magnitude: f64 = xs.iter().map(|x| x.abs() as f64).sum();
        assert_same_reduction::<f32>(&got, &want, (op, options), magnitude, "auto-streamed");
    }
    let want = Backend::cpu().reduce(&xs, ReduceOp::Sum, ReduceOptions::exact()).unwrap();
    let got = gpu.reduce_stream(&mut SliceSource::new(&xs), ReduceOp::Sum, ReduceOptions::exact()).unwrap();
    assert_eq!(got.value.to_bits(), want.value.to_bits());
}

/// A pipeline's pinned buffers stay with the device when it goes and serve the next pipeline,
/// holding the last call's data (of another type here): the next call's results do not depend
/// on it. At most `KEPT_PINNED_BYTES` are kept, and `release_pinned` frees them.
#[test]
fn gpu_pinned_buffers_are_kept_and_reused() {
    let Some(_) = common::gpu() else { return };
    let dev = CudaDevice::with_options(DeviceOptions::default()).unwrap();
    assert_eq!(dev.kept_pinned_bytes(), 0);
    let chunk_bytes = 1 << 16;
    let wide: Vec<f64> = samples(100_003, 21);
    let layout = |bytes: usize| ChunkLayout { chunk_elements: chunk_bytes / bytes, element_bytes: bytes, buffers: 3 };
    let mut p = ChunkPipeline::<f64>::new(&dev, layout(8)).unwrap();
    let sum = p.reduce(&mut SliceSource::new(&wide), ReduceOp::Sum, ReduceOptions::exact()).unwrap();
    assert_eq!(
        sum.value.to_bits(),
        Backend::cpu().reduce(&wide, ReduceOp::Sum, ReduceOptions::exact()).unwrap().value.to_bits()
    );
    drop(p);
    assert_eq!(dev.kept_pinned_bytes(), 3 * chunk_bytes, "the three slots' buffers are kept");
    // The next pipeline takes them (full of f64 bits) for bytes, and counts only its own.
    let bytes: Vec<u8> = samples(70_001, 22);
    let spec = HistogramSpec::even(256, 0.0, 256.0);
    let mut p = ChunkPipeline::<u8>::new(&dev, layout(1)).unwrap();
    assert_eq!(dev.kept_pinned_bytes(), 0, "taken by the new pipeline");
    let h = p.histogram(&mut SliceSource::new(&bytes), &spec, Strategy::Auto).unwrap();
    assert!(h.same_counts(&Backend::cpu().histogram(&bytes, &spec, Strategy::Auto).unwrap()));
    drop(p);
    // Buffers past the bound are freed, not kept.
    let big = tally::device::KEPT_PINNED_BYTES / 2 + 4096;
    let mut p =
        ChunkPipeline::<u8>::new(&dev, ChunkLayout { chunk_elements: big, element_bytes: 1, buffers: 2 }).unwrap();
    p.histogram(&mut SliceSource::new(&bytes), &spec, Strategy::Auto).unwrap();
    drop(p);
    assert!(dev.kept_pinned_bytes() <= tally::device::KEPT_PINNED_BYTES, "{}", dev.kept_pinned_bytes());
    dev.release_pinned();
    assert_eq!(dev.kept_pinned_bytes(), 0);
}

#[test]
fn gpu_streamed_weighted_histograms_equal_the_cpu_bit_for_bit() {
    let Some(dev) = common::gpu() else { return };
    let options = tally::WeightedOptions::default();
    for n in sizes() {
        let xs: Vec<f32> = samples(n, 31);
        let ws = weights(n, 32);
        for (buffers, shared) in [(2, tally::SharedAtomics::Halves), (3, tally::SharedAtomics::Native64)] {
            let options = tally::WeightedOptions { shared_atomics: shared, ..options };
            check_weighted_histograms(&xs, &ws, "f32 x f64", |xs, ws, chunk, spec| {
                let scale = Backend::Cuda(dev.clone()).fixed_scale_stream(&mut SliceSource::new(ws))?;
                let mut p = pipeline::<f32>(&dev, chunk, buffers);
                p.histogram_weighted(&mut SliceSource::new(xs), &mut SliceSource::new(ws), spec, options, scale)
            });
        }
        let bytes: Vec<u8> = samples(n, 33);
        let ws32: Vec<f32> = ws.iter().map(|&w| w as f32).collect();
        for strategy in [Strategy::Auto, Strategy::GlobalAtomic, Strategy::BlockShared] {
            let options = options.with_strategy(strategy);
            check_weighted_histograms(&bytes, &ws32, "u8 x f32", |xs, ws, chunk, spec| {
                let scale = Backend::Cuda(dev.clone()).fixed_scale_stream(&mut SliceSource::new(ws))?;
                let mut p = pipeline::<u8>(&dev, chunk, 3);
                p.histogram_weighted(&mut SliceSource::new(xs), &mut SliceSource::new(ws), spec, options, scale)
            });
        }
    }
}

#[test]
fn gpu_chunks_that_split_interleaved_samples_are_refused() {
    let Some(dev) = common::gpu() else { return };
    let spec =
        HistogramSpec::even(16, 0.0, 256.0).with_channels(tally::Channels { interleave: 3, selected: vec![2, 0] });
    let xs: Vec<f32> = samples(300, 41);
    let ws = vec![1.0f64; xs.len()];
    let scale = Backend::cpu().fixed_scale_stream(&mut SliceSource::new(&ws[..])).unwrap();
    let options = tally::WeightedOptions::default();
    for chunk in [1, 4, 100] {
        let r = pipeline::<f32>(&dev, chunk, 2).histogram(&mut SliceSource::new(&xs), &spec, Strategy::Auto);
        assert!(matches!(r, Err(tally::Error::InvalidArgument(_))), "chunk {chunk}: {r:?}");
        let mut p = pipeline::<f32>(&dev, chunk, 2);
        let r = p.histogram_weighted(&mut SliceSource::new(&xs), &mut SliceSource::new(&ws[..]), &spec, options, scale);
        assert!(matches!(r, Err(tally::Error::InvalidArgument(_))), "chunk {chunk}: {r:?}");
    }
}
