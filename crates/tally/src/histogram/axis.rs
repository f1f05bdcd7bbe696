//! How a kernel bins one axis: the binning mode it is compiled for (policy) and the parameters
//! it reads (`AxisParams`, shared by every histogram kernel through `binning.cuh`). The rule
//! itself is stated once, in [`super::binning`]; this module only prepares its constants for
//! the device.

use super::binning::{int_bounds, BinRule};
use super::{Bins, HistogramSpec};
use crate::device::{DevPtr, DeviceBuffer, Stream};
use crate::error::Result;
use crate::sample::{DType, Sample};

crate::kernel_codes! {
    /// How a kernel turns a sample into a bin (`TALLY_BINNING`).
    pub enum Binning as "TALLY_BINNING" {
        /// A 256-entry table in shared memory (8-bit samples).
        Table8,
        /// Exact integer arithmetic in 64 bits.
        Integer,
        /// The f64 rule.
        Float,
        /// Binary search over custom edges.
        Edges,
        /// Exact integer arithmetic in 32 bits: samples and bounds share one 32-bit domain.
        Integer32,
    }
}

/// Whether samples of `dtype` and the bounds share one 32-bit domain (signed for u8, u16 and
/// i32; unsigned for u32), so that the kernel's wrap-around range test is exact.
fn fits32(dtype: DType, lower: i64, upper: i64) -> bool {
    match dtype {
        DType::U8 | DType::U16 | DType::I32 => lower >= i32::MIN as i64 && upper <= 1i64 << 31,
        DType::U32 => lower >= 0 && upper <= 1i64 << 32,
        _ => false,
    }
}

/// Whether every value of an 8- or 16-bit sample type lies inside integral bounds.
pub(crate) fn all_in_range(dtype: DType, bins: &Bins) -> bool {
    let top = match dtype {
        DType::U8 => 1i64 << 8,
        DType::U16 => 1i64 << 16,
        _ => return false,
    };
    int_bounds(bins).is_some_and(|b| b.lower <= 0 && b.upper >= top)
}

/// Integer binning with as many bins as values in range: the bin is the offset.
pub(crate) fn identity(binning: Binning, bins: &Bins) -> bool {
    matches!(binning, Binning::Integer | Binning::Integer32)
        && int_bounds(bins).is_some_and(|b| b.range == b.bins as u64)
}

/// The binning mode for samples of `dtype` under `bins`.
pub fn binning_for(dtype: DType, bins: &Bins) -> Binning {
    let integer = !dtype.is_float() && int_bounds(bins).is_some();
    if dtype == DType::U8 && !integer {
        // Arithmetic beats a table lookup (a shared-memory access per sample) where it is exact.
        Binning::Table8
    } else if matches!(bins, Bins::Edges(_)) {
        Binning::Edges
    } else if integer {
        let b = int_bounds(bins).expect("checked above");
        if fits32(dtype, b.lower, b.upper) {
            Binning::Integer32
        } else {
            Binning::Integer
        }
    } else {
        Binning::Float
    }
}

/// The binning modes a kernel may be compiled with for samples of `dtype`.
pub(crate) fn binnings_of(dtype: DType) -> &'static [Binning] {
    match dtype {
        DType::U8 => &[Binning::Table8, Binning::Integer32, Binning::Integer],
        DType::F32 | DType::F64 | DType::F16 | DType::BF16 => &[Binning::Float, Binning::Edges],
        DType::I64 => &[Binning::Integer, Binning::Float, Binning::Edges],
        _ => &[Binning::Integer32, Binning::Integer, Binning::Float, Binning::Edges],
    }
}

/// The smallest f32 that is >= v: for f32 samples, `x < v` exactly when `x < ceil_f32(v)`.
pub(crate) fn ceil_f32(v: f64) -> f32 {
    let f = v as f32;
    if (f as f64) < v {
        f.next_up()
    } else {
        f
    }
}

