//! Several GPUs through NCCL: a [`DeviceSet`] runs each primitive over sharded input, every GPU
//! running the single-GPU plan on its shard, then combines the parts with NCCL collectives
//! (docs/MULTI.md). The devices are those of one process ([`DeviceSet::all`],
//! [`DeviceSet::new`]), or one per process, ranks joined by an NCCL unique id
//! ([`DeviceSet::from_env`]).
//!
//! Results come back to the host, the same in every process of the set.

mod histogram;
pub mod nccl;
pub mod rank;
mod reduce;
mod scan;
mod select;
pub mod shard;

pub use histogram::{DetachedSetHistogramPlan, SetHistogram, SetHistogramPlan};
pub use nccl::{nccl_present, nccl_version, NCCL_LIBRARY};
pub use rank::RankEnv;
pub use reduce::{DetachedSetReducePlan, SetReducePlan};

use crate::device::{CudaDevice, DevPtr, DeviceInput, DeviceOptions, Input};
use crate::error::{Error, Result};
use nccl::{Collective, Combine, Communicator, Word};
use std::sync::Arc;

/// GPUs that compute together: one NCCL communicator per device of this process, each with its
/// rank in the whole set (which may span processes).
#[derive(Debug)]
pub struct DeviceSet {
    comms: Vec<Communicator>,
    world: usize,
    /// This set's number in the process: a detached plan attaches to the set that made it alone.
    id: u64,
}

/// The number of the next device set made in this process.
static NEXT_SET_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn next_set_id() -> u64 {
    NEXT_SET_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The input of a sharded call.
pub enum Shards<'a, T> {
    /// One host array, the same in every process of the set, split evenly over the ranks
    /// ([`shard::split_points`]): each device uploads its part, on its own thread, so that the
    /// copies overlap.
    Split(&'a [T]),
    /// This process's shards, one per device of the set in rank order: host slices (uploaded by
    /// their device) or memory already on that device. Shards may differ in length or be empty;
    /// in rank order they make up the input.
    Local(Vec<Input<'a, T>>),
}

impl<T> Shards<'_, T> {
    /// The whole input's length, for an even split (the same in every process).
    pub(crate) fn split_len(&self) -> Option<usize> {
        match self {
            Shards::Split(s) => Some(s.len()),
            Shards::Local(_) => None,
        }
    }
}

impl<'a, T> From<&'a [T]> for Shards<'a, T> {
    fn from(s: &'a [T]) -> Self {
        Shards::Split(s)
    }
}

impl<'a, T> From<&'a Vec<T>> for Shards<'a, T> {
    fn from(s: &'a Vec<T>) -> Self {
        Shards::Split(s.as_slice())
    }
}

/// How many CUDA devices this host has (an error where the driver or NVRTC is missing).
pub fn device_count() -> Result<usize> {
    crate::device::cuda::libraries_present()?;
    let count = cudarc::driver::CudaContext::device_count()
        .map_err(|e| Error::CudaUnavailable(format!("the driver found no usable device ({e})")))?;
    Ok(count.max(0) as usize)
}

impl DeviceSet {
    /// Every CUDA device of this host, in one process.
    pub fn all() -> Result<DeviceSet> {
        let count = device_count()?;
        if count == 0 {
            return Err(Error::CudaUnavailable("the driver reports no CUDA device".into()));
        }
        DeviceSet::new(&(0..count).collect::<Vec<_>>())
    }

    /// The devices of these ordinals, in one process; ranks follow the order given.
    pub fn new(ordinals: &[usize]) -> Result<DeviceSet> {
        DeviceSet::with_options(ordinals, &DeviceOptions::from_env())
    }

    /// [`DeviceSet::new`], each device opened with `options` (its ordinal replaced).
    pub fn with_options(ordinals: &[usize], options: &DeviceOptions) -> Result<DeviceSet> {
        if ordinals.is_empty() {
            return Err(Error::invalid("a device set needs at least one device"));
        }
        let mut seen = ordinals.to_vec();
        seen.sort_unstable();
        if seen.windows(2).any(|w| w[0] == w[1]) {
            return Err(Error::invalid(format!("device {ordinals:?}: each device may appear once")));
        }
        nccl_present()?;
        let devs = ordinals
            .iter()
            .map(|&ordinal| CudaDevice::with_options(DeviceOptions { ordinal, ..options.clone() }))
            .collect::<Result<Vec<_>>>()?;
        let comms = nccl::init_all(&devs)?;
        Ok(DeviceSet { world: comms.len(), comms, id: next_set_id() })
    }

