//! Sharded reductions: each device reduces its shard with the single-GPU plan; the result words
//! of every rank are all-gathered and combined on the host in rank order, so the result does
//! not depend on timing. Integer sums, counts, extrema and exact float sums combine exactly
//! (an exact sum's digits add without rounding, so its value is the one-GPU bits); a plain
//! float sum adds the devices' sums in rank order.

use super::{device_input, DeviceSet, Shards};
use crate::error::{Error, Result};
use crate::reduce::policy::KernelOp;
use crate::reduce::{ReduceElement, ReduceOp, ReduceOptions, ReducePlan, Reduction};

impl DeviceSet {
    /// Reduces the sharded `input` by `op` (see [`crate::Backend::reduce`]); indices (argmin,
    /// argmax) are of the whole input.
    pub fn reduce<'a, T: ReduceElement>(
        &self,
        input: impl Into<Shards<'a, T>>,
        op: ReduceOp,
        options: ReduceOptions,
    ) -> Result<Reduction> {
        crate::reduce::validate::<T>(&op, &options)?;
        let shards = input.into();
        let split = shards.split_len();
        let inputs = self.local_inputs(shards)?;
        let lengths = self.shard_lengths(&inputs, split)?;
        let plans = self.per_device(inputs, |dev, input| {
            let data = device_input(dev, input, "reduction input")?;
            let view = data.view();
            let mut plan = ReducePlan::<T>::new(dev, op, options, view.len())?;
            plan.launch(dev.stream(), &view)?;
            let words = if view.is_empty() { Vec::new() } else { plan.read_words(dev.stream())? };
            Ok((plan, words))
        })?;
        // An empty shard has no result words: zeros stand in, and the combine leaves it out.
        let k = plans[0].0.word_count();
        let local: Vec<Vec<u64>> = plans.iter().map(|(_, w)| padded(w, k)).collect();
        let gathered = self.all_gather_host(&local)?;
        let total: u64 = lengths.iter().sum();
        let plan = &plans[0].0;
        let starts = super::shard::offsets(&lengths)?.0;
        let ranks: Vec<(&[u64], u64, u64)> =
            gathered.chunks_exact(k).zip(&lengths).zip(starts).map(|((w, &n), s)| (w, n, s)).collect();
        let words = combine::<T>(plan.kernel_op(), &ranks)?;
        let mut r = plan.decode(&words, total as usize)?;
        r.n = total;
        Ok(r)
    }
}

/// `w` padded with zeros to `k` words (an empty shard has no words).
fn padded(w: &[u64], k: usize) -> Vec<u64> {
    let mut v = w.to_vec();
    v.resize(k, 0);
    v
}

/// One set of result words from every rank's `(words, elements, first index)`, in rank order;
/// ranks of no elements are left out.
pub(crate) fn combine<T: ReduceElement>(op: KernelOp, ranks: &[(&[u64], u64, u64)]) -> Result<Vec<u64>> {
    let mut live = ranks.iter().filter(|(_, n, _)| *n > 0);
    let Some(&(first, _, start)) = live.next() else { return Ok(Vec::new()) };
    let mut acc = first.to_vec();
    if op == KernelOp::Extrema {
        shift_indices(&mut acc, start);
    }
    let wide = |w: &[u64], i: usize| (w[i] as u128 | (w[i + 1] as u128) << 64) as i128;
    let set_wide = |w: &mut [u64], i: usize, v: i128| {
        w[i] = v as u64;
        w[i + 1] = ((v as u128) >> 64) as u64;
    };
    for &(w, _, start) in live {
        match op {
            KernelOp::Sum if T::TYPE.is_float() => {
                acc[0] = (f64::from_bits(acc[0]) + f64::from_bits(w[0])).to_bits();
                acc[1] += w[1];
            }
            KernelOp::Sum => {
                let v = wide(&acc, 0).wrapping_add(wide(w, 0));
                set_wide(&mut acc, 0, v);
            }
            KernelOp::Count => {
                acc[0] += w[0];
                acc[1] += w[1];
            }
            KernelOp::Exact => {
                for i in 0..3 {
                    acc[i] += w[i];
                }
                for d in (4..acc.len()).step_by(2) {
                    let v = wide(&acc, d).wrapping_add(wide(w, d));
                    set_wide(&mut acc, d, v);
                }
            }
            KernelOp::Extrema => {
                let mut b = w.to_vec();
                shift_indices(&mut b, start);
                let (am, bm) = (T::from_bits64(acc[0]), T::from_bits64(b[0]));
                // The rank of lower indices keeps ties, as the kernel's merge does.
                if acc[2] == u64::MAX || (b[2] != u64::MAX && before(bm, am, |x, y| x < y)) {
                    (acc[0], acc[2]) = (b[0], b[2]);
                }
                let (ax, bx) = (T::from_bits64(acc[1]), T::from_bits64(b[1]));
                if acc[3] == u64::MAX || (b[3] != u64::MAX && before(bx, ax, |x, y| x > y)) {
                    (acc[1], acc[3]) = (b[1], b[3]);
                }
                acc[4] += b[4];
            }
            KernelOp::Custom => return Err(Error::invalid("custom reductions do not run on a device set")),
        }
    }
    Ok(acc)
}

/// The kernel's order of extrema: NaN first, then by `better`.
fn before<T: ReduceElement>(a: T, b: T, better: impl Fn(T, T) -> bool) -> bool {
    (a.is_nan() && !b.is_nan()) || better(a, b)
}

/// A shard's argmin and argmax as indices of the whole input (`u64::MAX`: none).
fn shift_indices(w: &mut [u64], start: u64) {
    for i in [2, 3] {
        if w[i] != u64::MAX {
            w[i] += start;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extrema_words_combine_in_rank_order_with_global_indices() {
        let words =
            |min: i32, max: i32, imin: u64, imax: u64| vec![min as i64 as u64, max as i64 as u64, imin, imax, 0];
        let a = words(3, 9, 4, 0);
        let b = words(3, 12, 1, 2);
        let empty = vec![0u64; 5];
        let got = combine::<i32>(KernelOp::Extrema, &[(&a, 10, 0), (&empty, 0, 10), (&b, 5, 10)]).unwrap();
        assert_eq!(got, vec![3, 12, 4, 12, 0]);
    }

    #[test]
    fn integer_and_exact_sums_add_their_wide_words() {
        let w = |v: i128| vec![v as u64, ((v as u128) >> 64) as u64];
        let (a, b) = (w(-5), w(i64::MAX as i128 * 4));
        let got = combine::<i64>(KernelOp::Sum, &[(&a, 1, 0), (&b, 1, 1)]).unwrap();
        assert_eq!((got[0] as u128 | (got[1] as u128) << 64) as i128, i64::MAX as i128 * 4 - 5);
        let mut e1 = vec![1u64, 0, 2, 0];
        e1.extend(w(-7));
        let mut e2 = vec![0u64, 3, 0, 0];
        e2.extend(w(10));
        let got = combine::<f64>(KernelOp::Exact, &[(&e1, 4, 0), (&e2, 4, 4)]).unwrap();
        assert_eq!(&got[..4], &[1, 3, 2, 0]);
        assert_eq!(got[4..], w(3)[..]);
        assert!(combine::<f32>(KernelOp::Sum, &[]).unwrap().is_empty());
    }
}
