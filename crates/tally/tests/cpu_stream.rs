//! Streamed histograms and reductions on the CPU, chunk by chunk, against the one-shot call;
//! and the sources (slice, file from an offset, reader) deliver every element once, in order.

mod stream_common;

use stream_common::*;
use tally::device::staging::ChunkLayout;
use tally::device::{ChunkSource, FileSource, ReadSource, SliceSource};
use tally::histogram::stream::cpu_histogram_stream;
use tally::reduce::stream::cpu_reduce_stream;
use tally::{Backend, Error, HistogramSpec, ReduceOp, ReduceOptions, Strategy};

fn layout<T>(chunk: usize) -> ChunkLayout {
    ChunkLayout { chunk_elements: chunk, element_bytes: std::mem::size_of::<T>(), buffers: 2 }
}

#[test]
fn histograms_equal_the_one_shot_call() {
    for n in sizes() {
        let mut xs: Vec<f32> = samples(n, 5);
        for (i, x) in xs.iter_mut().enumerate().skip(5).step_by(97) {
            *x = [f32::NAN, -3.0, 300.0][i % 3];
        }
        check_histograms(&xs, "f32", |xs, chunk, spec| {
            cpu_histogram_stream(&mut SliceSource::new(xs), spec, layout::<f32>(chunk))
        });
        let bytes: Vec<u8> = samples(n, 6);
        check_histograms(&bytes, "u8", |xs, chunk, spec| {
            cpu_histogram_stream(&mut SliceSource::new(xs), spec, layout::<u8>(chunk))
        });
    }
}

#[test]
fn reductions_equal_the_one_shot_call() {
    for n in sizes() {
        let mut xs: Vec<f64> = samples::<f64>(n, 7).iter().map(|x| x - 100.0).collect();
        if n > 10 {
            xs[n / 2] = f64::NAN;
            xs[n - 1] = f64::NAN;
            xs[3] = 1e300;
            xs[4] = -1e300;
        }
        check_reductions(&xs, "f64", |xs, chunk, op, options| {
            cpu_reduce_stream(&mut SliceSource::new(xs), op, options, layout::<f64>(chunk))
        });
        let ints: Vec<i32> = samples::<i32>(n, 8).iter().map(|x| x * 1_000_000 - 7).collect();
        check_reductions(&ints, "i32", |xs, chunk, op, options| {
            cpu_reduce_stream(&mut SliceSource::new(xs), op, options, layout::<i32>(chunk))
        });
        let all_nan = vec![f32::NAN; n];
        check_reductions(&all_nan, "all NaN", |xs, chunk, op, options| {
            cpu_reduce_stream(&mut SliceSource::new(xs), op, options, layout::<f32>(chunk))
        });
    }
}

#[test]
fn the_backend_streams_on_the_cpu() {
    let xs: Vec<u16> = samples(5000, 9);
    let spec = HistogramSpec::even(100, 0.0, 256.0);
    let want = Backend::cpu().histogram(&xs, &spec, Strategy::Auto).unwrap();
    let got = Backend::cpu().histogram_stream(&mut SliceSource::new(&xs), &spec, Strategy::Auto).unwrap();
    assert!(got.same_counts(&want));
    let want = Backend::cpu().reduce(&xs, ReduceOp::ArgMax, ReduceOptions::default()).unwrap();
    let got = Backend::cpu().reduce_stream(&mut SliceSource::new(&xs), ReduceOp::ArgMax, ReduceOptions::default());
    assert!(got.unwrap().same_result(&want));
}

/// Everything `source` gives, in chunks of `chunk`.
fn drain<T: tally::device::PlainData>(source: &mut dyn ChunkSource<T>, chunk: usize) -> tally::Result<Vec<T>> {
    let mut all = Vec::new();
    let mut buf = vec![T::default(); chunk];
    loop {
        let got = source.fill(&mut buf)?;
        all.extend_from_slice(&buf[..got]);
        if got < chunk {
            return Ok(all);
        }
    }
}

