//! A caller's device memory and stream taken by raw handle (`ExternalBuffer::from_raw_parts`,
//! `Stream::from_raw`, `CudaDevice::with_stream`, `CudaDevice::order_with_caller_stream`), as
//! language bindings use them: read and written in place, never freed, work ordered on or with
//! the caller's stream, bad addresses refused.

mod common;

use cudarc::driver::DevicePtr;
use tally::{Backend, Error, ExternalBuffer, ScanOp, ScanOptions, ScanPlan, Stream};

/// The raw device address of a tally buffer, as another library would hand it over.
fn address<T>(b: &tally::DeviceBuffer<T>, stream: &Stream) -> u64 {
    let (address, _sync) = b.as_cuda_slice().device_ptr(stream.cuda_stream());
    address
}

fn values(n: usize) -> Vec<i32> {
    (0..n as i64).map(|i| ((i * 7919) % 2001 - 1000) as i32).collect()
}

#[test]
fn external_memory_is_read_in_place_at_every_offset() {
    let Some(dev) = common::gpu() else { return };
    let gpu = Backend::Cuda(dev.clone());
    for n in [1usize, 3, 4095, 4096, 4097, 1 << 20] {
        let xs = values(n);
        let buf = dev.stream().upload(&xs, "test input").unwrap();
        for offset in [0usize, 1, 2, 3].into_iter().filter(|&k| k < n) {
            let at = address(&buf, dev.stream()) + 4 * offset as u64;
            // SAFETY: `buf` holds n i32s and outlives the view; the calls below synchronise.
            let ext = unsafe { ExternalBuffer::<i32>::from_raw_parts(dev.stream(), at, n - offset) }.unwrap();
            let want: i64 = xs[offset..].iter().map(|&x| x as i64).sum();
            assert_eq!(gpu.sum(&ext).unwrap(), want as i128, "n {n} offset {offset}");
            assert_eq!(gpu.argmax(&ext).unwrap(), Backend::cpu().argmax(&xs[offset..]).unwrap());
        }
        // The wrappers are gone and freed nothing: the buffer still reads back.
        assert_eq!(dev.stream().download(&buf.view()).unwrap(), xs);
    }
}

#[test]
fn external_output_is_written_in_place() {
    let Some(dev) = common::gpu() else { return };
    let stream = dev.stream();
    for n in [1usize, 4097, 3 << 20] {
        let xs = values(n);
        let input = stream.upload(&xs, "test input").unwrap();
        let out = stream.upload(&vec![i64::MIN + 7; n + 1], "poisoned output").unwrap();
        // SAFETY: `input` and `out` outlive the wrappers; `plan.read` synchronises the stream.
        let (x, mut y) = unsafe {
            (
                ExternalBuffer::<i32>::from_raw_parts(stream, address(&input, stream), n).unwrap(),
                ExternalBuffer::<i64>::from_raw_parts(stream, address(&out, stream), n).unwrap(),
            )
        };
        let mut plan = ScanPlan::<i32, i64>::new(&dev, ScanOp::Sum, ScanOptions::default(), n).unwrap();
        plan.launch(stream, &x.view(), &mut y.view_mut()).unwrap();
        plan.read(stream).unwrap();
        drop((x, y));
        let got = stream.download(&out.view()).unwrap();
        assert_eq!(&got[..n], &Backend::cpu().cumsum_vec(&xs).unwrap()[..], "n {n}");
        assert_eq!(got[n], i64::MIN + 7, "the element past the output is untouched");
    }
}

#[test]
fn bad_addresses_are_refused() {
    let Some(dev) = common::gpu() else { return };
    let stream = dev.stream();
    let buf = stream.upload(&[1i32, 2, 3, 4], "test input").unwrap();
    let at = address(&buf, stream);
    let host = [0i32; 16];
    let refused = |address: u64, len: usize| {
        // SAFETY: each of these is refused before any use (the test asserts so).
        match unsafe { ExternalBuffer::<i32>::from_raw_parts(stream, address, len) } {
            Err(Error::InvalidArgument(m)) => m,
            other => panic!("{address:#x} x {len} was not refused: {other:?}"),
        }
    };
    assert!(refused(at + 1, 2).contains("aligned"));
    assert!(refused(0, 4).contains("null"));
    assert!(refused(host.as_ptr() as u64, 4).contains("host"));
    // An empty buffer may have any address; it is never read.
    // SAFETY: no element is read.
    let empty = unsafe { ExternalBuffer::<i32>::from_raw_parts(stream, 0, 0) }.unwrap();
    assert_eq!(Backend::Cuda(dev.clone()).sum(&empty).unwrap(), 0);
}

