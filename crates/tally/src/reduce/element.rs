//! The element types a reduction reads: every common integer width, signed and unsigned, f32,
//! f64, and the 16-bit floats f16 and bf16. A type of their own (not [`crate::DType`]): the histogram's sample types are a
//! subset, and the reductions take the others without touching the histogram.

use super::{CmpOp, Compare, Reduction};
use cudarc::driver::DeviceRepr;
use serde::Serialize;
use std::fmt;

/// An element type of a reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ElementType {
    /// `u8`.
    U8,
    /// `i8`.
    I8,
    /// `u16`.
    U16,
    /// `i16`.
    I16,
    /// `u32`.
    U32,
    /// `i32`.
    I32,
    /// `u64`.
    U64,
    /// `i64`.
    I64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// `f16` ([`half::f16`], IEEE binary16).
    F16,
    /// `bf16` ([`half::bf16`], bfloat16).
    BF16,
}

impl ElementType {
    /// Every element type.
    pub const ALL: [ElementType; 12] = [
        ElementType::U8,
        ElementType::I8,
        ElementType::U16,
        ElementType::I16,
        ElementType::U32,
        ElementType::I32,
        ElementType::U64,
        ElementType::I64,
        ElementType::F32,
        ElementType::F64,
        ElementType::F16,
        ElementType::BF16,
    ];

