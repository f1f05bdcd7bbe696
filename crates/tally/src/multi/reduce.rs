//! Sharded reductions: each device reduces its shard with the single-GPU plan; the result words
//! of every rank are all-gathered and combined on the host in rank order (the partial states of
//! `reduce::partial`, as streamed chunks combine), so the result does not depend on timing
//! (in one process holding every rank the words are gathered on the host, no collective needed).
//! Integer sums, counts, extrema and exact float sums combine exactly (an exact sum's digits
//! add without rounding, so its value is the one-GPU bits); a plain float sum adds the devices'
//! sums in rank order.

use super::{device_input, uploads, DeviceSet, Shards};
use crate::device::Input;
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
        let (inputs, lengths) = self.local_shards(input.into())?;
        let local_lengths: Vec<usize> = inputs.iter().map(Input::len).collect();
        // Queued on every device first, then read: the devices reduce at the same time.
        let launched = self.per_device(uploads(&inputs), inputs, |dev, input| {
            let data = device_input(dev, input, "reduction input")?;
            let view = data.view();
            let mut plan = ReducePlan::<T>::new(dev, op, options, view.len())?;
            plan.launch(dev.stream(), &view)?;
            Ok((data, plan))
        });
        // Without plans the combine has nothing to read: where the ranks span processes this
        // process's failure is agreed here, else in the combine's gather.
        let (_data, plans): (Vec<_>, Vec<_>) = self.agree(launched)?.into_iter().unzip();
        self.combine_reductions(&plans, Ok(()), &local_lengths, &lengths, op, options)
    }

    /// Makes a [`SetReducePlan`]: every device's [`ReducePlan`] for a shard of its length in
    /// `input` (only the lengths are read), to run on shards of those lengths as often as the
    /// caller likes.
    pub fn reduce_plan<'s, 'a, T: ReduceElement>(
        &'s self,
        input: impl Into<Shards<'a, T>>,
        op: ReduceOp,
        options: ReduceOptions,
    ) -> Result<SetReducePlan<'s, T>> {
        crate::reduce::validate::<T>(&op, &options)?;
        let (inputs, lengths) = self.local_shards(input.into())?;
        let plans = self
            .devices()
            .into_iter()
            .zip(&inputs)
            .map(|(dev, input)| ReducePlan::<T>::new(dev, op, options, input.len()))
            .collect::<Result<Vec<_>>>();
        // Every process keeps its plans, or none does (whose next run the others would wait for).
        let plans = self.agree(plans)?;
        Ok(SetReducePlan { set: self, plans, op, options, lengths })
    }

    /// The result of every device's last launch of `plans` (this process's shards of
    /// `local_lengths`; `lengths`: every rank's), gathered and combined in rank order.
    /// `launched`: whether this process's launches succeeded, carried into the gather.
    fn combine_reductions<T: ReduceElement>(
        &self,
        plans: &[ReducePlan<T>],
        launched: Result<()>,
        local_lengths: &[usize],
        lengths: &[u64],
        op: ReduceOp,
        options: ReduceOptions,
    ) -> Result<Reduction> {
        let k = plans[0].result_words();
        let read = || -> Result<Vec<Vec<u64>>> {
            launched?;
            let mut local = Vec::with_capacity(plans.len());
            for ((plan, &n), dev) in plans.iter().zip(local_lengths).zip(self.devices()) {
                // An empty shard has no result words: zeros stand in, and the combine leaves it out.
                let words = if n == 0 { Vec::new() } else { plan.read_words(dev.stream())? };
                local.push(padded(&words, k));
            }
            Ok(local)
        };
        // A failed launch or read still takes its place in the gather.
        let gathered = self.gather_agreed(read(), k)?;
        let total: u64 = lengths.iter().sum();
        let plan = &plans[0];
        let starts = super::shard::offsets(lengths)?.0;
        let mut state = Partial::<T>::empty(op, options);
        for ((w, &n), first) in gathered.chunks_exact(k).zip(lengths).zip(starts) {
            if n > 0 {
                state = state.then(plan.partial_of(w, first, n)?)?;
            }
        }
        state.finish(op, options, total, "cuda")
    }
}

/// A sharded reduction made once and run on shards of the same lengths as often as the caller
/// likes ([`DeviceSet::reduce_plan`]), as one GPU's caller keeps a [`ReducePlan`]: a call costs
/// each device its launch and the set its combine. The result equals [`DeviceSet::reduce`]'s.
/// The plan borrows its set, as [`super::SetHistogramPlan`] does.
pub struct SetReducePlan<'s, T: ReduceElement> {
    set: &'s DeviceSet,
    plans: Vec<ReducePlan<T>>,
    op: ReduceOp,
    options: ReduceOptions,
    /// Every rank's shard length, in rank order.
    lengths: Vec<u64>,
}

impl<T: ReduceElement> SetReducePlan<'_, T> {
    /// Reduces `input`, shards of the lengths the plan was made for (every process of the set
    /// calls it with its shards, as for [`DeviceSet::reduce`]; where the ranks span processes,
    /// `Local` shards' lengths are gathered again, so that every process refuses other lengths
    /// alike).
    pub fn run<'a>(&mut self, input: impl Into<Shards<'a, T>>) -> Result<Reduction> {
        let set = self.set;
        let (local_lengths, launched) = set.launch_kept_plans(
            input.into(),
            &self.lengths,
            &mut self.plans,
            ("reduces", "elements", "reduction input"),
            |dev, view, plan| plan.launch(dev.stream(), view),
        )?;
        // The uploaded shards live until the results are read.
        let (_data, launched) = match launched {
            Ok(data) => (data, Ok(())),
            Err(e) => (Vec::new(), Err(e)),
        };
        set.combine_reductions(&self.plans, launched, &local_lengths, &self.lengths, self.op, self.options)
    }

    /// The plan without its borrow of the set, as [`super::SetHistogramPlan::detach`].
    pub fn detach(self) -> DetachedSetReducePlan<T> {
        let SetReducePlan { set, plans, op, options, lengths } = self;
        DetachedSetReducePlan { set: set.id, plans, op, options, lengths }
    }
}

/// A [`SetReducePlan`] detached from its set ([`SetReducePlan::detach`]).
pub struct DetachedSetReducePlan<T: ReduceElement> {
    /// The number of the set that made it.
    set: u64,
    plans: Vec<ReducePlan<T>>,
    op: ReduceOp,
    options: ReduceOptions,
    lengths: Vec<u64>,
}

impl<T: ReduceElement> DetachedSetReducePlan<T> {
    /// The plan again, borrowing `set`: an error (and the plan dropped) where another set made it.
    pub fn attach(self, set: &DeviceSet) -> Result<SetReducePlan<'_, T>> {
        set.check_attached(self.set)?;
        let DetachedSetReducePlan { plans, op, options, lengths, .. } = self;
        Ok(SetReducePlan { set, plans, op, options, lengths })
    }
}

/// `w` padded with zeros to `k` words (an empty shard has no words).
fn padded(w: &[u64], k: usize) -> Vec<u64> {
    let mut v = w.to_vec();
    v.resize(k, 0);
    v
}