    /// This process as one rank of a set launched one process per GPU: the rank, world size
    /// and device from `RANK`, `WORLD_SIZE`, `LOCAL_RANK` (torchrun) or their OpenMPI
    /// equivalents, the NCCL unique id from `TALLY_NCCL_ID`, or through the file that
    /// `TALLY_NCCL_ID_FILE` names (rank 0 writes it; the others wait up to
    /// `TALLY_NCCL_TIMEOUT` seconds, default 120).
    pub fn from_env() -> Result<DeviceSet> {
        let env = RankEnv::from_env()?;
        nccl_present()?;
        let id = rank::exchange_id(&env, |name| std::env::var(name).ok(), nccl::new_unique_id)?;
        let dev = CudaDevice::with_options(DeviceOptions { ordinal: env.local_rank, ..DeviceOptions::from_env() })?;
        DeviceSet::from_rank(&dev, env.rank, env.world, id)
    }

    /// `dev` as rank `rank` of `world` ranks joined through the unique id `id` (every rank
    /// passes the same id; this call waits for all of them).
    pub fn from_rank(dev: &Arc<CudaDevice>, rank: usize, world: usize, id: [u8; 128]) -> Result<DeviceSet> {
        if rank >= world {
            return Err(Error::invalid(format!("rank {rank} of a world of {world}")));
        }
        let comm = nccl::init_rank(dev, rank, world, id)?;
        Ok(DeviceSet { comms: vec![comm], world, id: next_set_id() })
    }

    /// A new NCCL unique id, for callers that pass it to the other ranks themselves (as 256 hex
    /// digits: [`rank::id_to_hex`]).
    pub fn unique_id() -> Result<[u8; 128]> {
        nccl::new_unique_id()
    }

    /// The devices of this process, in rank order.
    pub fn devices(&self) -> Vec<&Arc<CudaDevice>> {
        self.comms.iter().map(|c| &c.dev).collect()
    }

    /// The ranks of this process's devices.
    pub fn ranks(&self) -> Vec<usize> {
        self.comms.iter().map(|c| c.rank).collect()
    }

    /// How many ranks (devices) the whole set has, in every process.
    pub fn world_size(&self) -> usize {
        self.world
    }

    /// Waits for the work queued on every device of this process.
    pub fn synchronize(&self) -> Result<()> {
        self.comms.iter().try_for_each(|c| c.dev.stream().synchronize("the device set's work"))
    }