#[test]
fn files_and_readers_give_every_element_once() {
    let xs: Vec<u32> = (0..10_007u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let mut bytes = b"HEADER!".to_vec();
    bytes.extend(xs.iter().flat_map(|x| x.to_le_bytes()));
    let path = std::env::temp_dir().join(format!("tally-stream-{}.bin", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    for chunk in [1, 2, 1000, 10_006, 10_007, 10_008, 1 << 21] {
        let mut file = FileSource::<u32>::open(&path, 7, None).unwrap();
        assert_eq!(file.remaining(), Some(xs.len() as u64));
        assert_eq!(drain(&mut file, chunk).unwrap(), xs, "file, chunk {chunk}");
        let mut first = FileSource::<u32>::open(&path, 7, Some(100)).unwrap();
        assert_eq!(drain(&mut first, chunk).unwrap(), xs[..100], "file prefix, chunk {chunk}");
        let mut reader = ReadSource::<_, u32>::new(&bytes[7..], None);
        assert_eq!(drain(&mut reader, chunk).unwrap(), xs, "reader, chunk {chunk}");
    }
    // Bytes that are not whole elements, and declared lengths past the end, are errors.
    assert!(matches!(FileSource::<u32>::open(&path, 6, None), Err(Error::InvalidArgument(_))));
    assert!(matches!(FileSource::<u32>::open(&path, 7, Some(10_008)), Err(Error::InvalidArgument(_))));
    assert!(matches!(FileSource::<u32>::open(&path, 1 << 40, None), Err(Error::InvalidArgument(_))));
    let mut torn = ReadSource::<_, u32>::new(&bytes[6..], None);
    assert!(matches!(drain(&mut torn, 64), Err(Error::InvalidArgument(_))));
    let mut short = ReadSource::<_, u32>::new(&bytes[7..], Some(10_008));
    assert!(matches!(drain(&mut short, 64), Err(Error::InvalidArgument(_))));
    std::fs::remove_file(&path).unwrap();
    let missing = FileSource::<u8>::open(std::path::Path::new("/nonexistent/tally"), 0, None);
    assert!(matches!(missing, Err(Error::Io { .. })));
}

#[test]
fn weighted_histograms_equal_the_one_shot_call_bit_for_bit() {
    use tally::histogram::stream_weighted::cpu_histogram_weighted_stream;
    for n in sizes() {
        let xs: Vec<f32> = samples(n, 21);
        let ws = weights(n, 22);
        check_weighted_histograms(&xs, &ws, "f32 x f64", |xs, ws, chunk, spec| {
            let scale = Backend::cpu().fixed_scale_stream(&mut SliceSource::new(ws))?;
            cpu_histogram_weighted_stream(
                &mut SliceSource::new(xs),
                &mut SliceSource::new(ws),
                spec,
                scale,
                layout::<f32>(chunk),
            )
        });
        let ws32: Vec<f32> = ws.iter().map(|&w| w as f32).collect();
        let bytes: Vec<u8> = samples(n, 23);
        check_weighted_histograms(&bytes, &ws32, "u8 x f32", |xs, ws, chunk, spec| {
            let backend = Backend::cpu();
            let scale = backend.fixed_scale_stream(&mut SliceSource::new(ws))?;
            let _ = chunk; // the backend's own chunking
            let options = tally::WeightedOptions::default();
            backend.histogram_weighted_stream(
                &mut SliceSource::new(xs),
                &mut SliceSource::new(ws),
                spec,
                options,
                scale,
            )
        });
    }
}

#[test]
fn streamed_weights_must_pair_up_and_be_finite() {
    let spec = HistogramSpec::even(4, 0.0, 4.0);
    let xs = [1.0f32, 2.0, 3.0];
    let cpu = Backend::cpu();
    let scale = cpu.fixed_scale_stream(&mut SliceSource::new(&[1.0f64, 2.0, 3.0][..])).unwrap();
    let options = tally::WeightedOptions::default();
    for ws in [&[1.0f64, 2.0][..], &[1.0, 2.0, 3.0, 4.0]] {
        let r = cpu.histogram_weighted_stream(
            &mut SliceSource::new(&xs[..]),
            &mut SliceSource::new(ws),
            &spec,
            options,
            scale,
        );
        assert!(matches!(r, Err(Error::InvalidArgument(ref m)) if m.contains("one weight per sample")), "{r:?}");
    }
    let bad = cpu.fixed_scale_stream(&mut SliceSource::new(&[1.0f64, f64::NAN][..]));
    assert!(matches!(bad, Err(Error::InvalidArgument(_))), "{bad:?}");
    let floats = tally::WeightedOptions { accumulation: tally::Accumulation::FloatAtomics, ..options };
    let r = cpu.histogram_weighted_stream(
        &mut SliceSource::new(&xs[..]),
        &mut SliceSource::new(&[1.0f64; 3][..]),
        &spec,
        floats,
        scale,
    );
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
}

#[test]
fn chunks_that_split_interleaved_samples_are_refused() {
    use tally::histogram::stream_weighted::cpu_histogram_weighted_stream;
    let spec =
        HistogramSpec::even(16, 0.0, 256.0).with_channels(tally::Channels { interleave: 3, selected: vec![2, 0] });
    let xs: Vec<f32> = samples(300, 31);
    let ws = vec![1.0f64; xs.len()];
    let scale = Backend::cpu().fixed_scale_stream(&mut SliceSource::new(&ws[..])).unwrap();
    for chunk in [0, 1, 4, 100] {
        let r = cpu_histogram_stream(&mut SliceSource::new(&xs), &spec, layout::<f32>(chunk));
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "chunk {chunk}: {r:?}");
        let r = cpu_histogram_weighted_stream(
            &mut SliceSource::new(&xs),
            &mut SliceSource::new(&ws[..]),
            &spec,
            scale,
            layout::<f32>(chunk),
        );
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "chunk {chunk}: {r:?}");
    }
    // A reduction has no samples to split, but a chunk of no elements would end the stream at once.
    let r = cpu_reduce_stream(&mut SliceSource::new(&xs), ReduceOp::Sum, ReduceOptions::default(), layout::<f32>(0));
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
}
