//! Image histograms on the GPU against the sequential reference: every channel type, channel
//! count, layout and brightness rule, both strategies, misaligned pixels, an image of 2^22
//! pixels, bins past one block's shared memory. Without a GPU each test prints a line and
//! returns; with TALLY_REQUIRE_GPU=1 that is a failure. Counters are poisoned before every launch.

use std::sync::Arc;
use tally::device::CudaDevice;
use tally::histogram::image::reference;
use tally::{Backend, HistogramSpec, Image, ImageLayout, Strategy};

mod common;
use common::{assert_same_counts, gpu};
mod image_common;
use image_common::*;

/// The histogram of `values[offset..]` as `image` through a plan, counters poisoned first,
/// compared bin for bin with the reference; the strategy that ran.
fn checked<T: ImageSample>(
    dev: &Arc<CudaDevice>,
    values: &[T],
    offset: usize,
    image: &Image,
    spec: &HistogramSpec,
    strategy: Strategy,
) -> Strategy {
    let stream = dev.stream();
    let mut padded = vec![T::default(); offset];
    padded.extend_from_slice(values);
    let buf = stream.upload(&padded, "pixels").unwrap();
    let all = buf.view();
    let view = all.slice(offset..).unwrap();
    let mut plan = tally::histogram::ImagePlan::<T>::new(dev, image, spec, strategy).unwrap();
    plan.fill_outputs(stream, 0xA5).unwrap();
    plan.launch(stream, &view).unwrap();
    let got = plan.read(stream).unwrap();
    let want = reference::image_histogram(values, image, spec);
    assert_same_counts(&got, &want, &format!("{} offset {offset} {image:?} {spec:?} {strategy}", T::DTYPE));
    got.strategy
}

/// TALLY_SMALL=1 (under compute-sanitizer): the small images only.
fn small() -> bool {
    std::env::var("TALLY_SMALL").as_deref() == Ok("1")
}

fn check_type<T: ImageSample>(dev: &Arc<CudaDevice>) {
    let sizes: &[(usize, usize)] =
        if small() { &[(0, 0), (1, 1), (3, 5), (37, 41)] } else { &[(0, 0), (1, 1), (3, 5), (37, 41), (300, 301)] };
    for (k, image) in images(sizes).into_iter().enumerate() {
        let values = pixels::<T>(image.pixels() * image.channels as usize, k as u64 + 100);
        for spec in specs::<T>() {
            assert_eq!(checked(dev, &values, 0, &image, &spec, Strategy::Auto), Strategy::BlockShared);
            assert_eq!(checked(dev, &values, 0, &image, &spec, Strategy::GlobalAtomic), Strategy::GlobalAtomic);
            checked(dev, &values, 1, &image, &spec, Strategy::Auto);
        }
    }
}

#[test]
fn cuda_image_histograms_match_the_reference() {
    let Some(dev) = gpu() else { return };
    check_type::<u8>(&dev);
    check_type::<u16>(&dev);
    check_type::<f32>(&dev);
    check_type::<f64>(&dev);
}

/// A large image (every block strides over many pixels), bins past one block's shared memory
/// (auto counts in global atomics), and the library call from host memory agreeing with the CPU
/// backend bit for bit.
#[test]
fn cuda_image_large_and_many_bins() {
    let Some(dev) = gpu() else { return };
    let (h, w) = if small() { (64, 65) } else { (2048, 2049) };
    let image = Image::hwc(h, w, 4);
    let values = pixels::<u8>(image.pixels() * 4, 7);
    let spec = HistogramSpec::even(256, 0.0, 256.0);
    checked(&dev, &values, 0, &image, &spec, Strategy::Auto);
    let planar = Image { layout: ImageLayout::Chw, ..image.clone() };
    checked(&dev, &values, 3, &planar, &spec, Strategy::Auto);
    let many = HistogramSpec::even(200_000, 0.0, 1.0);
    let (h, w) = if small() { (50, 49) } else { (1000, 999) };
    let floats = pixels::<f32>(h * w * 3, 8);
    let image = Image::hwc(h, w, 3);
    assert_eq!(checked(&dev, &floats, 0, &image, &many, Strategy::Auto), Strategy::GlobalAtomic);
    let gpu = Backend::Cuda(dev.clone()).image_histogram(&floats, &image, &many, Strategy::Auto).unwrap();
    let cpu = Backend::cpu().image_histogram(&floats, &image, &many, Strategy::Auto).unwrap();
    assert!(gpu.same_counts(&cpu));
    assert_eq!(gpu.backend, "cuda");
    // Bad input is an error before anything runs.
    let e = Backend::Cuda(dev.clone()).image_histogram(&floats[1..], &image, &many, Strategy::Auto).unwrap_err();
    assert!(e.to_string().contains("values, but"), "{e}");
    let e = Backend::Cuda(dev).image_histogram(&floats, &image, &many, Strategy::ThreadPrivate).unwrap_err();
    assert!(e.to_string().contains("CPU backend"), "{e}");
}
