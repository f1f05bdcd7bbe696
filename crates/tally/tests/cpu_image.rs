//! Image histograms on the CPU backend against the sequential reference: every channel type,
//! channel count, layout and brightness rule, on bins that the brightness meets at their edges.

use tally::histogram::image::reference;
use tally::{Backend, Brightness, HistogramSpec, Image, Strategy};

mod image_common;
use image_common::*;

fn check_type<T: ImageSample>() {
    for (k, image) in images(&[(0, 0), (1, 1), (3, 5), (37, 41), (300, 301)]).into_iter().enumerate() {
        let values = pixels::<T>(image.pixels() * image.channels as usize, k as u64);
        for spec in specs::<T>() {
            let want = reference::image_histogram(&values, &image, &spec);
            let got = Backend::cpu().image_histogram(&values, &image, &spec, Strategy::Auto).unwrap();
            assert!(got.same_counts(&want), "{} {image:?} {spec:?}", T::DTYPE);
            assert_eq!(got.total(), image.pixels() as u64);
            assert_eq!(got.backend, "cpu");
            // The brightness values themselves, binned as f64 samples: the same counts.
            let values = tally::histogram::image::cpu::brightness_values(&values, &image);
            let by_values = Backend::cpu().histogram(&values, &spec, Strategy::Auto).unwrap();
            assert!(by_values.same_counts(&want), "values: {} {image:?} {spec:?}", T::DTYPE);
        }
    }
}

#[test]
fn cpu_image_histograms_match_the_reference() {
    check_type::<u8>();
    check_type::<u16>();
    check_type::<f32>();
    check_type::<f64>();
}

/// The rule by hand: an RGB pixel's mean is (r + g + b) / 3 before binning (so 1, 1, 2 is 4/3,
/// in bin 1 of one-wide bins, where a rounded mean would say 1 too but 2, 2, 1 is 5/3, still bin
/// 1, not 2); RGBA leaves alpha out; a NaN channel counts as NaN; planar and interleaved layouts
/// of the same pixels count the same.
#[test]
fn the_brightness_rule_by_hand() {
    let spec = HistogramSpec::even(4, 0.0, 4.0);
    let rgb = [1u8, 1, 2, 2, 2, 1, 3, 3, 3, 9, 9, 9];
    let h = Backend::cpu().image_histogram(&rgb, &Image::hwc(2, 2, 3), &spec, Strategy::Auto).unwrap();
    assert_eq!((h.counts[0].clone(), h.above[0]), (vec![0, 2, 0, 1], 1));
    let planar = [1u8, 2, 3, 9, 1, 2, 3, 9, 2, 1, 3, 9];
    let p = Backend::cpu().image_histogram(&planar, &Image::chw(2, 2, 3), &spec, Strategy::Auto).unwrap();
    assert!(p.same_counts(&h));
    let rgba = [3u8, 3, 3, 250];
    let h = Backend::cpu().image_histogram(&rgba, &Image::hwc(1, 1, 4), &spec, Strategy::Auto).unwrap();
    assert_eq!(h.counts[0], vec![0, 0, 0, 1]);
    let h =
        Backend::cpu().image_histogram(&[0.5f32, f32::NAN, 0.5], &Image::hwc(1, 1, 3), &spec, Strategy::Auto).unwrap();
    assert_eq!(h.nan[0], 1);
    let luma = Image::hwc(1, 1, 3).with_brightness(Brightness::rec709());
    let h = Backend::cpu().image_histogram(&[0u8, 0, 40], &luma, &spec, Strategy::Auto).unwrap();
    assert_eq!(h.counts[0], vec![0, 0, 1, 0], "0.0722 * 40 = 2.888");
    // A wrong length is an error that gives the sizes.
    let e = Backend::cpu().image_histogram(&rgb[..11], &Image::hwc(2, 2, 3), &spec, Strategy::Auto).unwrap_err();
    assert!(e.to_string().contains("needs 12 values, but 11"), "{e}");
}
