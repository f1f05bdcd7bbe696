//! The exact sum: a float is an integer mantissa times a power of two, so the sum of any floats
//! is an integer multiple of 2^-1074 (the smallest subnormal). [`ExactSum`] keeps that integer
//! as 32-bit digits in 64-bit signed slots (carry-save: each slot may hold many digit-sized
//! adds before a carry is due), with the non-finite inputs counted aside, and rounds once, half
//! to even, at the end. The GPU kernels keep the same kind of digits per thread and per block
//! and hand them over with [`ExactSum::add_scaled`]; integer adds commute, so every split of
//! the input and every order gives the same integer, and so the same bits.

/// Slots of 32 bits each: bit positions 0..2304 in units of 2^-1074. The largest finite f64
/// sets bit 2097; 2^64 such adds reach bit 2161, well inside.
pub const SLOTS: usize = 72;

/// Adds a slot takes before its carries are pushed on (each add is below 2^32 in magnitude, so
/// 2^30 of them stay below 2^62).
const ADDS_BEFORE_CARRY: u32 = 1 << 30;

/// The exact sum of floats, rounded once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExactSum {
    slots: [i64; SLOTS],
    adds: u32,
    nan: u64,
    pos_inf: u64,
    neg_inf: u64,
}

impl Default for ExactSum {
    fn default() -> Self {
        ExactSum::new()
    }
}

impl ExactSum {
    /// Zero.
    pub fn new() -> Self {
        ExactSum { slots: [0; SLOTS], adds: 0, nan: 0, pos_inf: 0, neg_inf: 0 }
    }

    /// Adds `x` exactly (NaN and infinities are counted).
    #[inline]
    pub fn add_f64(&mut self, x: f64) {
        let bits = x.to_bits();
        let e = ((bits >> 52) & 0x7ff) as u32;
        if e == 0x7ff {
            self.add_special(bits & ((1 << 52) - 1) != 0, bits >> 63 != 0);
            return;
        }
        let m = (bits & ((1 << 52) - 1)) | if e != 0 { 1 << 52 } else { 0 };
        // x = m * 2^(p - 1074), p = max(e, 1) - 1.
        let p = e.max(1) - 1;
        let (limb, s) = ((p >> 5) as usize, p & 31);
        let v = (m as u128) << s;
        let sign = if bits >> 63 != 0 { -1 } else { 1 };
        self.slots[limb] += sign * (v as u32 as i64);
        self.slots[limb + 1] += sign * ((v >> 32) as u32 as i64);
        self.slots[limb + 2] += sign * ((v >> 64) as u32 as i64);
        self.count_add();
    }

    /// Adds `x` exactly (f32 to f64 is exact).
    #[inline]
    pub fn add_f32(&mut self, x: f32) {
        self.add_f64(x as f64)
    }

    /// Counts a NaN (`nan`) or an infinity of sign `negative`.
    pub fn add_special(&mut self, nan: bool, negative: bool) {
        match (nan, negative) {
            (true, _) => self.nan += 1,
            (false, false) => self.pos_inf += 1,
            (false, true) => self.neg_inf += 1,
        }
    }

    /// Adds the counts of NaN, +inf and -inf of another accumulator.
    pub fn add_special_counts(&mut self, nan: u64, pos_inf: u64, neg_inf: u64) {
        self.nan += nan;
        self.pos_inf += pos_inf;
        self.neg_inf += neg_inf;
    }

    /// Adds `value * 2^(bit - 1074)` exactly (`bit` + 128 must be below 32 * SLOTS).
    pub fn add_scaled(&mut self, value: i128, bit: u32) {
        let (limb, s) = ((bit >> 5) as usize, bit & 31);
        let neg = value < 0;
        let mag = value.unsigned_abs();
        // mag << s spans 160 bits: five 32-bit digits.
        let lo = mag << s;
        let hi = if s == 0 { 0 } else { mag >> (128 - s) };
        let digits = [lo as u32, (lo >> 32) as u32, (lo >> 64) as u32, (lo >> 96) as u32, hi as u32];
        for (k, d) in digits.into_iter().enumerate() {
            if d != 0 {
                self.slots[limb + k] += if neg { -(d as i64) } else { d as i64 };
            }
        }
        self.count_add();
    }

    /// Adds another accumulator's sum.
    pub fn merge(&mut self, other: &ExactSum) {
        let mut o = other.clone();
        o.carry();
        self.carry();
        for (a, b) in self.slots.iter_mut().zip(o.slots) {
            *a += b;
        }
        self.adds = 2;
        self.nan += o.nan;
        self.pos_inf += o.pos_inf;
        self.neg_inf += o.neg_inf;
    }

    #[inline(always)]
    fn count_add(&mut self) {
        self.adds += 1;
        if self.adds >= ADDS_BEFORE_CARRY {
            self.carry();
        }
    }

    /// Pushes carries on: every slot but the last in [0, 2^32); the last holds the sign.
    fn carry(&mut self) {
        let mut carry = 0i64;
        for s in self.slots.iter_mut().take(SLOTS - 1) {
            let v = *s + carry;
            *s = v & 0xffff_ffff;
            carry = v >> 32;
        }
        self.slots[SLOTS - 1] += carry;
        self.adds = 0;
    }

    /// NaNs added.
    pub fn nan_count(&self) -> u64 {
        self.nan
    }

