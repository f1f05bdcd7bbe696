//! The skew probe of 2-D histograms: the keys of pairs spread over the input, binned on the
//! device by the kernel's own rule (`tally_general_probe`), counted on the host. `auto` looks at
//! the share of the most frequent bin to choose between the partition and global-l2, as the 1-D
//! histogram's probe does.

use super::{GeneralInput, GeneralParams, GeneralVariant, FAMILY, GENERAL_BLOCK_THREADS};
use crate::device::{CudaDevice, DevPtr, LaunchShape};
use crate::error::Result;
use crate::histogram::policy::PROBE_SAMPLES;
use crate::sample::Sample;

/// Share of the probed samples (pairs, at `j * n / k`) that fall in the most frequent bin of
/// `width`; `params` holds the plan's axes and bins, `variant` any specialisation of them (its
/// strategy does not matter to the probe).
pub(super) fn top_bin_fraction<T: Sample, W>(
    dev: &CudaDevice,
    variant: &GeneralVariant,
    params: &GeneralParams,
    input: &GeneralInput<'_, T, W>,
    width: usize,
) -> Result<f64> {
    input.validate_pairs()?;
    let n = input.len();
    let k = (n as u64).min(PROBE_SAMPLES as u64) as u32;
    if k == 0 {
        return Ok(0.0);
    }
    let stream = dev.stream();
    let kernel = dev.kernel::<GeneralParams>(&FAMILY, &variant.defines(), "tally_general_probe", 0)?;
    let mut keys = stream.alloc::<i32>(k as usize, "skew probe")?;
    let cs = stream.cuda_stream();
    let x = input.x.ptr(cs);
    let (y, stride) = match &input.y {
        Some(y) => (y.ptr(cs), 1),
        None => (x.offset(1), 2),
    };
    let p = GeneralParams {
        x: x.cast(),
        y: y.cast(),
        stride,
        n: n as u64,
        probe: keys.view_mut().ptr_mut(cs),
        probe_k: k,
        weights: DevPtr::default(),
        ..*params
    };
    let threads = GENERAL_BLOCK_THREADS;
    stream.launch(&kernel, LaunchShape::new(k.div_ceil(threads), threads, 0), &p)?;
    let keys = stream.download(&keys.view())?;
    Ok(top_share(&keys, width))
}

/// Share of `keys` in the most frequent one below `width` (outlier keys are not bins).
fn top_share(keys: &[i32], width: usize) -> f64 {
    let mut freq = std::collections::HashMap::<i32, u32>::new();
    for &key in keys.iter().filter(|&&key| key >= 0 && (key as usize) < width) {
        *freq.entry(key).or_default() += 1;
    }
    freq.values().max().map_or(0.0, |&c| c as f64 / keys.len().max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::top_share;

    #[test]
    fn the_top_share_counts_bins_only() {
        assert_eq!(top_share(&[], 4), 0.0);
        assert_eq!(top_share(&[1, 2, 1, 3], 4), 0.5);
        // Outlier keys (width and past it) hold no bin, however many.
        assert_eq!(top_share(&[4, 4, 4, 0], 4), 0.25);
        assert_eq!(top_share(&[5, 6, 7, 8], 4), 0.0);
    }
}
