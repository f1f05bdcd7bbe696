//! The plain sequential scans the tests compare every backend against: one element at a time,
//! left to right, with integer overflow found by exact (i128) running sums.

use super::element::{ScanInto, ScanKey, ScanValue};
use super::{overflow_error, ScanOp, ScanOptions};
use crate::error::Result;

/// Scans `xs` by `f` with `identity` (with `keys`, one per element: restart where they change).
pub fn scan_with<T: ScanInto<O>, O: ScanValue, K: ScanKey>(
    xs: &[T],
    keys: Option<&[K]>,
    identity: O,
    exclusive: bool,
    f: impl Fn(O, O) -> O,
) -> Vec<O> {
    let mut out = Vec::with_capacity(xs.len());
    let mut run = identity;
    for (i, &x) in xs.iter().enumerate() {
        let x: O = x.convert();
        let restart = i == 0 || keys.is_some_and(|k| k[i] != k[i - 1]);
        let before = if restart { identity } else { run };
        run = if restart { x } else { f(run, x) };
        out.push(if exclusive { before } else { run });
    }
    out
}

/// Scans `xs` by `op` as `options` say; a 64-bit integer sum whose exact running value leaves
/// the output type's range is an overflow error (unless wrapping).
pub fn scan<T: ScanInto<O>, O: ScanValue, K: ScanKey>(
    xs: &[T],
    keys: Option<&[K]>,
    op: ScanOp,
    options: &ScanOptions,
) -> Result<Vec<O>> {
    if op == ScanOp::Sum && O::CHECKED && !options.wrapping {
        let (lo, hi) = O::TYPE.int_range();
        let mut exact: i128 = 0;
        for (i, &x) in xs.iter().enumerate() {
            let restart = i == 0 || keys.is_some_and(|k| k[i] != k[i - 1]);
            exact = if restart { x.to_i128() } else { exact + x.to_i128() };
            if exact < lo || exact > hi {
                return Err(overflow_error::<O>());
            }
        }
    }
    Ok(scan_with(xs, keys, op.identity(), options.exclusive, |a, b| op.apply(a, b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_cumsum_and_friends() {
        let xs = [3i32, -1, 4, 1, -5];
        let none = None::<&[u32]>;
        assert_eq!(scan::<_, i64, u32>(&xs, none, ScanOp::Sum, &ScanOptions::default()).unwrap(), [3, 2, 6, 7, 2]);
        assert_eq!(
            scan::<_, i32, u32>(&xs, none, ScanOp::Min, &ScanOptions::exclusive()).unwrap(),
            [i32::MAX, 3, -1, -1, -1]
        );
        let keys = [1u64, 1, 2, 2, 2];
        assert_eq!(
            scan::<_, i64, u64>(&xs, Some(&keys), ScanOp::Sum, &ScanOptions::default()).unwrap(),
            [3, 2, 4, 5, 0]
        );
        let big = [i64::MAX, 1];
        assert!(scan::<_, i64, u32>(&big, none, ScanOp::Sum, &ScanOptions::default()).is_err());
        let wrapped = scan::<_, i64, u32>(&big, none, ScanOp::Sum, &ScanOptions::default().with_wrapping(true));
        assert_eq!(wrapped.unwrap(), [i64::MAX, i64::MIN]);
    }
}