#[test]
fn work_runs_on_the_callers_stream() {
    let Some(dev) = common::gpu() else { return };
    let theirs = dev.cuda_context().new_stream().unwrap();
    // SAFETY: `theirs` is a stream of the device's context and outlives `on_theirs`.
    let on_theirs = dev.with_stream(unsafe { Stream::from_raw(&dev, theirs.cu_stream()) }).unwrap();
    assert_eq!(on_theirs.stream().cuda_stream().cu_stream(), theirs.cu_stream());
    let n = 1 << 22;
    let mut ones = dev.stream().upload(&vec![1i32; n], "ones").unwrap().into_cuda_slice();
    dev.stream().synchronize("the upload").unwrap();
    // Queued on the caller's stream and not waited for: tally's reduction on the same stream
    // must run after it.
    theirs.memset_zeros(&mut ones).unwrap();
    let (at, _sync) = ones.device_ptr(&theirs);
    // SAFETY: `ones` outlives the view; the reduction synchronises `theirs`.
    let ext = unsafe { ExternalBuffer::<i32>::from_raw_parts(on_theirs.stream(), at, n) }.unwrap();
    assert_eq!(Backend::Cuda(on_theirs.clone()).sum(&ext).unwrap(), 0);
}

#[test]
fn work_is_ordered_with_a_callers_stream_that_is_destroyed_after_the_call() {
    let Some(dev) = common::gpu() else { return };
    // tally's own stream, as the Python binding runs every call on a caller's side stream.
    let ours = dev.with_stream(dev.new_stream().unwrap()).unwrap();
    let s = ours.stream();
    let n = 1 << 24;
    let ones = s.upload(&vec![1i32; n], "ones").unwrap().into_cuda_slice();
    let mut data = s.alloc_zeros::<i32>(n, "data").unwrap().into_cuda_slice();
    let mut copied = s.alloc_zeros::<i64>(n, "the caller's copy").unwrap().into_cuda_slice();
    s.synchronize("the uploads").unwrap();
    let want: Vec<i64> = (1..=n as i64).collect();
    for round in 0..3 {
        let theirs = dev.cuda_context().new_stream().unwrap();
        // The caller's stream is busy for a while and then writes the ones tally must read.
        for _ in 0..16 {
            theirs.memset_zeros(&mut data).unwrap();
            theirs.memcpy_dtod(&ones, &mut data).unwrap();
        }
        // SAFETY: `theirs` is a stream of the device's context and lives past `finish`.
        let order = unsafe { ours.order_with_caller_stream(theirs.cu_stream()) }.unwrap();
        let at = data.device_ptr(&theirs).0;
        // SAFETY: `data` outlives the view, and the work on it is ordered by `order`.
        let x = unsafe { ExternalBuffer::<i32>::from_raw_parts(s, at, n) }.unwrap();
        let mut out = s.alloc::<i64>(n, "running sums").unwrap();
        let mut plan = ScanPlan::<i32, i64>::new(&ours, ScanOp::Sum, ScanOptions::default(), n).unwrap();
        plan.launch(s, &x.view(), &mut out.view_mut()).unwrap();
        order.finish().unwrap();
        // The caller's stream after the call, never waiting on tally's: the sums are complete.
        theirs.memcpy_dtod(out.as_cuda_slice(), &mut copied).unwrap();
        let got = theirs.clone_dtoh(&copied).unwrap();
        theirs.synchronize().unwrap();
        assert!(got == want, "round {round}: the caller's copy of the scan differs");
        // The caller destroys its stream; the plan and the output are freed afterwards, on
        // tally's stream, as a binding's kept plans are.
        drop(theirs);
        drop((x, plan, out));
    }
    assert_eq!(Backend::Cuda(ours.clone()).sum(&ones).unwrap(), n as i128);
}

