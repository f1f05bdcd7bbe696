//! Sharded selection (stable): each device selects from its shard with the single-GPU plan,
//! the kept counts are all-gathered into each shard's output offset, and each shard's kept
//! elements are broadcast into place, so that every rank holds the whole selection in input
//! order: the one-GPU result.

use super::nccl::{self, Collective, Word};
use super::{device_input, shard, DeviceSet, Shards};
use crate::error::Result;
use crate::predicate::Predicate;
use crate::select::{SelectElement, SelectMode, SelectPlan};

impl DeviceSet {
    /// The elements of the sharded `input` that pass `predicate`, in order (see
    /// [`crate::Backend::select`]), on the host.
    pub fn select<'a, T: SelectElement>(
        &self,
        input: impl Into<Shards<'a, T>>,
        predicate: &Predicate,
    ) -> Result<Vec<T>> {
        predicate.bind::<T>()?;
        // On threads: each device waits for its count of kept elements. Where the ranks span
        // processes, a process whose shards or selection failed still takes its place in the
        // gather of the counts, and in the check that every rank could hold the whole selection,
        // so that none waits in the broadcasts for it.
        let kept = self.local_inputs(input.into()).and_then(|inputs| {
            self.per_device(true, inputs, |dev, input| {
                let data = device_input(dev, input, "select input")?;
                let view = data.view();
                SelectPlan::<T>::new(dev, predicate, SelectMode::Stable, view.len())?.run(&view)
            })
        });
        let (mut kept, counts) = self.gather_with(kept, 1, |kept| kept.iter().map(|(_, n)| vec![*n]).collect())?;
        let (starts, total) = shard::offsets(&counts)?;
        let size = std::mem::size_of::<T>();
        let devs = self.devices();
        let whole = devs.iter().map(|dev| dev.stream().alloc::<T>(total as usize, "selection")).collect();
        let mut whole: Vec<_> = self.agree(whole)?;
        let ranks = self.ranks();
        let mut ops = Vec::new();
        for (root, (&count, &start)) in counts.iter().zip(&starts).enumerate() {
            if count == 0 {
                continue;
            }
            for (i, (dev, w)) in devs.iter().zip(whole.iter_mut()).enumerate() {
                let cu = dev.stream().cuda_stream();
                let recv = w.view_mut().ptr_mut(cu).cast::<u8>().offset(start * size as u64);
                // Only the root's send buffer is read; the others pass their own address.
                let send = if ranks[i] == root { kept[i].0.view().ptr(cu).cast() } else { recv };
                let count = count as usize * size;
                ops.push((i, Collective::Broadcast { send, recv, count, word: Word::U8, root }));
            }
        }
        nccl::group(self.comms(), &ops, "ncclBroadcast(selection)")?;
        let out = devs[0].stream().download(&whole[0].view())?;
        self.synchronize()?;
        kept.clear();
        Ok(out)
    }
}
