//! Sharded scans: each device but the last rank's reduces its shard to its total, the totals are all-gathered and
//! scanned (exclusive, in rank order) into each shard's carry, and each device scans its shard
//! with the single-GPU kernel starting from that carry (the carry is tile 0's prefix). Integer
//! results equal one GPU's exactly (the carries are exact sums, checked for overflow); float
//! sums add the same elements in another association than one GPU (the shard totals first).

use super::{device_input, shard, uploads, DeviceSet, Shards};
use crate::device::{DeviceInput, DeviceViewMut, Input};
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
        // Refused alike in every process, before any collective.
        total_op::<O>(op)?;
        let inputs = self.local_inputs(input.into()).map_err(|e| self.scan_failed(e))?;
        let mut host = vec![O::default(); inputs.iter().map(Input::len).sum()];
        self.scan_to_host(Shards::Local(inputs), &mut host, op, options)?;
        Ok(host)
    }

    /// [`DeviceSet::scan`] into `out` on the host, as long as this process's shards together.
    pub fn scan_to_host<'a, T: ScanInto<O>, O: ScanValue>(
        &self,
        input: impl Into<Shards<'a, T>>,
        out: &mut [O],
        op: ScanOp,
        options: ScanOptions,
    ) -> Result<()> {
        total_op::<O>(op)?;
        let devs = self.devices();
        let prepared = self.local_inputs(input.into()).and_then(|inputs| {
            let total: usize = inputs.iter().map(Input::len).sum();
            if out.len() != total {
                return Err(Error::invalid(format!("the shards hold {total} elements, the output {}", out.len())));
            }
            let outputs = devs
                .iter()
                .zip(&inputs)
                .map(|(dev, input)| dev.stream().alloc::<O>(input.len(), "scan output"))
                .collect::<Result<Vec<_>>>()?;
            Ok((inputs, outputs))
        });
        let (inputs, mut outputs) = prepared.map_err(|e| self.scan_failed(e))?;
        {
            let mut views: Vec<DeviceViewMut<'_, O>> = outputs.iter_mut().map(|b| b.view_mut()).collect();
            self.scan_into(Shards::Local(inputs), &mut views, op, options)?;
        }
        // Each device's part copied straight into its place in `out`, the devices' copies at the
        // same time.
        let mut parts = Vec::with_capacity(outputs.len());
        let mut rest = out;
        for b in &outputs {
            let (part, tail) = rest.split_at_mut(b.len());
            parts.push((b, part));
            rest = tail;
        }
        self.per_device(parts.len() > 1, parts, |dev, (b, part)| dev.stream().download_into(&b.view(), part))?;
        Ok(())
    }

    /// The scan by `op` of the sharded `input` into `outputs`, device memory: one view per
    /// device of this process, in rank order, each as long as that device's shard. Returns once
    /// the scans are done. Each device except the last rank's first reduces its shard to its
    /// total (the last rank's total carries into no shard); the totals are gathered and
    /// scanned into each shard's carry, and each device scans its shard from its carry.
    pub fn scan_into<'a, T: ScanInto<O>, O: ScanValue>(
        &self,
        input: impl Into<Shards<'a, T>>,
        outputs: &mut [DeviceViewMut<'_, O>],
        op: ScanOp,
        options: ScanOptions,
    ) -> Result<()> {
        let reduce_op = total_op::<O>(op)?;
        let ranks = self.ranks();
        // Phase 1 (this process's part, up to the gather of the totals: a failure anywhere in it
        // still takes its place in the gather, so that no process waits there for this one).
        let phase_one = || -> Result<PhaseOne<'a, T>> {
            let inputs = self.local_inputs(input.into())?;
            if outputs.len() != inputs.len() {
                return Err(Error::invalid(format!(
                    "{} outputs for the {} devices of this process: one output per device",
                    outputs.len(),
                    inputs.len()
                )));
            }
            for (i, (input, out)) in inputs.iter().zip(outputs.iter()).enumerate() {
                if input.len() != out.len() {
                    return Err(Error::invalid(format!(
                        "shard {i}: {} elements, but its output holds {}",
                        input.len(),
                        out.len()
                    )));
                }
            }
            let last_rank = self.world_size() - 1;
            let threads = uploads(&inputs);
            let work: Vec<_> = inputs.into_iter().zip(ranks.iter().copied()).collect();
            // Each shard on its device, and (queued, so that the devices reduce at the same time)
            // its total.
            let parts = self.per_device(threads, work, |dev, (input, rank)| {
                let data = device_input(dev, input, "scan input")?;
                let view = data.view();
                let mut total = None;
                if !view.is_empty() && rank != last_rank {
                    let mut plan = ReducePlan::<T>::new(dev, reduce_op, ReduceOptions::default(), view.len())?;
                    plan.launch(dev.stream(), &view)?;
                    total = Some(plan);
                }
                Ok((data, total))
            })?;
            // Each total as two words (an exact integer's 128 bits, or a float's f64 bits) and
            // the shard's length.
            let mut local = Vec::with_capacity(parts.len());
            for ((data, plan), dev) in parts.iter().zip(self.devices()) {
                let mut words = [0u64; 2];
                if let Some(plan) = plan {
                    let r = plan.read(dev.stream())?;
                    words = match r.exact {
                        Some(v) => [v as u64, ((v as u128) >> 64) as u64],
                        None => [r.value.to_bits(), 0],
                    };
                }
                local.push(vec![words[0], words[1], data.view().len() as u64]);
            }
            Ok((parts, local))
        };
        let ((parts, _), gathered) = self.gather_with(phase_one(), 3, |(_, local)| local.clone())?;
        let carries = carries_of::<O>(op, &gathered, options.wrapping)?;
        // Phase 2: each shard scanned from its carry, queued on every device before any waits.
        let mut plans = Vec::with_capacity(parts.len());
        for (((data, _), dev), (out, rank)) in parts.iter().zip(self.devices()).zip(outputs.iter_mut().zip(&ranks)) {
            let view = data.view();
            let mut plan = ScanPlan::<T, O>::new(dev, op, options, view.len())?;
            plan.set_carry(carries[*rank])?;
            plan.launch(dev.stream(), &view, out)?;
            plans.push(plan);
        }
        for (plan, dev) in plans.iter().zip(self.devices()) {
            plan.read(dev.stream())?;
        }
        Ok(())
    }
}

