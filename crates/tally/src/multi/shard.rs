//! The arithmetic of sharding, on the host: where an even split puts its boundaries, where each
//! shard's output starts, and the carry each shard of a scan starts from.

use crate::error::{Error, Result};

/// The boundaries of `n` elements split evenly into `parts` shards: `parts + 1` indices, the
/// first 0 and the last `n`; the first `n % parts` shards hold one element more than the rest.
pub fn split_points(n: usize, parts: usize) -> Vec<usize> {
    let parts = parts.max(1);
    let (base, extra) = (n / parts, n % parts);
    let mut points = Vec::with_capacity(parts + 1);
    let mut at = 0;
    points.push(0);
    for i in 0..parts {
        at += base + (i < extra) as usize;
        points.push(at);
    }
    points
}

/// Where each shard's part of a concatenated output starts (the exclusive sum of `counts`), and
/// the total.
pub fn offsets(counts: &[u64]) -> Result<(Vec<u64>, u64)> {
    let mut out = Vec::with_capacity(counts.len());
    let mut total = 0u64;
    for &c in counts {
        out.push(total);
        total =
            total.checked_add(c).ok_or_else(|| Error::Overflow("the shards hold more than 2^64 elements".into()))?;
    }
    Ok((out, total))
}

/// The exclusive scan of the shards' totals by `op`, starting from `identity`: shard `i`'s
/// carry is `op(... op(op(totals[0], totals[1]), ...), totals[i - 1])`, in rank order, and
/// shard 0 has none (`None`).
pub fn carries<V: Copy>(totals: &[V], op: impl Fn(V, V) -> V) -> Vec<Option<V>> {
    let mut out = Vec::with_capacity(totals.len());
    let mut run: Option<V> = None;
    for &t in totals {
        out.push(run);
        run = Some(match run {
            None => t,
            Some(r) => op(r, t),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_points_cover_the_input_evenly() {
        for n in [0usize, 1, 2, 3, 7, 8, 1000, 1001, 1 << 20] {
            for parts in 1..=9 {
                let p = split_points(n, parts);
                assert_eq!(p.len(), parts + 1);
                assert_eq!((p[0], p[parts]), (0, n));
                let sizes: Vec<usize> = p.windows(2).map(|w| w[1] - w[0]).collect();
                let (lo, hi) = (*sizes.iter().min().unwrap(), *sizes.iter().max().unwrap());
                assert!(hi - lo <= 1, "n={n} parts={parts} sizes={sizes:?}");
                assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "larger shards first: {sizes:?}");
            }
        }
        assert_eq!(split_points(5, 0), vec![0, 5]);
        assert_eq!(split_points(1, 3), vec![0, 1, 1, 1]);
    }

    #[test]
    fn offsets_are_the_exclusive_sum() {
        let counts = [3u64, 0, 5, 1, 0];
        let (o, total) = offsets(&counts).unwrap();
        let mut want = Vec::new();
        let mut s = 0;
        for c in counts {
            want.push(s);
            s += c;
        }
        assert_eq!((o, total), (want, s));
        assert_eq!(offsets(&[]).unwrap(), (vec![], 0));
        assert!(matches!(offsets(&[u64::MAX, 1]), Err(Error::Overflow(_))));
    }

    #[test]
    fn carries_are_the_exclusive_scan_in_rank_order() {
        assert_eq!(carries(&[4i128, -1, 10, 0], |a, b| a + b), vec![None, Some(4), Some(3), Some(13)]);
        assert_eq!(carries(&[5i64, 2, 9], i64::min), vec![None, Some(5), Some(2)]);
        // The association is fixed: ((t0 op t1) op t2), which matters for floats.
        let t = [1e16f64, 1.0, -1e16];
        let c = carries(&t, |a, b| a + b);
        assert_eq!(c[2], Some(1e16 + 1.0));
        assert!(carries::<u8>(&[], |a, b| a + b).is_empty());
    }
}