/// How far from an integer the kernel's f32 estimate of the bin must land to be trusted
/// (error bound of the estimate, times four); above 1/4 the estimate is never used; -1 where
/// the estimate is the rule itself ([`f32_estimate_is_exact`]): every in-range sample is sure.
pub(crate) fn f32_slack(lower: f64, upper: f64, bins: u32) -> f32 {
    if f32_estimate_is_exact(lower, upper, bins) {
        return -1.0;
    }
    let scale = bins as f64 / (upper - lower);
    let m = lower.abs().max(upper.abs());
    let eps = 2f64.powi(-24);
    let bound = 4.0 * (scale * eps * (lower.abs() + 2.0 * m) + bins as f64 * 2.0 * eps) + 2f64.powi(-40);
    if bound.is_finite() && bound < 0.25 && m < f32::MAX as f64 {
        bound as f32
    } else {
        2.0
    }
}

/// Whether the kernel's f32 estimate `(x - lower) * scale` is exactly the rule's quotient for
/// every f32 (or 16-bit float) sample x in range: `lower` 0 and bins of a power-of-two width
/// 2^k (so that scale is 2^-k in f32 as in f64), fewer than 2^22 bins. Then the estimate is
/// x * 2^-k, exact (or, below f32's normals, a quotient under 1 either way), and the rule's
/// `(x * bins) / (bins * 2^k)` is exact in f64 too (x * bins has at most 24 + 22 bits), so both
/// floor to the same bin, integers included: integer-valued floats over [0, bins) and the like
/// need no slack and no division.
pub(crate) fn f32_estimate_is_exact(lower: f64, upper: f64, bins: u32) -> bool {
    let width = upper / bins as f64;
    let power_of_two = width > 0.0 && width.is_normal() && width.to_bits() & ((1u64 << 52) - 1) == 0;
    let scale = bins as f64 / upper;
    lower == 0.0
        && bins < 1 << 22
        && power_of_two
        && width * bins as f64 == upper
        && (scale as f32) as f64 == scale
        && (scale as f32).is_normal()
        && (upper as f32) as f64 == upper
}

/// The same for the f64 estimate `((x - lower) * bins) * (1 / range)` against the division.
pub(crate) fn f64_slack(bins: u32) -> f64 {
    let bound = bins as f64 * 2f64.powi(-48) + 2f64.powi(-60);
    if bound < 0.25 {
        bound
    } else {
        2.0
    }
}

crate::kernel_params! {
    /// How one axis is binned, as `binning.cuh`'s `setup` reads it.
    pub(crate) struct AxisParams as "AxisParams" {
        lut: DevPtr<i32>,
        edges: DevPtr<f64>,
        lower_i: i64,
        upper_i: i64,
        range_i: u64,
        lower: f64,
        upper: f64,
        range: f64,
        bins_f: f64,
        scale_d: f64,
        inv_range: f64,
        slack_d: f64,
        scale_f: f32,
        lo32: f32,
        hi32: f32,
        lower_f: f32,
        slack_f: f32,
        bins: u32,
        num_edges: u32,
        pad: u32,
    }
}

/// One axis on the device: its parameters and the table or edges they point to (owned here,
/// so that they live as long as the plan that launches with them).
pub(crate) struct DeviceAxis {
    pub(crate) params: AxisParams,
    _table: Option<DeviceBuffer<i32>>,
    _edges: Option<DeviceBuffer<f64>>,
}