/// The reduction of a shard to its total for a scan by `op` into `O`: refused for floats but by
/// sum (checked first in every entry point: the refusal is the same in every process, so it
/// comes before any collective).
fn total_op<O: ScanValue>(op: ScanOp) -> Result<ReduceOp> {
    if O::TYPE.is_float() && op != ScanOp::Sum {
        return Err(Error::invalid(format!("a scan over several devices takes floats by sum only, not {}", op.name())));
    }
    Ok(match op {
        ScanOp::Sum => ReduceOp::Sum,
        ScanOp::Min => ReduceOp::Min,
        ScanOp::Max => ReduceOp::Max,
    })
}

/// A shard on its device and, but for the last rank's, the plan that reduced it to its total.
type ScanShard<'a, T> = (DeviceInput<'a, T>, Option<ReducePlan<T>>);

/// This process's shards after phase 1, with the words it gathers (total and length a shard).
type PhaseOne<'a, T> = (Vec<ScanShard<'a, T>>, Vec<Vec<u64>>);

impl DeviceSet {
    /// Where this process's scan failed before the gather of the totals (its shards or its
    /// output refused): takes its place in that gather, as a failed rank, so that no other
    /// process waits there for it, and returns `e`.
    fn scan_failed(&self, e: Error) -> Error {
        let _ = self.gather_with_status(None, 3);
        e
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
