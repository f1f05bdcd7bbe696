//! The types the run primitives read and write: keys of every reduction element type, and the
//! value-to-output pairs of reduce-by-key (every type into itself, narrow integers' sums into
//! the 64-bit integer of their signedness, f16 and bf16 into f32 (their accumulator), and every
//! type into `u64` for counts).

use crate::scan::ScanValue;

/// A key of the run primitives: every reduction element type, compared with `==` (IEEE for
/// floats: NaN equals nothing, so every NaN is a run of its own; -0.0 equals +0.0; f16 and bf16
/// by value, as the f32 rules say).
pub trait RunKey: ScanValue + ReduceByKeyInto<u64> {}
impl<T: ScanValue + ReduceByKeyInto<u64>> RunKey for T {}

/// A value type that reduce-by-key reads as `Self` and writes as `O`.
pub trait ReduceByKeyInto<O: ScanValue>: ScanValue {
    /// Whether sums, minima and maxima of `Self` may be written as `O`; false for the pairs
    /// that exist only so that [`crate::RunOp::Count`] can write `u64` counts of any values.
    const COMBINES: bool;
    /// The value as an output (exact where `COMBINES`).
    fn convert(self) -> O;
}

macro_rules! by_key_into {
    ($combines:expr; $($t:ty => $o:ty),*) => {$(
        impl ReduceByKeyInto<$o> for $t {
            const COMBINES: bool = $combines;
            #[inline(always)]
            fn convert(self) -> $o {
                self as $o
            }
        }
    )*};
}
by_key_into!(true; u8 => u8, i8 => i8, u16 => u16, i16 => i16, u32 => u32, i32 => i32, u64 => u64, i64 => i64,
             f32 => f32, f64 => f64, u8 => u64, u16 => u64, u32 => u64, i8 => i64, i16 => i64, i32 => i64);
by_key_into!(false; i8 => u64, i16 => u64, i32 => u64, i64 => u64, f32 => u64, f64 => u64);

/// The 16-bit floats: values into f32 (exact; sums and extrema accumulate there) and into `u64`
/// for counts.
macro_rules! half_by_key_into {
    ($($t:ty),*) => {$(
        impl ReduceByKeyInto<f32> for $t {
            const COMBINES: bool = true;
            #[inline(always)]
            fn convert(self) -> f32 {
                self.to_f32()
            }
        }
        impl ReduceByKeyInto<u64> for $t {
            const COMBINES: bool = false;
            #[inline(always)]
            fn convert(self) -> u64 {
                self.to_f32() as u64
            }
        }
    )*};
}
half_by_key_into!(half::f16, half::bf16);