#[test]
fn histogram_counters_copied_into_external_memory() {
    use tally::histogram::{reference, HistogramPlan};
    use tally::{HistogramSpec, Strategy};
    let Some(dev) = common::gpu() else { return };
    let stream = dev.stream();
    let spec = HistogramSpec::even(256, 0.0, 250.0);
    for n in [0usize, 1, 4097, 3 << 20] {
        let xs: Vec<u8> = common::draw(n, n as u64 + 1, |r| (r.next() % 256) as u8);
        let input = stream.upload(&xs, "test samples").unwrap();
        let want = reference::histogram(&xs, &spec);
        for strategy in [Strategy::Auto, Strategy::GlobalAtomic, Strategy::BlockShared] {
            let mut plan = HistogramPlan::new(&dev, &input.view(), &spec, strategy, dev.tuning()).unwrap();
            let bytes = 256 * plan.counter_bytes();
            assert_eq!(plan.counter_bytes(), 4, "fewer than 2^32 samples count in 32 bits");
            let out = stream.upload(&vec![0xA5u8; bytes + 4], "poisoned counts").unwrap();
            // SAFETY: `out` outlives the wrapper; the download below synchronises the stream.
            let mut ext =
                unsafe { ExternalBuffer::<u8>::from_raw_parts(stream, address(&out, stream), bytes) }.unwrap();
            for _ in 0..2 {
                // A second launch of the plan gives the same counts: the counters start from zero.
                plan.launch(stream, &input.view()).unwrap();
                plan.copy_counts(stream, &mut ext.view_mut()).unwrap();
                assert_eq!(plan.read_outliers(stream).unwrap(), vec![want.below[0], want.above[0], want.nan[0]]);
                let got = stream.download(&out.view()).unwrap();
                let counts: Vec<u64> =
                    got[..bytes].chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()) as u64).collect();
                assert_eq!(counts, want.counts[0], "n {n} {strategy}");
                assert_eq!(&got[bytes..], &[0xA5; 4], "nothing written past the counters");
            }
            // SAFETY: as above, one byte short of the counters.
            let mut short =
                unsafe { ExternalBuffer::<u8>::from_raw_parts(stream, address(&out, stream), bytes - 1) }.unwrap();
            assert!(matches!(plan.copy_counts(stream, &mut short.view_mut()), Err(Error::InvalidArgument(_))));
            // Widened to 64 bits, as numpy and PyTorch count: every word whole, nothing past them.
            let wide = stream.upload(&vec![u64::MAX; 256 + 1], "poisoned wide counts").unwrap();
            // SAFETY: `wide` outlives the wrapper; the download below synchronises the stream.
            let mut ext =
                unsafe { ExternalBuffer::<u64>::from_raw_parts(stream, address(&wide, stream), 256) }.unwrap();
            plan.copy_counts_u64(stream, &mut ext.view_mut()).unwrap();
            let got = stream.download(&wide.view()).unwrap();
            assert_eq!(&got[..256], &want.counts[0][..], "n {n} {strategy}: widened counts");
            assert_eq!(got[256], u64::MAX, "nothing written past the widened counts");
            // SAFETY: as above, one counter short.
            let mut short =
                unsafe { ExternalBuffer::<u64>::from_raw_parts(stream, address(&wide, stream), 255) }.unwrap();
            assert!(matches!(plan.copy_counts_u64(stream, &mut short.view_mut()), Err(Error::InvalidArgument(_))));
        }
    }
}

#[test]
fn device_weights_scale_on_the_device_and_refuse_non_finite_weights() {
    use tally::{HistogramSpec, WeightedOptions};
    let Some(dev) = common::gpu() else { return };
    let gpu = Backend::Cuda(dev.clone());
    let spec = HistogramSpec::even(64, 0.0, 64.0);
    let n = 1 << 20;
    let xs: Vec<u32> = common::draw(n, 3, |r| (r.next() % 70) as u32);
    let ws: Vec<f64> = common::draw(n, 4, |r| (r.next() % 1000) as f64 / 7.0 - 70.0);
    let (x, w) = (dev.stream().upload(&xs, "samples").unwrap(), dev.stream().upload(&ws, "weights").unwrap());
    let got = gpu.histogram_weighted(&x, &w, &spec, WeightedOptions::default()).unwrap();
    let want = Backend::cpu().histogram_weighted(&xs[..], &ws[..], &spec, WeightedOptions::default()).unwrap();
    assert!(got.same_bits(&want), "device weights: the same fixed-point scale and sums as the CPU");
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let mut wb = ws.clone();
        wb[777_777] = bad;
        let w = dev.stream().upload(&wb, "weights").unwrap();
        match gpu.histogram_weighted(&x, &w, &spec, WeightedOptions::default()) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("777777"), "{m}"),
            other => panic!("a {bad} weight: {:?}", other.map(|h| h.sums)),
        }
    }
}

#[test]
fn result_words_are_read_back_through_page_locked_memory() {
    let Some(dev) = common::gpu() else { return };
    let stream = dev.stream();
    let mut back = stream.read_back(3).unwrap();
    assert_eq!(back.wait().unwrap(), &[0, 0, 0], "nothing queued yet: zeros");
    let mut words = stream.upload(&[1u64, 2, 3], "test words").unwrap();
    for round in 0..3u64 {
        let want: Vec<u64> = (0..3).map(|i| i * 7 + round + (u64::MAX - 20)).collect();
        stream.copy_to_device(&want, &mut words.view_mut()).unwrap();
        back.queue(stream, &words.view()).unwrap();
        // Work queued after the copy neither delays nor changes what it read.
        stream.memset_zeros(&mut words.view_mut()).unwrap();
        assert_eq!(back.wait().unwrap(), &want[..], "round {round}");
    }
    let short = stream.upload(&[1u64, 2], "short words").unwrap();
    assert!(matches!(back.queue(stream, &short.view()), Err(Error::InvalidArgument(_))));
    // Given back to the stream's pool and lent again: zeros until a copy lands.
    drop(back);
    let mut again = stream.read_back(3).unwrap();
    assert_eq!(again.wait().unwrap(), &[0, 0, 0], "kept words are zeroed when lent again");
    // Copies queued on two streams: the words hold the later one's.
    let other = dev.with_stream(dev.new_stream().unwrap()).unwrap();
    let first: Vec<u64> = vec![5, 6, 7];
    stream.copy_to_device(&first, &mut words.view_mut()).unwrap();
    again.queue(stream, &words.view()).unwrap();
    let second = other.stream().upload(&[8u64, 9, 10], "other words").unwrap();
    again.queue(other.stream(), &second.view()).unwrap();
    assert_eq!(again.wait().unwrap(), &[8, 9, 10]);
}
