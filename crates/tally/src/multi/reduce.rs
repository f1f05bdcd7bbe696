//! Sharded reductions: each device reduces its shard with the single-GPU plan; the result words
//! of every rank are all-gathered and combined on the host in rank order (the partial states of
//! `reduce::partial`, as streamed chunks combine), so the result does not depend on timing
//! (in one process holding every rank the words are gathered on the host, no collective needed).
//! Integer sums, counts, extrema and exact float sums combine exactly (an exact sum's digits
//! add without rounding, so its value is the one-GPU bits); a plain float sum adds the devices'
//! sums in rank order.

use super::{device_input, uploads, DeviceSet, Shards};
use crate::error::Result;
use crate::reduce::partial::Partial;
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
        // Queued on every device first, then read: the devices reduce at the same time.
        let launched = self.per_device(uploads(&inputs), inputs, |dev, input| {
            let data = device_input(dev, input, "reduction input")?;
            let view = data.view();
            let mut plan = ReducePlan::<T>::new(dev, op, options, view.len())?;
            plan.launch(dev.stream(), &view)?;
            Ok((data, plan))
        })?;
        let k = launched[0].1.result_words();
        let mut local = Vec::with_capacity(launched.len());
        for ((data, plan), dev) in launched.iter().zip(self.devices()) {
            // An empty shard has no result words: zeros stand in, and the combine leaves it out.
            let words = if data.view().is_empty() { Vec::new() } else { plan.read_words(dev.stream())? };
            local.push(padded(&words, k));
        }
        let gathered = self.all_gather_host(&local)?;
        let total: u64 = lengths.iter().sum();
        let plan = &launched[0].1;
        let starts = super::shard::offsets(&lengths)?.0;
        let mut state = Partial::<T>::empty(op, options);
        for ((w, &n), first) in gathered.chunks_exact(k).zip(&lengths).zip(starts) {
            if n > 0 {
                state = state.then(plan.partial_of(w, first, n)?)?;
            }
        }
        state.finish(op, options, total, "cuda")
    }
}

/// `w` padded with zeros to `k` words (an empty shard has no words).
fn padded(w: &[u64], k: usize) -> Vec<u64> {
    let mut v = w.to_vec();
    v.resize(k, 0);
    v
}
