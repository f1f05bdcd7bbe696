//! The types a scan reads, writes and keys by: every reduction element type as input and
//! output, the 64-bit outputs of integer sums (numpy's `cumsum` rule), the f32 outputs of the
//! 16-bit floats (their accumulator type, as in CUB and PyTorch), and integer keys.

use crate::reduce::ReduceElement;
use cudarc::driver::DeviceRepr;

/// A type a scan writes and accumulates in: every [`ReduceElement`].
pub trait ScanValue: ReduceElement {
    /// The largest value (+inf for floats): the identity of min.
    const HIGHEST: Self;
    /// The smallest value (-inf for floats): the identity of max.
    const LOWEST: Self;
    /// Zero: the identity of sum.
    const ZERO: Self;
    /// `a + b`, wrapping for integers (two's complement), IEEE for floats.
    fn add(self, b: Self) -> Self;
    /// Whether `before + x == after` (wrapped) went past the type's range: the overflow rule of
    /// 64-bit integer sums (false for every other type, which is not checked).
    fn sum_overflowed(before: Self, x: Self, after: Self) -> bool;
    /// Whether a sum into this type is checked for overflow (i64 and u64).
    const CHECKED: bool;
}

macro_rules! int_value {
    ($($t:ty: $checked:expr),*) => {$(
        impl ScanValue for $t {
            const HIGHEST: Self = <$t>::MAX;
            const LOWEST: Self = <$t>::MIN;
            const ZERO: Self = 0;
            #[inline(always)]
            fn add(self, b: Self) -> Self {
                self.wrapping_add(b)
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn sum_overflowed(before: Self, x: Self, after: Self) -> bool {
                $checked && ((x >= 0) != (after >= before))
            }
            const CHECKED: bool = $checked;
        }
    )*};
}
int_value!(u8: false, i8: false, u16: false, i16: false, u32: false, i32: false, u64: true, i64: true);

macro_rules! float_value {
    ($($t:ty),*) => {$(
        impl ScanValue for $t {
            const HIGHEST: Self = <$t>::INFINITY;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            // +0.0: all bits clear in every float format.
            const ZERO: Self = <$t>::from_bits(0);
            #[inline(always)]
            fn add(self, b: Self) -> Self {
                self + b
            }
            #[inline(always)]
            fn sum_overflowed(_: Self, _: Self, _: Self) -> bool {
                false
            }
            const CHECKED: bool = false;
        }
    )*};
}
// The 16-bit floats are values too (keys, the identities of reduce-by-key), but scans read
// them into f32 (see [`ScanElement`]).
float_value!(f32, f64, half::f16, half::bf16);

/// The 16-bit floats scan into f32 (sums, minima and maxima).
macro_rules! half_value {
    ($($t:ty),*) => {$(
        impl ScanInto<f32> for $t {
            #[inline(always)]
            fn convert(self) -> f32 {
                self.to_f32()
            }
        }
        impl ScanElement for $t {
            type Wide = f32;
            type Extreme = f32;
        }
    )*};
}
half_value!(half::f16, half::bf16);

/// An input type that scans into `O`: every type into itself, and narrow integers into the
/// 64-bit integer of their signedness.
pub trait ScanInto<O: ScanValue>: ScanValue {
    /// The element as an output value (exact).
    fn convert(self) -> O;
}

macro_rules! scan_into {
    ($($t:ty => $o:ty),*) => {$(
        impl ScanInto<$o> for $t {
            #[inline(always)]
            fn convert(self) -> $o {
                self as $o
            }
        }
    )*};
}
scan_into!(u8 => u8, i8 => i8, u16 => u16, i16 => i16, u32 => u32, i32 => i32, u64 => u64, i64 => i64,
           f32 => f32, f64 => f64, u8 => u64, u16 => u64, u32 => u64, i8 => i64, i16 => i64, i32 => i64);

/// An input type with its default sum output: numpy's `cumsum` rule (signed integers into
/// i64, unsigned into u64, f32 and f64 into themselves), and f16 and bf16 into f32 (the type
/// they accumulate in: every partial sum is an f32 sum of exact f32 values).
pub trait ScanElement: ScanInto<Self::Wide> + ScanInto<Self::Extreme> {
    /// The output of a default sum.
    type Wide: ScanValue;
    /// The output of a default minimum or maximum: the type itself, f32 for f16 and bf16 (the
    /// type every 16-bit scan writes).
    type Extreme: ScanValue;
}

macro_rules! scan_element {
    ($($t:ty => $o:ty),*) => {$(
        impl ScanElement for $t {
            type Wide = $o;
            type Extreme = $t;
        }
    )*};
}
scan_element!(u8 => u64, u16 => u64, u32 => u64, u64 => u64, i8 => i64, i16 => i64, i32 => i64, i64 => i64,
              f32 => f32, f64 => f64);

/// A key of a scan by key: 32- and 64-bit integers, compared by their bits.
pub trait ScanKey: Copy + Send + Sync + PartialEq + DeviceRepr + std::fmt::Debug + 'static {
    /// Bytes per key (the kernel compares words of this width).
    const BYTES: u32;
}
impl ScanKey for u32 {
    const BYTES: u32 = 4;
}
impl ScanKey for i32 {
    const BYTES: u32 = 4;
}
impl ScanKey for u64 {
    const BYTES: u32 = 8;
}
impl ScanKey for i64 {
    const BYTES: u32 = 8;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_rule_of_64_bit_sums() {
        assert!(i64::sum_overflowed(i64::MAX, 1, i64::MAX.add(1)));
        assert!(i64::sum_overflowed(i64::MIN, -1, i64::MIN.add(-1)));
        assert!(!i64::sum_overflowed(-5, -1, -6));
        assert!(u64::sum_overflowed(u64::MAX, 2, 1));
        assert!(!u64::sum_overflowed(3, 0, 3));
        assert!(!i32::sum_overflowed(i32::MAX, 1, i32::MIN));
        assert_eq!(<i32 as ScanInto<i64>>::convert(-3), -3i64);
    }
}