    /// "u8", "i8", ...
    pub fn name(self) -> &'static str {
        match self {
            ElementType::U8 => "u8",
            ElementType::I8 => "i8",
            ElementType::U16 => "u16",
            ElementType::I16 => "i16",
            ElementType::U32 => "u32",
            ElementType::I32 => "i32",
            ElementType::U64 => "u64",
            ElementType::I64 => "i64",
            ElementType::F32 => "f32",
            ElementType::F64 => "f64",
            ElementType::F16 => "f16",
            ElementType::BF16 => "bf16",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            ElementType::U8 | ElementType::I8 => 1,
            ElementType::U16 | ElementType::I16 | ElementType::F16 | ElementType::BF16 => 2,
            ElementType::U32 | ElementType::I32 | ElementType::F32 => 4,
            ElementType::U64 | ElementType::I64 | ElementType::F64 => 8,
        }
    }

    /// The C++ spelling NVRTC sees.
    pub fn cuda_type(self) -> &'static str {
        match self {
            ElementType::U8 => "unsigned char",
            ElementType::I8 => "signed char",
            ElementType::U16 => "unsigned short",
            ElementType::I16 => "short",
            ElementType::U32 => "unsigned int",
            ElementType::I32 => "int",
            ElementType::U64 => "unsigned long long",
            ElementType::I64 => "long long",
            ElementType::F32 => "float",
            ElementType::F64 => "double",
            ElementType::F16 => "tally_f16",
            ElementType::BF16 => "tally_bf16",
        }
    }

    /// f32, f64, f16 or bf16.
    pub fn is_float(self) -> bool {
        matches!(self, ElementType::F32 | ElementType::F64 | ElementType::F16 | ElementType::BF16)
    }

    /// f16 or bf16: 16-bit floats, which every primitive reads as their exact f32 value (sums
    /// and scans accumulate them as f32 elements are accumulated).
    pub fn is_half(self) -> bool {
        matches!(self, ElementType::F16 | ElementType::BF16)
    }

    /// The type scans and reduce-by-key write this type's sums, minima and maxima in: f32 for
    /// the 16-bit floats (their accumulator, as in CUB and PyTorch), the type itself otherwise.
    pub fn arithmetic(self) -> ElementType {
        if self.is_half() {
            ElementType::F32
        } else {
            self
        }
    }

    /// A signed integer type.
    pub fn is_signed_int(self) -> bool {
        matches!(self, ElementType::I8 | ElementType::I16 | ElementType::I32 | ElementType::I64)
    }

    /// The integer range `[min, max]` of an integer type.
    pub fn int_range(self) -> (i128, i128) {
        match self {
            ElementType::U8 => (0, u8::MAX as i128),
            ElementType::I8 => (i8::MIN as i128, i8::MAX as i128),
            ElementType::U16 => (0, u16::MAX as i128),
            ElementType::I16 => (i16::MIN as i128, i16::MAX as i128),
            ElementType::U32 => (0, u32::MAX as i128),
            ElementType::I32 => (i32::MIN as i128, i32::MAX as i128),
            ElementType::U64 => (0, u64::MAX as i128),
            ElementType::I64 => (i64::MIN as i128, i64::MAX as i128),
            ElementType::F32 | ElementType::F64 | ElementType::F16 | ElementType::BF16 => (i128::MIN, i128::MAX),
        }
    }

    /// The element type named `s` ("u8", ...).
    pub fn parse(s: &str) -> Option<ElementType> {
        ElementType::ALL.into_iter().find(|d| d.name() == s)
    }

    /// The element type of a histogram sample type.
    pub fn from_dtype(d: crate::DType) -> ElementType {
        use crate::DType;
        match d {
            DType::U8 => ElementType::U8,
            DType::U16 => ElementType::U16,
            DType::I32 => ElementType::I32,
            DType::U32 => ElementType::U32,
            DType::I64 => ElementType::I64,
            DType::F32 => ElementType::F32,
            DType::F64 => ElementType::F64,
            DType::F16 => ElementType::F16,
            DType::BF16 => ElementType::BF16,
        }
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An element a reduction reads.
pub trait ReduceElement:
    Copy + Send + Sync + Default + PartialOrd + fmt::Debug + DeviceRepr + crate::device::PlainData + 'static
{
    /// The element type.
    const TYPE: ElementType;
    /// What [`crate::Backend::sum`] returns: i128 (exact) for integers, f64 for floats.
    type Sum: Copy + fmt::Debug + PartialEq;
    /// The value as f64 (rounded for 64-bit integers beyond 2^53).
    fn to_f64(self) -> f64;
    /// The exact value of an integer (floats: truncated; not used for them).
    fn to_i128(self) -> i128;
    /// Whether the element is NaN.
    fn is_nan(self) -> bool;
    /// The element from a result's f64 value or, for integers, its exact value.
    fn from_value(value: f64, exact: Option<i128>) -> Self;
    /// The raw little-endian bits, zero-extended (how the kernels hand values back).
    fn from_bits64(bits: u64) -> Self;
    /// The sum in a [`Reduction`] of op sum.
    fn sum_of(r: &Reduction) -> Self::Sum;
}

macro_rules! int_element {
    ($t:ty, $e:expr, $u:ty) => {
        impl ReduceElement for $t {
            const TYPE: ElementType = $e;
            type Sum = i128;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn to_i128(self) -> i128 {
                self as i128
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                false
            }
            fn from_value(value: f64, exact: Option<i128>) -> Self {
                exact.map_or(value as $t, |v| v as $t)
            }
            fn from_bits64(bits: u64) -> Self {
                bits as $u as $t
            }
            fn sum_of(r: &Reduction) -> i128 {
                r.exact.unwrap_or(r.value as i128)
            }
        }
    };
}
int_element!(u8, ElementType::U8, u8);
int_element!(i8, ElementType::I8, u8);
int_element!(u16, ElementType::U16, u16);
int_element!(i16, ElementType::I16, u16);
int_element!(u32, ElementType::U32, u32);
int_element!(i32, ElementType::I32, u32);
int_element!(u64, ElementType::U64, u64);
int_element!(i64, ElementType::I64, u64);

macro_rules! float_element {
    ($t:ty, $e:expr, $u:ty) => {
        impl ReduceElement for $t {
            const TYPE: ElementType = $e;
            type Sum = f64;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn to_i128(self) -> i128 {
                self as i128
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                self.is_nan()
            }
            fn from_value(value: f64, _: Option<i128>) -> Self {
                value as $t
            }
            fn from_bits64(bits: u64) -> Self {
                <$t>::from_bits(bits as $u)
            }
            fn sum_of(r: &Reduction) -> f64 {
                r.value
            }
        }
    };
}
float_element!(f32, ElementType::F32, u32);
float_element!(f64, ElementType::F64, u64);

macro_rules! half_element {
    ($t:ty, $e:expr) => {
        impl ReduceElement for $t {
            const TYPE: ElementType = $e;
            type Sum = f64;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
            fn to_i128(self) -> i128 {
                <$t>::to_f32(self) as i128
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn from_value(value: f64, _: Option<i128>) -> Self {
                <$t>::from_f64(value)
            }
            fn from_bits64(bits: u64) -> Self {
                <$t>::from_bits(bits as u16)
            }
            fn sum_of(r: &Reduction) -> f64 {
                r.value
            }
        }
    };
}
half_element!(half::f16, ElementType::F16);
half_element!(half::bf16, ElementType::BF16);

/// A comparison as the fast paths test it: floats as an interval of f64 with open or closed
/// ends, integers as a closed interval clamped to the type (empty: `lo > hi`), each maybe
/// negated (`Ne`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct CountBounds {
    pub lo: f64,
    pub hi: f64,
    pub lo_open: bool,
    pub hi_open: bool,
    pub lo_int: i128,
    pub hi_int: i128,
    pub negate: bool,
}

impl CountBounds {
    pub(crate) fn new(cmp: Compare, dtype: ElementType) -> CountBounds {
        let t = cmp.value;
        let (inf, ninf) = (f64::INFINITY, f64::NEG_INFINITY);
        let (lo, hi, lo_open, hi_open) = match cmp.op {
            CmpOp::Lt => (ninf, t, false, true),
            CmpOp::Le => (ninf, t, false, false),
            CmpOp::Gt => (t, inf, true, false),
            CmpOp::Ge => (t, inf, false, false),
            CmpOp::Eq | CmpOp::Ne => (t, t, false, false),
        };
        // Integers: the closed interval of integers in the real one (saturating casts).
        let (tmin, tmax) = dtype.int_range();
        let (mut lo_int, mut hi_int) = if t.is_nan() {
            (1, 0)
        } else {
            let (fl, ce) = (t.floor() as i128, t.ceil() as i128);
            match cmp.op {
                CmpOp::Lt => (i128::MIN, ce.saturating_sub(1)),
                CmpOp::Le => (i128::MIN, fl),
                CmpOp::Gt => (fl.saturating_add(1), i128::MAX),
                CmpOp::Ge => (ce, i128::MAX),
                CmpOp::Eq | CmpOp::Ne if t.is_finite() && t == t.floor() => (fl, fl),
                CmpOp::Eq | CmpOp::Ne => (1, 0),
            }
        };
        if t.is_infinite() && matches!(cmp.op, CmpOp::Lt | CmpOp::Le) {
            (lo_int, hi_int) = if t > 0.0 { (i128::MIN, i128::MAX) } else { (1, 0) };
        }
        if t.is_infinite() && matches!(cmp.op, CmpOp::Gt | CmpOp::Ge) {
            (lo_int, hi_int) = if t < 0.0 { (i128::MIN, i128::MAX) } else { (1, 0) };
        }
        lo_int = lo_int.max(tmin);
        hi_int = hi_int.min(tmax);
        if lo_int > hi_int {
            (lo_int, hi_int) = (tmax, tmin);
        }
        CountBounds { lo, hi, lo_open, hi_open, lo_int, hi_int, negate: cmp.op == CmpOp::Ne }
    }

    /// Whether `x` passes.
    #[inline(always)]
    pub(crate) fn passes<T: ReduceElement>(&self, x: T) -> bool {
        let inside = if T::TYPE.is_float() {
            let v = x.to_f64();
            (if self.lo_open { v > self.lo } else { v >= self.lo })
                && (if self.hi_open { v < self.hi } else { v <= self.hi })
        } else {
            let v = x.to_i128();
            v >= self.lo_int && v <= self.hi_int
        };
        inside != self.negate
    }
}
