//! Sharded scans: each device reduces its shard to its total, the totals are all-gathered and
//! scanned (exclusive, in rank order) into each shard's carry, and each device scans its shard
//! with the single-GPU kernel starting from that carry (the carry is tile 0's prefix). Integer
//! results equal one GPU's exactly (the carries are exact sums, checked for overflow); float
//! sums add the same elements in another association than one GPU (the shard totals first).

use super::{device_input, shard, DeviceSet, Shards};
use crate::device::DeviceInput;
use crate::error::{Error, Result};
use crate::reduce::{ReduceOp, ReduceOptions, ReducePlan};
use crate::scan::{ScanInto, ScanOp, ScanOptions, ScanPlan, ScanValue};

impl DeviceSet {
    /// The scan by `op` of the sharded `input` (see [`crate::Backend::scan`]): this process's
    /// shards' outputs, in rank order, on the host (in one process: the whole scan). Sum, min
    /// and max; floats by sum only.
    pub fn scan<'a, T: ScanInto<O>, O: ScanValue>(
        &self,
        input: impl Into<Shards<'a, T>>,
        op: ScanOp,
        options: ScanOptions,
    ) -> Result<Vec<O>> {
        if O::TYPE.is_float() && op != ScanOp::Sum {
            return Err(Error::invalid(format!(
                "a scan over several devices takes floats by sum only, not {}",
                op.name()
            )));
        }
        let reduce_op = match op {
            ScanOp::Sum => ReduceOp::Sum,
            ScanOp::Min => ReduceOp::Min,
            ScanOp::Max => ReduceOp::Max,
        };
        let inputs = self.local_inputs(input.into())?;
        // Phase 1: each shard on its device, and its total as two words (an exact integer's
        // 128 bits, or a float's f64 bits).
        let parts: Vec<(DeviceInput<'a, T>, [u64; 2])> = self.per_device(inputs, |dev, input| {
            let data = device_input(dev, input, "scan input")?;
            let view = data.view();
            let mut words = [0u64; 2];
            if !view.is_empty() {
                let mut plan = ReducePlan::<T>::new(dev, reduce_op, ReduceOptions::default(), view.len())?;
                let r = plan.run(&view)?;
                words = match r.exact {
                    Some(v) => [v as u64, ((v as u128) >> 64) as u64],
                    None => [r.value.to_bits(), 0],
                };
            }
            Ok((data, words))
        })?;
        let local: Vec<Vec<u64>> = parts.iter().map(|(d, w)| vec![w[0], w[1], d.view().len() as u64]).collect();
        let gathered = self.all_gather_host(&local)?;
        let carries = carries_of::<O>(op, &gathered, options.wrapping)?;
        let ranks = self.ranks();
        let work: Vec<_> = parts.into_iter().zip(ranks).map(|((data, _), rank)| (data, carries[rank])).collect();
        // Phase 2: each shard scanned from its carry.
        let outputs = self.per_device(work, |dev, (data, carry)| {
            let view = data.view();
            let mut plan = ScanPlan::<T, O>::new(dev, op, options, view.len())?;
            plan.set_carry(carry)?;
            let mut out = dev.stream().alloc::<O>(view.len(), "scan output")?;
            plan.launch(dev.stream(), &view, &mut out.view_mut())?;
            plan.read(dev.stream())?;
            dev.stream().download(&out.view())
        })?;
        Ok(outputs.concat())
    }
}

/// Each rank's carry from the gathered `[total words, elements]` of every rank: the exclusive
/// scan of the non-empty ranks' totals by `op`, in rank order (None before the first).
fn carries_of<O: ScanValue>(op: ScanOp, gathered: &[u64], wrapping: bool) -> Result<Vec<Option<O>>> {
    let ranks: Vec<&[u64]> = gathered.chunks_exact(3).collect();
    let mut out = Vec::with_capacity(ranks.len());
    if O::TYPE.is_float() {
        let totals: Vec<Option<f64>> = ranks.iter().map(|w| (w[2] > 0).then(|| f64::from_bits(w[0]))).collect();
        for c in shard::carries(&totals, |a, b| match (a, b) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        }) {
            out.push(c.flatten().map(|v| O::from_value(v, None)));
        }
        return Ok(out);
    }
    let totals: Vec<Option<i128>> =
        ranks.iter().map(|w| (w[2] > 0).then(|| (w[0] as u128 | (w[1] as u128) << 64) as i128)).collect();
    let combine = |a: i128, b: i128| match op {
        ScanOp::Sum => a.saturating_add(b),
        ScanOp::Min => a.min(b),
        ScanOp::Max => a.max(b),
    };
    let (lo, hi) = O::TYPE.int_range();
    for c in shard::carries(&totals, |a, b| match (a, b) {
        (Some(a), Some(b)) => Some(combine(a, b)),
        (a, b) => a.or(b),
    }) {
        let c = c.flatten();
        // A checked sum's carry out of range means an earlier element's prefix overflowed.
        if c.is_some_and(|v| O::CHECKED && !wrapping && !(lo..=hi).contains(&v)) {
            return Err(crate::scan::overflow_error::<O>());
        }
        out.push(c.map(|v| O::from_value(v as f64, Some(v))));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gathered(totals: &[(i128, u64)]) -> Vec<u64> {
        totals.iter().flat_map(|&(v, n)| [v as u64, ((v as u128) >> 64) as u64, n]).collect()
    }

    #[test]
    fn integer_carries_skip_empty_shards_and_check_overflow() {
        let g = gathered(&[(5, 2), (0, 0), (-3, 4), (7, 1)]);
        assert_eq!(carries_of::<i64>(ScanOp::Sum, &g, false).unwrap(), vec![None, Some(5), Some(5), Some(2)]);
        assert_eq!(carries_of::<i64>(ScanOp::Min, &g, false).unwrap(), vec![None, Some(5), Some(5), Some(-3)]);
        let big = gathered(&[(i64::MAX as i128, 1), (1, 1), (0, 1)]);
        assert!(matches!(carries_of::<i64>(ScanOp::Sum, &big, false), Err(Error::Overflow(_))));
        // Wrapping sums wrap, as one device's do.
        assert_eq!(carries_of::<i64>(ScanOp::Sum, &big, true).unwrap()[2], Some(i64::MIN));
        assert_eq!(
            carries_of::<u32>(ScanOp::Sum, &gathered(&[(u32::MAX as i128, 1), (0, 1)]), false).unwrap()[1],
            Some(u32::MAX)
        );
    }

    #[test]
    fn float_carries_add_in_rank_order() {
        let g: Vec<u64> =
            [(1e16f64, 1u64), (1.0, 1), (0.0, 0), (-1e16, 1)].iter().flat_map(|&(v, n)| [v.to_bits(), 0, n]).collect();
        let c = carries_of::<f64>(ScanOp::Sum, &g, false).unwrap();
        assert_eq!(c, vec![None, Some(1e16), Some(1e16 + 1.0), Some(1e16 + 1.0)]);
    }
}
