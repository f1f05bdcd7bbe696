//! Sample types a primitive accepts, and how each one appears to the CUDA kernels.

use crate::device::PlainData;
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use std::fmt;

/// The element types tally reads. Each maps onto one C++ type name handed to NVRTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    /// `u8` (`unsigned char`).
    U8,
    /// `u16` (`unsigned short`).
    U16,
    /// `i32` (`int`).
    I32,
    /// `u32` (`unsigned int`).
    U32,
    /// `i64` (`long long`).
    I64,
    /// `f32` (`float`).
    F32,
    /// `f64` (`double`).
    F64,
    /// `f16`, IEEE binary16 ([`half::f16`]; `tally_f16` in the kernels, 16 bits computed on as
    /// their exact f32 value).
    F16,
    /// `bf16`, bfloat16 ([`half::bf16`]; `tally_bf16` in the kernels, likewise).
    BF16,
}

impl DType {
    /// Every sample type.
    pub const ALL: [DType; 9] =
        [DType::U8, DType::U16, DType::I32, DType::U32, DType::I64, DType::F32, DType::F64, DType::F16, DType::BF16];

    /// The Rust name (`u8`, ..., `f64`): how the CLI's `--dtype` and reports spell it.
    pub fn name(self) -> &'static str {
        match self {
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::I64 => "i64",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::U8 => 1,
            DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

    /// The C++ spelling NVRTC sees (no `<cstdint>` there).
    pub fn cuda_type(self) -> &'static str {
        match self {
            DType::U8 => "unsigned char",
            DType::U16 => "unsigned short",
            DType::I32 => "int",
            DType::U32 => "unsigned int",
            DType::I64 => "long long",
            DType::F32 => "float",
            DType::F64 => "double",
            DType::F16 => "tally_f16",
            DType::BF16 => "tally_bf16",
        }
    }

    /// Whether this is a floating-point type (which can be NaN and is binned in f64).
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
    }

    /// The type named `s` (as [`DType::name`] spells it), or None.
    ///
    /// ```
    /// use tally::DType;
    /// assert_eq!(DType::parse("f32"), Some(DType::F32));
    /// assert_eq!(DType::parse("bf16"), Some(DType::BF16));
    /// assert_eq!(DType::parse("f8"), None);
    /// ```
    pub fn parse(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == s)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A sample element. Integer types expose their exact value so that binning of integers can
/// be exact rational arithmetic rather than floating point.
pub trait Sample:
    Copy + Send + Sync + Default + PartialOrd + fmt::Debug + DeviceRepr + ValidAsZeroBits + PlainData + 'static
{
    /// This type's [`DType`].
    const DTYPE: DType;
    /// The value as an f64 (exact for every type but i64 beyond 2^53); what float binning reads.
    fn to_f64(self) -> f64;
    /// The exact value of an integer sample; `None` for floating-point types.
    fn to_i64(self) -> Option<i64>;
    /// Whether the sample is NaN (never, for integers).
    fn is_nan(self) -> bool;
}

/// `Sample` for each `$t` of the `DType::$d`: its exact value by `$to_i64` and its NaN test by
/// `$is_nan`, each an expression of the sample bound to the name before it.
macro_rules! sample {
    ($($t:ty => $d:ident),*; to_i64: |$x:ident| $to_i64:expr, is_nan: |$y:ident| $is_nan:expr) => {$(
        impl Sample for $t {
            const DTYPE: DType = DType::$d;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn to_i64(self) -> Option<i64> {
                let $x = self;
                $to_i64
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                let $y = self;
                $is_nan
            }
        }
    )*};
}
sample!(u8 => U8, u16 => U16, i32 => I32, u32 => U32, i64 => I64; to_i64: |x| Some(x as i64), is_nan: |_x| false);
sample!(f32 => F32, f64 => F64; to_i64: |_x| None, is_nan: |x| x.is_nan());

/// The 16-bit floats: every value is exactly an f32 (and an f64), which is what binning reads.
macro_rules! half_sample {
    ($($t:ty => $d:ident),*) => {$(
        impl Sample for $t {
            const DTYPE: DType = DType::$d;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
            #[inline(always)]
            fn to_i64(self) -> Option<i64> {
                None
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }
    )*};
}
half_sample!(half::f16 => F16, half::bf16 => BF16);
