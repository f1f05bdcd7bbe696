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
/// (auto counts in global atomics; u8 means with their table of sums, and f32), and the library call from host memory agreeing with the CPU
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
    // u8 means take their bin from a table of channel sums: with many bins, global atomics.
    let fine = HistogramSpec::even(200_000, 0.0, 256.0);
    assert_eq!(checked(&dev, &values, 0, &planar, &fine, Strategy::Auto), Strategy::GlobalAtomic);
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

/// Pixels whose brightness sits between what the rule's operations give and what a fused
/// multiply-add, another order of the sum, or a multiplication by 1/3 for the division would
/// give, with a bin edge between the two: the GPU must land where the rule does.
#[test]
fn cuda_image_rounding_is_the_rule() {
    let Some(dev) = gpu() else { return };
    // (pixel, image, the rule's brightness, another evaluation's brightness); the edge between
    // the two bins is the larger of the two values.
    let mut cases: Vec<(Vec<f64>, Image, f64, f64)> = Vec::new();
    let weighted = Image::hwc(1, 1, 2).with_brightness(tally::Brightness::Weighted(vec![0.1, 1.0]));
    cases.push((vec![3.0, -0.3], weighted, 0.1 * 3.0 + -0.3, 0.1f64.mul_add(3.0, -0.3)));
    cases.push((vec![0.1, 0.2, 0.3], Image::hwc(1, 1, 3), ((0.1 + 0.2) + 0.3) / 3.0, (0.1 + (0.2 + 0.3)) / 3.0));
    let s = (1..1000).map(|k| k as f64 * 0.1).find(|s| s / 3.0 != s * (1.0 / 3.0)).expect("a sum that differs");
    cases.push((vec![s, 0.0, 0.0], Image::hwc(1, 1, 3), s / 3.0, s * (1.0 / 3.0)));
    for (pixel, image, rule, other) in cases {
        assert_ne!(rule, other, "the case must tell the two apart");
        let (lo, hi) = (rule.min(other), rule.max(other));
        let spec =
            HistogramSpec { bins: tally::Bins::Edges(vec![lo - 1.0, hi, hi + 1.0]), channels: Default::default() };
        let want_bin = usize::from(rule > other);
        for strategy in [Strategy::Auto, Strategy::GlobalAtomic] {
            checked(&dev, &pixel, 0, &image, &spec, strategy);
            let h = Backend::Cuda(dev.clone()).image_histogram(&pixel, &image, &spec, strategy).unwrap();
            assert_eq!(h.counts[0][want_bin], 1, "{pixel:?} {image:?}: rule {rule:e}, other {other:e}");
        }
    }
}