impl DeviceAxis {
    /// The parameters of `bins` binned by `binning` for samples of `T`; uploads a table or
    /// edges where the mode reads one.
    pub(crate) fn new<T: Sample>(stream: &Stream, bins: &Bins, binning: Binning) -> Result<DeviceAxis> {
        let mut a = AxisParams { bins: bins.count() as u32, ..Default::default() };
        let (mut table, mut edges) = (None, None);
        match binning {
            Binning::Table8 => {
                let spec = HistogramSpec { bins: bins.clone(), channels: Default::default() };
                let t = stream.upload(&BinRule::new::<T>(&spec).lut8(), "bin table")?;
                a.lut = t.view().ptr(stream.cuda_stream());
                table = Some(t);
            }
            Binning::Integer | Binning::Integer32 => {
                let b = int_bounds(bins).expect("integer binning has integer bounds");
                a.lower_i = b.lower;
                a.upper_i = b.upper;
                a.range_i = b.range;
                a.scale_f = (b.bins as f64 / b.range as f64) as f32;
                a.scale_d = b.bins as f64 / b.range as f64;
            }
            Binning::Float => {
                let Bins::Even { bins, lower, upper } = *bins else { unreachable!("the f64 rule is for even bins") };
                a.lower = lower;
                a.upper = upper;
                a.range = upper - lower;
                a.bins_f = bins as f64;
                a.inv_range = 1.0 / (upper - lower);
                a.slack_d = f64_slack(bins);
                a.lo32 = ceil_f32(lower);
                a.hi32 = ceil_f32(upper);
                a.lower_f = lower as f32;
                a.scale_f = (bins as f64 / (upper - lower)) as f32;
                a.slack_f = f32_slack(lower, upper, bins);
            }
            Binning::Edges => {
                let Bins::Edges(e) = bins else { unreachable!("edge binning has edges") };
                let buf = stream.upload(e, "bin edges")?;
                a.edges = buf.view().ptr(stream.cuda_stream());
                a.num_edges = e.len() as u32;
                edges = Some(buf);
            }
        }
        Ok(DeviceAxis { params: a, _table: table, _edges: edges })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::binning::BinRule;

    #[test]
    fn the_f32_estimate_is_exact_only_from_zero_over_power_of_two_bins() {
        for (lower, upper, bins) in [(0.0, 256.0, 256), (0.0, 4096.0, 4096), (0.0, 1.0, 256), (-0.0, 64.0, 16)] {
            assert!(f32_estimate_is_exact(lower, upper, bins), "{lower} {upper} {bins}");
            assert_eq!(f32_slack(lower, upper, bins), -1.0);
        }
        for (lower, upper, bins) in [
            (0.5, 256.5, 256),
            (0.0, 255.0, 256),
            (0.0, 256.0, 255),
            (0.0, 3.0, 2),
            (0.0, 4194304.0, 1 << 22),
            (1.0, 2.0, 4),
        ] {
            assert!(!f32_estimate_is_exact(lower, upper, bins), "{lower} {upper} {bins}");
            assert!(f32_slack(lower, upper, bins) >= 0.0);
        }
    }

    /// Where the estimate is exact, the kernel's estimate (f32: `(x - lower_f) * scale_f`,
    /// floored) is the rule's bin for every in-range sample tried: every integer and half
    /// integer, the ulps around every edge, and random bits in range.
    #[test]
    fn an_exact_f32_estimate_bins_as_the_rule() {
        for (upper, bins) in [(256.0, 256u32), (4096.0, 4096), (1.0, 256), (65536.0, 1024), (0.25, 4096)] {
            let spec = HistogramSpec::even(bins, 0.0, upper);
            assert!(f32_estimate_is_exact(0.0, upper, bins));
            let rule = BinRule::new::<f32>(&spec);
            let (lower_f, scale_f) = (0.0f32, (bins as f64 / upper) as f32);
            let estimate = |x: f32| ((x - lower_f) * scale_f).floor() as i32;
            let mut xs: Vec<f32> = (0..2 * bins).map(|k| (k as f64 * upper / (2 * bins) as f64) as f32).collect();
            for k in 0..=bins {
                let e = (k as f64 * upper / bins as f64) as f32;
                let mut v = e;
                for _ in 0..3 {
                    v = f32::from_bits(v.to_bits().saturating_sub(1));
                }
                for _ in 0..7 {
                    xs.push(v);
                    v = f32::from_bits(v.to_bits() + 1);
                }
            }
            let mut r = 0x9e37_79b9_7f4a_7c15u64;
            for _ in 0..200_000 {
                r = crate::data::splitmix64(r);
                xs.push(f32::from_bits((r >> 32) as u32 & 0x7fff_ffff));
            }
            for x in xs.into_iter().filter(|&x| (x as f64) >= 0.0 && (x as f64) < upper) {
                assert_eq!(estimate(x), rule.bin(x), "x = {x:e} over [0, {upper}) in {bins}");
            }
        }
    }
}