    /// The exact sum rounded to f64, half to even, subnormals included; IEEE's answer for
    /// non-finite inputs (NaN in, or +inf and -inf: NaN; else the infinity) and ±inf where the
    /// rounded sum overflows. An exact zero is +0.
    pub fn to_f64(&self) -> f64 {
        self.to_f64_ignoring_nan(false)
    }

    /// As [`ExactSum::to_f64`], with the NaNs counted but ignored (`nansum`) if `skip_nan`.
    pub fn to_f64_ignoring_nan(&self, skip_nan: bool) -> f64 {
        if (self.nan > 0 && !skip_nan) || (self.pos_inf > 0 && self.neg_inf > 0) {
            return f64::NAN;
        }
        if self.pos_inf > 0 {
            return f64::INFINITY;
        }
        if self.neg_inf > 0 {
            return f64::NEG_INFINITY;
        }
        let mut s = self.clone();
        s.carry();
        let negative = s.slots[SLOTS - 1] < 0;
        // The magnitude as 32-bit digits (two's complement negated where negative).
        let mut mag = [0u32; SLOTS];
        let mut carry = 1u64;
        for (k, &v) in s.slots.iter().enumerate() {
            // The low 32 bits; the last slot's sign is taken care of by the negation.
            let d = v as u32;
            mag[k] = if negative {
                let x = (!d) as u64 + carry;
                carry = x >> 32;
                x as u32
            } else {
                d
            };
        }
        let magnitude = round_magnitude(&mag);
        if negative {
            -magnitude
        } else {
            magnitude
        }
    }
}

/// `mag * 2^-1074` rounded to f64, half to even.
fn round_magnitude(mag: &[u32; SLOTS]) -> f64 {
    let Some(top) = mag.iter().rposition(|&d| d != 0) else {
        return 0.0;
    };
    let h = top as u32 * 32 + (31 - mag[top].leading_zeros()); // the highest set bit
    let bit = |i: u32| (mag[(i >> 5) as usize] >> (i & 31)) & 1 == 1;
    if h < 53 {
        // Below 2^53 units every integer is representable (subnormals included): the bits of
        // the f64 are the integer itself.
        let v = mag[0] as u64 | (mag[1] as u64) << 32;
        return f64::from_bits(v);
    }
    let shift = h - 52;
    let mut m: u64 = 0;
    for i in (shift..=h).rev() {
        m = (m << 1) | bit(i) as u64;
    }
    let round = bit(shift - 1);
    let sticky = (0..shift - 1).any(bit);
    let mut shift = shift as u64;
    if round && (sticky || m & 1 == 1) {
        m += 1;
        if m == 1 << 53 {
            m >>= 1;
            shift += 1;
        }
    }
    // value = m * 2^(shift - 1074), m in [2^52, 2^53): biased exponent shift + 1.
    if shift + 1 >= 0x7ff {
        return f64::INFINITY;
    }
    f64::from_bits((shift << 52) + m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(xs: &[f64]) -> f64 {
        let mut s = ExactSum::new();
        xs.iter().for_each(|&x| s.add_f64(x));
        s.to_f64()
    }

    #[test]
    fn small_cases() {
        assert_eq!(exact(&[]), 0.0);
        assert_eq!(exact(&[1.0, 2.0]), 3.0);
        assert_eq!(exact(&[1e100, 1.0, -1e100]), 1.0);
        assert_eq!(exact(&[0.1; 10]), 1.0);
        assert_eq!(exact(&[1e308, 1e308, -1e308]), 1e308);
        assert_eq!(exact(&[f64::MAX, f64::MAX]), f64::INFINITY);
        assert_eq!(exact(&[-f64::MAX, -f64::MAX]), f64::NEG_INFINITY);
        assert_eq!(exact(&[5e-324, 5e-324]), 1e-323);
        assert_eq!(exact(&[-5e-324]), -5e-324);
        assert!(exact(&[f64::INFINITY, f64::NEG_INFINITY]).is_nan());
        assert!(exact(&[1.0, f64::NAN]).is_nan());
        assert_eq!(exact(&[f64::INFINITY, 1.0]), f64::INFINITY);
        // Halfway: 2^53 + 1 rounds to even (2^53), 2^53 + 3 to 2^53 + 4.
        let two53 = 9007199254740992.0;
        assert_eq!(exact(&[two53, 1.0]), two53);
        assert_eq!(exact(&[two53, 3.0]), two53 + 4.0);
        // Just above halfway: the sticky bit decides.
        assert_eq!(exact(&[two53, 1.0, 1e-300]), two53 + 2.0);
        assert_eq!(exact(&[two53, 1.0, -1e-300]), two53);
    }

    #[test]
    fn scaled_adds_and_merges_agree_with_element_adds() {
        let xs: Vec<f64> = (0..1000).map(|i| ((i * 7919) % 1013) as f64 * 1.5f64.powi(i % 40 - 20)).collect();
        let mut a = ExactSum::new();
        let mut b = ExactSum::new();
        let mut c = ExactSum::new();
        for (i, &x) in xs.iter().enumerate() {
            a.add_f64(x);
            if i % 2 == 0 { &mut b } else { &mut c }.add_f64(x);
        }
        b.merge(&c);
        assert_eq!(a.to_f64(), b.to_f64());
        let mut d = ExactSum::new();
        d.add_scaled(-(3i128 << 100), 1074);
        d.add_scaled(1i128 << 101, 1074 - 1);
        assert_eq!(d.to_f64(), -(2f64.powi(100)) * 2.0);
    }
}