    /// This process's shards, one input per device in rank order.
    pub(crate) fn local_inputs<'a, T>(&self, shards: Shards<'a, T>) -> Result<Vec<Input<'a, T>>> {
        match shards {
            Shards::Split(all) => {
                let p = shard::split_points(all.len(), self.world);
                Ok(self.comms.iter().map(|c| Input::Host(&all[p[c.rank]..p[c.rank + 1]])).collect())
            }
            Shards::Local(inputs) if inputs.len() == self.comms.len() => Ok(inputs),
            Shards::Local(inputs) => Err(Error::invalid(format!(
                "{} shards for the {} devices of this process: one shard per device",
                inputs.len(),
                self.comms.len()
            ))),
        }
    }

    /// Runs `f` once per device of this process, with that device's shard; the results in rank
    /// order, or the first error. With `threads`, each device runs on a thread of its own, so
    /// that blocking host work of different devices (uploads of host shards) overlaps; without,
    /// one after another on this thread, which costs less where `f` only queues work (a
    /// launch is asynchronous, so the devices still compute at the same time).
    pub(crate) fn per_device<I: Send, R: Send>(
        &self,
        threads: bool,
        inputs: Vec<I>,
        f: impl Fn(&Arc<CudaDevice>, I) -> Result<R> + Sync,
    ) -> Result<Vec<R>> {
        if !threads || self.comms.len() == 1 {
            return self.comms.iter().zip(inputs).map(|(c, input)| f(&c.dev, input)).collect();
        }
        std::thread::scope(|s| {
            let f = &f;
            // The communicators stay on this thread: NCCL's handles are not shared across threads.
            let handles: Vec<_> =
                self.devices().into_iter().zip(inputs).map(|(dev, input)| s.spawn(move || f(dev, input))).collect();
            handles.into_iter().map(|h| h.join().expect("a device thread panicked")).collect()
        })
    }

    /// Refuses a detached plan that another set made.
    pub(crate) fn check_attached(&self, made_by: u64) -> Result<()> {
        if made_by != self.id {
            return Err(Error::invalid("this plan was made by another device set"));
        }
        Ok(())
    }

    /// Whether this process holds every rank of the set (one process for all its devices): the
    /// host words of every rank are then here already, and need no collective.
    pub(crate) fn holds_every_rank(&self) -> bool {
        self.comms.len() == self.world
    }

    /// Every rank's `words` (the same count from each device of every process), in rank order,
    /// on the host of every process: an NCCL all-gather of small host values (lengths, counts,
    /// per-device results) where the ranks span processes; gathered here where this process
    /// holds them all.
    pub(crate) fn all_gather_host(&self, local: &[Vec<u64>]) -> Result<Vec<u64>> {
        let k = local.first().map_or(0, Vec::len);
        assert!(local.len() == self.comms.len() && local.iter().all(|w| w.len() == k), "k words from every device");
        if k == 0 {
            return Ok(Vec::new());
        }
        if self.holds_every_rank() {
            let mut out = vec![0u64; k * self.world];
            for (c, words) in self.comms.iter().zip(local) {
                out[c.rank * k..(c.rank + 1) * k].copy_from_slice(words);
            }
            return Ok(out);
        }
        let mut send = Vec::with_capacity(local.len());
        let mut recv = Vec::with_capacity(local.len());
        for (c, words) in self.comms.iter().zip(local) {
            send.push(c.dev.stream().upload(words, "gathered words")?);
            recv.push(c.dev.stream().alloc::<u64>(k * self.world, "gathered words")?);
        }
        let ops: Vec<(usize, Collective)> = self
            .comms
            .iter()
            .zip(send.iter().zip(recv.iter_mut()))
            .enumerate()
            .map(|(i, (c, (s, r)))| {
                let cu = c.dev.stream().cuda_stream();
                let send = s.view().ptr(cu).cast();
                (i, Collective::AllGather { send, recv: r.view_mut().ptr_mut(cu).cast(), count: k, word: Word::U64 })
            })
            .collect();
        nccl::group(&self.comms, &ops, "ncclAllGather")?;
        let out = self.comms[0].dev.stream().download(&recv[0].view())?;
        self.synchronize()?;
        Ok(out)
    }

    /// [`DeviceSet::all_gather_host`] of `k` words from each device (`local`, None where this
    /// process's part of the call failed). Where the ranks span processes, a failed part still
    /// takes its place in the collective, with a status word beside its `k` (so that no process
    /// is left waiting for it), and every process learns of it: [`Error::RankFailed`] names the
    /// lowest rank of the processes that failed (a process marks all its ranks). Every process
    /// must reach the same gathers in the same order, failed or not: `k` depends only on what
    /// every process knows. In one process holding every rank no collective waits, and a
    /// failure is the caller's to return.
    fn gather_with_status(&self, local: Option<&[Vec<u64>]>, k: usize) -> Result<Vec<u64>> {
        if self.holds_every_rank() {
            return match local {
                Some(words) => self.all_gather_host(words),
                None => Err(Error::RankFailed { rank: self.comms[0].rank }),
            };
        }
        let words: Vec<Vec<u64>> = match local {
            Some(words) => {
                debug_assert!(words.iter().all(|w| w.len() == k), "{k} words from every device");
                words.iter().map(|w| w.iter().copied().chain([0]).collect()).collect()
            }
            None => vec![vec![0; k].into_iter().chain([1]).collect(); self.comms.len()],
        };
        let gathered = self.all_gather_host(&words)?;
        if let Some(rank) = gathered.chunks_exact(k + 1).position(|w| w[k] != 0) {
            return Err(Error::RankFailed { rank });
        }
        Ok(gathered.chunks_exact(k + 1).flat_map(|w| &w[..k]).copied().collect())
    }

    /// Every rank's `k` words (see [`DeviceSet::gather_with_status`]) where this process's
    /// part may have failed: its own error where it did, else the first failed rank's
    /// [`Error::RankFailed`], else the words.
    pub(crate) fn gather_agreed(&self, local: Result<Vec<Vec<u64>>>, k: usize) -> Result<Vec<u64>> {
        let gathered = self.gather_with_status(local.as_ref().ok().map(Vec::as_slice), k);
        local?;
        gathered
    }

    /// `local`, this process's part of a call, with every rank's `k` words, which `words` reads
    /// from it (see [`DeviceSet::gather_with_status`]): this process's own error where its part
    /// failed, else the first failed rank's [`Error::RankFailed`], else both.
    pub(crate) fn gather_with<R>(
        &self,
        local: Result<R>,
        k: usize,
        words: impl FnOnce(&R) -> Vec<Vec<u64>>,
    ) -> Result<(R, Vec<u64>)> {
        let own = local.as_ref().ok().map(words);
        let gathered = self.gather_with_status(own.as_deref(), k);
        let r = local?;
        Ok((r, gathered?))
    }

    /// Before a collective that a failed rank would leave the others waiting in: where the
    /// ranks span processes, whether every rank's part of the call so far succeeded (a gather
    /// of one status word a rank); `local` as it is in one process holding every rank.
    pub(crate) fn agree<R>(&self, local: Result<R>) -> Result<R> {
        if self.holds_every_rank() {
            return local;
        }
        self.gather_with(local, 0, |_| vec![Vec::new(); self.comms.len()]).map(|(r, _)| r)
    }

    /// This process's shards (one input per device, in rank order) and every rank's shard
    /// length, in rank order: known here for an even split of the same host array (which no
    /// process can refuse), gathered from the other processes otherwise, every process
    /// stopping alike where any process's shards do not fit its devices.
    pub(crate) fn local_shards<'a, T>(&self, shards: Shards<'a, T>) -> Result<(Vec<Input<'a, T>>, Vec<u64>)> {
        if let Some(n) = shards.split_len() {
            let lengths = shard::split_points(n, self.world).windows(2).map(|w| (w[1] - w[0]) as u64).collect();
            return Ok((self.local_inputs(shards)?, lengths));
        }
        self.gather_with(self.local_inputs(shards), 1, |i| i.iter().map(|x| vec![x.len() as u64]).collect())
    }

    /// Adds `count` words at each device's address across the whole
    /// set, in place: every rank ends with the combined words. `ptrs[i]` is on device `i`.
    pub(crate) fn all_reduce_in_place(
        &self,
        ptrs: &[DevPtr<u8>],
        count: usize,
        word: Word,
        op: Combine,
        what: &str,
    ) -> Result<()> {
        let ops: Vec<(usize, Collective)> = ptrs
            .iter()
            .enumerate()
            .map(|(i, &p)| (i, Collective::AllReduce { send: p, recv: p, count, word, op }))
            .collect();
        nccl::group(&self.comms, &ops, what)
    }

    /// The launches of a kept set plan's run: checks that `shards` have the lengths its plans
    /// were made for (`planned`, every rank's; `Local` shards' lengths gathered again where the
    /// ranks span processes, so that every process refuses other lengths alike), then hands
    /// each device its shard (uploaded where it is host memory, labelled `label`) and its plan.
    /// The launches' outcome is this process's alone: the caller carries it into its combine's
    /// first collective ([`DeviceSet::gather_agreed`] or [`DeviceSet::agree`]), where every
    /// process learns whether every rank's uploads and launches succeeded. Returns this
    /// process's shard lengths, and the launches' outcome: the shards' device copies, which must
    /// outlive the launches (they are freed in stream order).
    pub(crate) fn launch_kept_plans<'a, T: cudarc::driver::DeviceRepr + Sync, P: Send>(
        &self,
        shards: Shards<'a, T>,
        planned: &[u64],
        plans: &mut [P],
        what: (&str, &str, &str),
        launch: impl Fn(&Arc<CudaDevice>, &crate::device::DeviceView<'_, T>, &mut P) -> Result<()> + Sync,
    ) -> Result<(Vec<usize>, KeptLaunch<'a, T>)> {
        let (verb, unit, label) = what;
        let (inputs, lengths) = self.local_shards(shards)?;
        if lengths != planned {
            return Err(Error::invalid(format!(
                "this plan {verb} shards of {planned:?} {unit}, but shards of {lengths:?} were given"
            )));
        }
        let local: Vec<usize> = inputs.iter().map(Input::len).collect();
        let threads = uploads(&inputs);
        let work: Vec<_> = inputs.into_iter().zip(plans.iter_mut()).collect();
        let data = self.per_device(threads, work, |dev, (input, plan)| {
            let data = device_input(dev, input, label)?;
            launch(dev, &data.view(), plan)?;
            Ok(data)
        });
        Ok((local, data))
    }

    /// The communicators of this process, for combines of their own.
    pub(crate) fn comms(&self) -> &[Communicator] {
        &self.comms
    }
}

/// What a kept set plan's launches left in this process: the shards' device copies, or its
/// failure, which the run carries into its combine's first collective.
pub(crate) type KeptLaunch<'a, T> = Result<Vec<DeviceInput<'a, T>>>;

/// Whether any shard is host memory to upload: then the devices take their shards on threads
/// of their own, so that the copies overlap (see [`DeviceSet::per_device`]).
pub(crate) fn uploads<T>(inputs: &[Input<'_, T>]) -> bool {
    inputs.iter().any(|i| matches!(i, Input::Host(s) if !s.is_empty()))
}

/// A device view of a shard: uploads a host slice (kept in the returned buffer) or borrows
/// device memory.
pub(crate) fn device_input<'a, T: cudarc::driver::DeviceRepr>(
    dev: &CudaDevice,
    input: Input<'a, T>,
    what: &str,
) -> Result<DeviceInput<'a, T>> {
    DeviceInput::new(dev.stream(), input, what)
}
