//! Exact conversions between element types: little-endian decoding, and casts that refuse to
//! lose information.

use std::fmt;

/// A sample value, exactly: every integer dtype fits in i128 and every float in f64.
#[derive(Clone, Copy)]
pub(super) enum Num {
    Int(i128),
    Float(f64),
}

/// The first value of a conversion that the target type cannot hold exactly.
pub(super) struct Lossy {
    index: usize,
    value: Num,
}

impl fmt::Display for Lossy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Num::Int(i) => write!(f, "element {} is {i}", self.index),
            Num::Float(x) => write!(f, "element {} is {x}", self.index),
        }
    }
}

/// Element types: little-endian decoding and exact conversion through `Num`.
pub(super) trait Elem: Copy + Sized {
    fn vec_from_le(bytes: &[u8]) -> Vec<Self>;
    fn to_num(self) -> Num;
    /// `None` when `n` is not exactly representable.
    fn from_num(n: Num) -> Option<Self>;
}

/// `Elem` for each `$t`: a `Num::$variant`, converted back by the macro `$from_num`.
macro_rules! elem {
    ($variant:ident, $from_num:ident: $($t:ty),*) => {$(
        impl Elem for $t {
            fn vec_from_le(bytes: &[u8]) -> Vec<Self> {
                let (chunks, _) = bytes.as_chunks::<{ size_of::<$t>() }>();
                chunks.iter().map(|c| <$t>::from_le_bytes(*c)).collect()
            }
            fn to_num(self) -> Num {
                Num::$variant(self.into())
            }
            fn from_num(n: Num) -> Option<Self> {
                $from_num!($t, n)
            }
        }
    )*};
}

/// An integer type's value of `n`, where it holds it exactly.
macro_rules! int_from_num {
    ($t:ty, $n:expr) => {
        match $n {
            Num::Int(i) => <$t>::try_from(i).ok(),
            // fract() is NaN for infinities and NaN, so only integral values pass; they
            // convert to i128 exactly (or saturate far outside every target's range).
            Num::Float(x) if x.fract() == 0.0 => <$t>::try_from(x as i128).ok(),
            Num::Float(_) => None,
        }
    };
}

/// A float type's value of `n`, where it holds it exactly (NaN stays NaN).
macro_rules! float_from_num {
    ($t:ty, $n:expr) => {
        match $n {
            Num::Int(i) => {
                let x = i as $t;
                (x as i128 == i).then_some(x)
            }
            Num::Float(x) => {
                let y = x as $t;
                (y as f64 == x || x.is_nan()).then_some(y)
            }
        }
    };
}

/// A 16-bit float type's value of `n`, where it holds it exactly (NaN stays NaN).
macro_rules! half_from_num {
    ($t:ty, $n:expr) => {
        match $n {
            Num::Int(i) => {
                let x = <$t>::from_f64(i as f64);
                (x.is_finite() && x.to_f64() as i128 == i).then_some(x)
            }
            Num::Float(x) => {
                let y = <$t>::from_f64(x);
                (y.to_f64() == x || x.is_nan()).then_some(y)
            }
        }
    };
}

elem!(Int, int_from_num: u8, u16, i32, u32, i64, u64);
elem!(Float, float_from_num: f32, f64);
elem!(Float, half_from_num: tally::half::f16, tally::half::bf16);

pub(super) fn cast<S: Elem, T: Elem>(v: &[S]) -> Result<Vec<T>, Lossy> {
    v.iter().enumerate().map(|(index, &s)| T::from_num(s.to_num()).ok_or(Lossy { index, value: s.to_num() })).collect()
}
