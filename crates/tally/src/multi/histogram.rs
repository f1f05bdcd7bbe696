//! Sharded histograms: each device counts its shard with the single-GPU plan, then the
//! counters and outlier counters are added across the set by an NCCL all-reduce in place. The
//! counts are integers, so the result equals one GPU's exactly; weighted histograms in fixed
//! point use one scale for the whole set (the largest weight of every shard, the total count),
//! so their sums are the one-GPU bits too.

use super::nccl::{self, Collective, Combine, Word};
use super::{device_input, uploads, DeviceSet, Shards};
use crate::device::staging::streams_host_input;
use crate::device::{Backend, CudaDevice, DevPtr, DeviceBuffer, DeviceView, Input, SliceSource};
use crate::error::{Error, Result};
use crate::histogram::cuda::{counter_bytes_for, posts_counts_under};
use crate::histogram::cuda_general::{GeneralInput, GeneralPlan, GeneralSpec};
use crate::histogram::stream::add_histogram;
use crate::histogram::weighted::{FixedScale, ValueKind, Weight};
use crate::histogram::{
    Accumulation, Histogram, Histogram2d, Histogram2dSpec, HistogramPlan, HistogramSpec, Strategy, WeightedHistogram,
    WeightedOptions,
};
use crate::sample::Sample;
use std::sync::Arc;

/// The address of a whole buffer, seen as bytes, on `dev`'s stream.
fn address<T>(dev: &CudaDevice, b: &mut DeviceBuffer<T>) -> DevPtr<u8> {
    b.view_mut().ptr_mut(dev.stream().cuda_stream()).cast()
}

/// Each device's copy of its shard (kept until the counting has read it) and its plan, queued.
type CountedShards<'a, T> = (Vec<crate::device::DeviceInput<'a, T>>, Vec<HistogramPlan<T>>);

/// How a sharded histogram's counters are combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CounterCombine {
    /// An all-reduce in place of every device's counters, words of this width.
    AllReduce(Word),
    /// Every device's counts gathered to the host as 64-bit words and added there.
    Host,
}

/// The combine for shards of these lengths (every rank's, in rank order). It depends on the
/// lengths alone, which every process knows, so that all processes enter the same collectives: a
/// shard of 2^32 samples or more counts in 64-bit words (as [`HistogramPlan`] decides), a shorter
/// one in 32-bit words. All wide: a 64-bit all-reduce; all narrow and fewer than 2^32 samples in
/// all: a 32-bit one; otherwise (mixed widths, or 32-bit sums that could overflow) the host.
fn counter_combine(lengths: &[u64]) -> CounterCombine {
    let wide = |&l: &u64| counter_bytes_for(l) == 8;
    let total = lengths.iter().try_fold(0u64, |t, &l| t.checked_add(l));
    if lengths.iter().all(wide) {
        CounterCombine::AllReduce(Word::U64)
    } else if !lengths.iter().any(wide) && total.is_some_and(|t| t < 1 << 32) {
        CounterCombine::AllReduce(Word::U32)
    } else {
        CounterCombine::Host
    }
}

/// A sharded histogram whose combined counters stay on the devices
/// ([`DeviceSet::histogram_on_devices`]): once the devices' streams have run, every device of
/// this process holds the counts of the whole input, for kernels of the caller's that read
/// them in place; [`SetHistogram::read`] brings them to the host.
pub struct SetHistogram<T: Sample> {
    plans: Vec<HistogramPlan<T>>,
    devices: Vec<Arc<CudaDevice>>,
    /// Where the counters could not be all-reduced (shards of both counter widths, or 32-bit
    /// sums that could overflow) or the shards were streamed from the host: the combined
    /// counts, already on the host.
    on_host: Option<Histogram>,
}

impl<T: Sample> SetHistogram<T> {
    /// The combined histogram on the host (waits for the devices).
    pub fn read(&self) -> Result<Histogram> {
        if let Some(h) = &self.on_host {
            return Ok(h.clone());
        }
        read_all_reduced(&self.plans, &self.devices)
    }

    /// Device `i`'s combined counters in place (this process's devices in rank order): one
    /// little-endian counter of [`SetHistogram::counter_bytes`] per bin and selected channel,
    /// channel-major; the outlier counters (below, above, NaN per channel) beside them. None
    /// where the counts were combined on the host.
    pub fn counters(&self, i: usize) -> Option<(DeviceView<'_, u8>, DeviceView<'_, u64>)> {
        (self.on_host.is_none()).then(|| self.plans[i].counters())
    }

    /// Bytes of one counter on the devices (4, or 8 where the shards hold 2^32 samples or
    /// more; 8 where the counts were combined on the host).
    pub fn counter_bytes(&self) -> usize {
        self.plans.first().map_or(8, HistogramPlan::counter_bytes)
    }

    /// Waits for the counting and the combine on every device of this process.
    pub fn synchronize(&self) -> Result<()> {
        self.devices.iter().try_for_each(|d| d.stream().synchronize("the device set's histogram"))
    }
}

/// The counts once every device's counters hold the whole set's (all-reduced): the first
/// device's, read, after which every device of this process is waited for.
fn read_all_reduced<T: Sample, D: AsRef<CudaDevice>>(plans: &[HistogramPlan<T>], devices: &[D]) -> Result<Histogram> {
    let h = plans[0].read(devices[0].as_ref().stream())?;
    devices.iter().try_for_each(|d| d.as_ref().stream().synchronize("the device set's histogram"))?;
    Ok(h)
}

/// Queues `plan`'s counting of `samples` on its device's stream: posting its counts to the host
/// for a read of each device, or not, for a combine on the devices.
fn queue_counting<T: Sample>(
    plan: &mut HistogramPlan<T>,
    dev: &CudaDevice,
    samples: &DeviceView<'_, T>,
    post: bool,
) -> Result<()> {
    if post {
        plan.launch(dev.stream(), samples)
    } else {
        plan.launch_unposted(dev.stream(), samples)
    }
}

/// How a set's plan combines its devices' counts, chosen when it is made.
#[derive(Clone, Copy, Debug)]
enum SetCombine {
    /// Each device posts its counts with its outliers; they are read and added on the host (one
    /// process holds every rank: [`DeviceSet::histogram_combines_on_host`]).
    Posted,
    /// As [`DeviceSet::histogram_on_devices`] combines them.
    Counters(CounterCombine),
}

/// A sharded histogram made once and run on shards of the same lengths as often as the caller
/// likes ([`DeviceSet::histogram_plan`]), as one GPU's caller keeps a [`HistogramPlan`]: each
/// device keeps its plan (kernel, counters, read-back), so that a call costs each device its
/// launch and the set its combine, and no device waits while the host makes the next one's
/// plan. The counts equal [`DeviceSet::histogram`]'s.
///
/// The plan borrows its set (a one-GPU plan holds its device by `Arc`): keep the set where the
/// plan can see it.
pub struct SetHistogramPlan<'s, T: Sample> {
    set: &'s DeviceSet,
    plans: Vec<HistogramPlan<T>>,
    /// Every rank's shard length, in rank order.
    lengths: Vec<u64>,
    combine: SetCombine,
}

impl<T: Sample> SetHistogramPlan<'_, T> {
    /// Counts `samples`, shards of the lengths the plan was made for, and combines the counts
    /// (every process of the set calls it with its shards, as for [`DeviceSet::histogram`]:
    /// where the ranks span processes, `Local` shards' lengths are gathered again, so that every
    /// process refuses shards of other lengths alike). Host shards are uploaded whole, even
    /// where the plan was made from resident shards and these would stream.
    pub fn run<'a>(&mut self, samples: impl Into<Shards<'a, T>>) -> Result<Histogram> {
        let set = self.set;
        let post = matches!(self.combine, SetCombine::Posted);
        let (_, launched) = set.launch_kept_plans(
            samples.into(),
            &self.lengths,
            &mut self.plans,
            ("counts", "samples", "samples"),
            |dev, view, plan| queue_counting(plan, dev, view, post),
        )?;
        // Where the ranks span processes, every process learns whether every rank's launches
        // succeeded before the combine's collectives (posted counts: one process, none).
        let data = set.agree(launched)?;
        let h = match self.combine {
            SetCombine::Posted => set.add_posted_counts(&self.plans)?,
            SetCombine::Counters(CounterCombine::Host) => set.histogram_on_host(&self.plans)?,
            SetCombine::Counters(CounterCombine::AllReduce(word)) => {
                set.all_reduce_counters(&mut self.plans, word)?;
                read_all_reduced(&self.plans, &set.devices())?
            }
        };
        // Uploaded shards are freed in stream order, after the counting has read them.
        drop(data);
        Ok(h)
    }

    /// Whether a run adds the devices' posted counts on the host (tests: the path that ran).
    #[doc(hidden)]
    pub fn combines_posted_counts(&self) -> bool {
        matches!(self.combine, SetCombine::Posted)
    }

    /// The plan without its borrow of the set, for a caller that keeps plans beside their set
    /// (in one struct, say); [`DetachedSetHistogramPlan::attach`] gives it back.
    pub fn detach(self) -> DetachedSetHistogramPlan<T> {
        DetachedSetHistogramPlan { set: self.set.id, plans: self.plans, lengths: self.lengths, combine: self.combine }
    }
}

/// A [`SetHistogramPlan`] detached from its set ([`SetHistogramPlan::detach`]): its devices'
/// plans, kept, and nothing to run until it is attached to the set that made it again.
pub struct DetachedSetHistogramPlan<T: Sample> {
    /// The number of the set that made it.
    set: u64,
    plans: Vec<HistogramPlan<T>>,
    lengths: Vec<u64>,
    combine: SetCombine,
}

impl<T: Sample> DetachedSetHistogramPlan<T> {
    /// The plan again, borrowing `set`: an error (and the plan dropped) where another set made it.
    pub fn attach(self, set: &DeviceSet) -> Result<SetHistogramPlan<'_, T>> {
        set.check_attached(self.set)?;
        Ok(SetHistogramPlan { set, plans: self.plans, lengths: self.lengths, combine: self.combine })
    }
}

impl DeviceSet {
    /// Counts the sharded `samples` into the bins of `spec` (see [`crate::Backend::histogram`]);
    /// the counts equal one GPU's over the whole input.
    ///
    /// Where this process holds every device and each device's plan posts its counters to the
    /// host ([`DeviceSet::histogram_combines_on_host`]), and no shard streams from the host,
    /// each device's counts are read as its counting ends and added on the host: no
    /// collective. Otherwise as [`DeviceSet::histogram_on_devices`], then read.
    pub fn histogram<'a, T: Sample>(
        &self,
        samples: impl Into<Shards<'a, T>>,
        spec: &HistogramSpec,
        strategy: Strategy,
    ) -> Result<Histogram> {
        spec.validate()?;
        let shards = samples.into();
        if !self.holds_every_rank() {
            return self.histogram_on_devices(shards, spec, strategy)?.read();
        }
        let (inputs, lengths) = self.local_shards(shards)?;
        if !self.histogram_combines_on_host(&lengths, spec) || self.any_streamed(&inputs) {
            return self.histogram_on_devices(Shards::Local(inputs), spec, strategy)?.read();
        }
        // Each device's counting queued (posting), then each read in rank order. Resident shards
        // are queued from this thread: plans made on pool threads, one a device, measured slower
        // and less steady on two H200s (1.27-1.77x against 1.84-1.87x, docs/PERF.md v32).
        let (_data, plans) = self.count_shards(inputs, spec, strategy, true)?;
        self.add_posted_counts(&plans)
    }

    /// Makes a [`SetHistogramPlan`]: every device's [`HistogramPlan`] for its shard of
    /// `samples` (`auto`, the 16-bit and the pass strategies probe each shard for skew, as one
    /// device's plan does: host shards are uploaded for that, here and at every run), to run on
    /// these shards or others of the same lengths as often as the caller likes. In a process
    /// that holds every rank, a host shard large enough that its device would stream it is
    /// refused ([`DeviceSet::histogram`] streams it).
    pub fn histogram_plan<'s, 'a, T: Sample>(
        &'s self,
        samples: impl Into<Shards<'a, T>>,
        spec: &HistogramSpec,
        strategy: Strategy,
    ) -> Result<SetHistogramPlan<'s, T>> {
        spec.validate()?;
        let shards = samples.into();
        // The lengths first: where the ranks span processes they are gathered, and every
        // process must enter that before any may refuse.
        let (inputs, lengths) = self.local_shards(shards)?;
        // As `histogram` streams such shards (in a process that holds every rank; across
        // processes each shard is uploaded whole, here too).
        if self.holds_every_rank() && self.any_streamed(&inputs) {
            return Err(Error::invalid(
                "a host shard this large streams through its device: DeviceSet::histogram counts it, a set's plan \
                 takes shards that one upload holds",
            ));
        }
        let combine = if self.histogram_combines_on_host(&lengths, spec) {
            SetCombine::Posted
        } else {
            SetCombine::Counters(counter_combine(&lengths))
        };
        let plans = self.per_device(uploads(&inputs), inputs, |dev, input| {
            let data = device_input(dev, input, "samples")?;
            HistogramPlan::<T>::new(dev, &data.view(), spec, strategy, dev.tuning())
        });
        // Every process keeps its plans, or none does (whose next run the others would wait for).
        let plans = self.agree(plans)?;
        Ok(SetHistogramPlan { set: self, plans, lengths, combine })
    }

    /// Reads every device's posted counts, in rank order, and adds them on the host.
    fn add_posted_counts<T: Sample>(&self, plans: &[HistogramPlan<T>]) -> Result<Histogram> {
        let mut total: Option<Histogram> = None;
        for (plan, dev) in plans.iter().zip(self.devices()) {
            let h = plan.read(dev.stream())?;
            match &mut total {
                None => total = Some(h),
                Some(t) => add_histogram(t, &h)?,
            }
        }
        Ok(total.expect("a device set has a device"))
    }

    /// [`DeviceSet::histogram`], the combined counters left on the devices: returns once the
    /// counting and the combine are queued (or, where the counts must be combined on the
    /// host, done). Where the ranks span processes, the counting is done first: the ranks
    /// agree that every one of them queued its counting before any queues the all-reduce
    /// (a gather behind the counting on each device's stream).
    pub fn histogram_on_devices<'a, T: Sample>(
        &self,
        samples: impl Into<Shards<'a, T>>,
        spec: &HistogramSpec,
        strategy: Strategy,
    ) -> Result<SetHistogram<T>> {
        spec.validate()?;
        let shards = samples.into();
        let (inputs, lengths) = self.local_shards(shards)?;
        let combine = counter_combine(&lengths);
        let devices: Vec<Arc<CudaDevice>> = self.devices().into_iter().cloned().collect();
        // Host shards that one device would stream (above its tuned threshold) stream here too,
        // each device through pinned buffers of its own, and the counts add on the host. Only
        // where this process holds every rank: every process must choose the same combine.
        if self.holds_every_rank() && self.any_streamed(&inputs) {
            let parts = self.per_device(true, inputs, |dev, input| match input {
                Input::Host(s) => Backend::Cuda(dev.clone()).histogram_stream(&mut SliceSource::new(s), spec, strategy),
                input => {
                    let data = device_input(dev, input, "samples")?;
                    let view = data.view();
                    HistogramPlan::<T>::new(dev, &view, spec, strategy, dev.tuning())?.run(&view)
                }
            })?;
            let mut total = parts[0].clone();
            for h in &parts[1..] {
                add_histogram(&mut total, h)?;
            }
            return Ok(SetHistogram { plans: Vec::new(), devices, on_host: Some(total) });
        }
        // Each device counts its shard; only queued (a plan's skew probe waits for its own
        // device alone), so that the devices count at the same time.
        let (data, mut plans) = self.agree(self.count_shards(inputs, spec, strategy, false))?;
        let word = match combine {
            CounterCombine::Host => {
                let h = self.histogram_on_host(&plans)?;
                return Ok(SetHistogram { plans, devices, on_host: Some(h) });
            }
            CounterCombine::AllReduce(word) => word,
        };
        self.all_reduce_counters(&mut plans, word)?;
        // The shards' device copies are freed in stream order, after the counting has read them.
        drop(data);
        Ok(SetHistogram { plans, devices, on_host: None })
    }

    /// Queues, on each device's stream after its counting, the all-reduce in place of every
    /// plan's counters (words of `word`: 32 or 64 bits) and outlier counters: one NCCL group,
    /// one launch per device, not two.
    fn all_reduce_counters<T: Sample>(&self, plans: &mut [HistogramPlan<T>], word: Word) -> Result<()> {
        let width = if word == Word::U32 { 4 } else { 8 };
        debug_assert!(plans.iter().all(|p| p.counter_bytes() == width), "counter widths follow the shard lengths");
        let mut ops = Vec::with_capacity(2 * plans.len());
        for (i, (plan, dev)) in plans.iter_mut().zip(self.devices()).enumerate() {
            let (c, o) = plan.counters_mut();
            let (count, outliers) = (c.len() / width, o.len());
            let (c, o) = (address(dev, c), address(dev, o));
            ops.push((i, Collective::AllReduce { send: c, recv: c, count, word, op: Combine::Sum }));
            let outlier_sum =
                Collective::AllReduce { send: o, recv: o, count: outliers, word: Word::U64, op: Combine::Sum };
            ops.push((i, outlier_sum));
        }
        nccl::group(self.comms(), &ops, "ncclAllReduce(counters)")
    }

    /// Whether [`DeviceSet::histogram`] of resident shards of these lengths (every rank's, in
    /// rank order) into the bins of `spec` adds the devices' counts on the host rather than
    /// all-reducing them: in a process that holds every rank, where every device's plan would
    /// post its counters if it is one-pass (`HistogramPlan::posts_counts`: they fit a read-back
    /// and the device's tuning lets them; a plan of several passes or the partition copies them
    /// instead, still added on the host). The counter width follows each shard's length, as the
    /// plan's does.
    #[doc(hidden)]
    pub fn histogram_combines_on_host(&self, lengths: &[u64], spec: &HistogramSpec) -> bool {
        let slots = spec.channels.selected.len();
        let width = spec.bins.count() * slots;
        let devices = self.devices();
        self.holds_every_rank()
            && lengths.len() == devices.len()
            && lengths
                .iter()
                .zip(devices)
                .all(|(&len, dev)| posts_counts_under(dev.tuning(), 3 * slots, width * counter_bytes_for(len)))
    }

    /// Whether any of this process's host shards is above its device's streaming threshold.
    fn any_streamed<T>(&self, inputs: &[Input<'_, T>]) -> bool {
        inputs.iter().zip(self.devices()).any(|(input, dev)| match input {
            Input::Host(s) => streams_host_input(dev.info().total_memory, std::mem::size_of_val(*s), dev.tuning()),
            Input::Device(_) => false,
        })
    }

    /// Each device's plan for its shard, queued (a plan's skew probe waits for its own device
    /// alone), with the shard's device copy, which must outlive the counting: `post` launches
    /// the plans that post their result to the host, for a read of each; otherwise unposted,
    /// for a combine on the devices.
    fn count_shards<'a, T: Sample>(
        &self,
        inputs: Vec<Input<'a, T>>,
        spec: &HistogramSpec,
        strategy: Strategy,
        post: bool,
    ) -> Result<CountedShards<'a, T>> {
        let made = self.per_device(uploads(&inputs), inputs, |dev, input| {
            let data = device_input(dev, input, "samples")?;
            let view = data.view();
            let mut plan = HistogramPlan::<T>::new(dev, &view, spec, strategy, dev.tuning())?;
            queue_counting(&mut plan, dev, &view, post)?;
            Ok((data, plan))
        })?;
        Ok(made.into_iter().unzip())
    }

    /// Milliseconds of the all-reduce that combines `counters` 32-bit histogram counters across
    /// the set (the median of `reps`, after one warm-up), on zeroed buffers of that size: what the
    /// combine of a histogram of that many bins costs at the least.
    pub fn time_counter_all_reduce(&self, counters: usize, reps: usize) -> Result<f64> {
        let devs = self.devices();
        let buffers =
            devs.iter().map(|d| d.stream().alloc_zeros::<u32>(counters.max(1), "all-reduce timing")).collect();
        let mut buffers: Vec<_> = self.agree(buffers)?;
        let ptrs: Vec<DevPtr<u8>> = buffers.iter_mut().zip(&devs).map(|(b, d)| address(d, b)).collect();
        let mut times = Vec::with_capacity(reps.max(1));
        for rep in 0..=reps.max(1) {
            self.synchronize()?;
            let start = std::time::Instant::now();
            self.all_reduce_in_place(&ptrs, counters.max(1), Word::U32, Combine::Sum, "ncclAllReduce(timing)")?;
            self.synchronize()?;
            if rep > 0 {
                times.push(start.elapsed().as_secs_f64() * 1e3);
            }
        }
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }

    /// The combine where the devices' counters differ in width (shards on both sides of 2^32
    /// samples) or 32-bit counters could overflow: every device's counts as 64-bit words on the
    /// host, gathered and added in rank order.
    fn histogram_on_host<T: Sample>(&self, plans: &[HistogramPlan<T>]) -> Result<Histogram> {
        let devs = self.devices();
        let mut hists = Vec::with_capacity(plans.len());
        let mut read = || -> Result<Vec<Vec<u64>>> {
            let mut words = Vec::with_capacity(plans.len());
            for (plan, dev) in plans.iter().zip(&devs) {
                let h = plan.read(dev.stream())?;
                let mut w: Vec<u64> = h.counts.iter().flatten().copied().collect();
                w.extend(h.below.iter().chain(&h.above).chain(&h.nan));
                words.push(w);
                hists.push(h);
            }
            Ok(words)
        };
        // The same count of words on every rank (a counter a bin and channel, three outlier
        // counts a channel), whether this process's reads succeeded or not.
        let (counters, outliers) = plans[0].counters();
        let k = counters.len() / plans[0].counter_bytes() + outliers.len();
        let all = self.gather_agreed(read(), k)?;
        let mut sum = vec![0u64; k];
        for rank in all.chunks_exact(k) {
            for (s, &x) in sum.iter_mut().zip(rank) {
                *s = s.checked_add(x).ok_or_else(|| Error::Overflow("a bin holds more than 2^64 samples".into()))?;
            }
        }
        let mut h = hists.swap_remove(0);
        let mut it = sum.into_iter();
        for v in h.counts.iter_mut().flatten().chain(&mut h.below).chain(&mut h.above).chain(&mut h.nan) {
            *v = it.next().expect("one word per counter");
        }
        Ok(h)
    }

    /// Sums the sharded `weights` (one per sample, sharded as the samples are) into the bins of
    /// `spec` (see [`crate::Backend::histogram_weighted`]). Fixed point (the default): the one-GPU
    /// bits. Float accumulation: each device's sums added across the set, so the rounding
    /// differs from one GPU's as it differs from run to run. Exact sums run on one device only
    /// ([`Error::Unsupported`] here).
    pub fn histogram_weighted<'a, 'b, T: Sample, W: Weight>(
        &self,
        samples: impl Into<Shards<'a, T>>,
        weights: impl Into<Shards<'b, W>>,
        spec: &HistogramSpec,
        options: WeightedOptions,
    ) -> Result<WeightedHistogram> {
        spec.validate()?;
        let general = GeneralSpec::OneD(spec.clone());
        let plans = self.general_inner(samples.into(), None, weights.into(), true, &general, options)?;
        let h = plans[0].read_weighted(self.devices()[0].stream(), spec)?;
        drop(plans);
        Ok(h)
    }

    /// The 2-D histogram of the sharded pairs `(x[i], y[i])`, counted (`weights` None) or weighted
    /// (see [`crate::Backend::histogram_2d`]); `x`, `y` and the weights are sharded alike.
    pub fn histogram_2d<'a, 'b, T: Sample, W: Weight>(
        &self,
        x: impl Into<Shards<'a, T>>,
        y: impl Into<Shards<'a, T>>,
        weights: Option<Shards<'b, W>>,
        spec: &Histogram2dSpec,
        options: WeightedOptions,
    ) -> Result<Histogram2d> {
        spec.validate()?;
        let general = GeneralSpec::TwoD(spec.clone());
        let weighted = weights.is_some();
        let weights = weights.unwrap_or(Shards::Split(&[]));
        let plans = self.general_inner(x.into(), Some(y.into()), weights, weighted, &general, options)?;
        let h = plans[0].read_2d(self.devices()[0].stream(), spec)?;
        drop(plans);
        Ok(h)
    }

    /// Runs the weighted or 2-D plan on every shard and adds the accumulators across the set.
    fn general_inner<'a, 'b, T: Sample, W: Weight>(
        &self,
        x: Shards<'a, T>,
        y: Option<Shards<'a, T>>,
        weights: Shards<'b, W>,
        weighted: bool,
        spec: &GeneralSpec,
        options: WeightedOptions,
    ) -> Result<Vec<GeneralPlan<T, W>>> {
        // Exact sums keep each key's 128-bit digit sums as two u64 words, which an all-reduce of
        // u64 words would add without the carry between them.
        if weighted && options.accumulation == Accumulation::Exact {
            return Err(Error::Unsupported {
                what: "exact weighted sums on a device set".into(),
                why: "they run on one device: use a single CUDA backend, or fixed point (equal bits on a set)".into(),
            });
        }
        let (xs, lengths) = self.local_shards(x)?;
        let total: u64 = lengths.iter().sum();
        // Phase 1: each device uploads its shard (x, and y and the weights, which must fit this
        // process's devices and pair with x's) and finds its weights' largest magnitude. A
        // failure anywhere in it takes its place in the next collective (the gather of the
        // weights' magnitudes, or, counted, the status gather before the all-reduces), so that
        // no process waits there for this one.
        let uploaded = (|| -> Result<Vec<ShardData<'_, T, W>>> {
            let ys = y.map(|y| self.local_inputs(y)).transpose()?;
            let ws = if weighted { Some(self.local_inputs(weights)?) } else { None };
            for (i, xi) in xs.iter().enumerate() {
                let other = |what: &str, len: usize| {
                    (len != xi.len()).then(|| {
                        Error::invalid(format!("shard {i}: {} samples but {len} {what}: they must pair up", xi.len()))
                    })
                };
                if let Some(e) = ys.as_ref().and_then(|ys| other("y values", ys[i].len())) {
                    return Err(e);
                }
                if let Some(e) = ws.as_ref().and_then(|ws| other("weights", ws[i].len())) {
                    return Err(e);
                }
            }
            let mut ys = ys.map(|v| v.into_iter());
            let mut ws = ws.map(|v| v.into_iter());
            let shards: Vec<_> = xs
                .into_iter()
                .map(|x| (x, ys.as_mut().and_then(Iterator::next), ws.as_mut().and_then(Iterator::next)))
                .collect();
            // On threads where a shard is uploaded or weights are scanned for their largest
            // magnitude (both wait for their device).
            let host = |i: &Input<'_, T>| uploads(std::slice::from_ref(i));
            let threads = weighted || shards.iter().any(|(x, y, _)| host(x) || y.as_ref().is_some_and(host));
            self.per_device(threads, shards, |dev, (x, y, w)| ShardData::<T, W>::upload(dev, x, y, w))
        })();
        let devs = self.devices();
        let (parts, gathered) = if weighted {
            self.gather_with(uploaded, 2, |parts| {
                parts.iter().map(|p| vec![p.max_abs.to_bits(), p.bad as u64]).collect()
            })?
        } else {
            match uploaded {
                Ok(parts) => (parts, Vec::new()),
                // The status gather the others make before their all-reduces.
                Err(e) => return self.agree(Err(e)),
            }
        };
        if gathered.chunks_exact(2).any(|w| w[1] != 0) {
            let bad: Vec<usize> =
                gathered.chunks_exact(2).enumerate().filter(|(_, w)| w[1] != 0).map(|(r, _)| r).collect();
            return Err(Error::invalid(format!(
                "every weight must be finite: the shards of ranks {bad:?} hold NaN or infinite weights"
            )));
        }
        let max_abs = gathered.chunks_exact(2).map(|w| f64::from_bits(w[0])).fold(0.0, f64::max);
        let kind = match (weighted, options.accumulation) {
            (false, _) => ValueKind::Count,
            (true, Accumulation::FixedPoint) => {
                ValueKind::new(options.accumulation, Some(FixedScale::new(max_abs, total)))
            }
            (true, _) => ValueKind::new(options.accumulation, None),
        };
        // Phase 2: each device runs the plan on its shard, with the set's scale; every process
        // learns whether every rank's plans launched before the all-reduces.
        let launched = (|| -> Result<Vec<GeneralPlan<T, W>>> {
            let mut plans = Vec::with_capacity(parts.len());
            for (p, dev) in parts.iter().zip(&devs) {
                let input = p.input();
                let mut plan = GeneralPlan::<T, W>::new(
                    dev,
                    input.len(),
                    spec,
                    weighted,
                    kind,
                    options.strategy,
                    options.shared_atomics,
                    dev.tuning(),
                    Some(&input),
                )?;
                plan.launch(dev.stream(), &input)?;
                plans.push(plan);
            }
            Ok(plans)
        })();
        let mut plans = self.agree(launched)?;
        // The combine: integer words (counts, fixed point) add exactly; float sums as doubles.
        let value_word = if matches!(kind, ValueKind::Float) { Word::F64 } else { Word::U64 };
        for which in 0..3 {
            let mut ptrs = Vec::with_capacity(plans.len());
            let mut count = 0;
            for (plan, dev) in plans.iter_mut().zip(&devs) {
                let (_, bufs) = plan.accumulators_mut();
                let b = &mut *bufs.into_iter().nth(which).expect("three accumulators");
                count = b.len();
                ptrs.push(address(dev, b));
            }
            let word = if which == 2 { Word::U64 } else { value_word };
            self.all_reduce_in_place(&ptrs, count, word, Combine::Sum, "ncclAllReduce(histogram accumulators)")?;
        }
        self.synchronize()?;
        drop(parts);
        Ok(plans)
    }
}

/// One device's part of a weighted or 2-D histogram: its data on the device, and the largest
/// weight magnitude (or whether a weight is not finite).
struct ShardData<'a, T, W> {
    x: crate::device::DeviceInput<'a, T>,
    y: Option<crate::device::DeviceInput<'a, T>>,
    w: Option<crate::device::DeviceInput<'a, W>>,
    max_abs: f64,
    bad: bool,
}

impl<'a, T: Sample, W: Weight> ShardData<'a, T, W> {
    fn upload(
        dev: &Arc<CudaDevice>,
        x: Input<'a, T>,
        y: Option<Input<'a, T>>,
        w: Option<Input<'a, W>>,
    ) -> Result<Self> {
        let x = device_input(dev, x, "x")?;
        let y = y.map(|y| device_input(dev, y, "y")).transpose()?;
        let w = w.map(|w| device_input(dev, w, "weights")).transpose()?;
        let (mut max_abs, mut bad) = (0.0, false);
        if let Some(w) = &w {
            if !w.view().is_empty() {
                let found = crate::histogram::weighted::device_max_abs(dev, &w.view())?;
                (max_abs, bad) = (found.unwrap_or(0.0), found.is_none());
            }
        }
        Ok(ShardData { x, y, w, max_abs, bad })
    }

    fn input(&self) -> GeneralInput<'_, T, W> {
        GeneralInput {
            x: self.x.view(),
            y: self.y.as_ref().map(|y| y.view()),
            interleaved: false,
            weights: self.w.as_ref().map(|w| w.view()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{counter_combine, CounterCombine, Word};

    #[test]
    fn the_counter_combine_follows_every_shard_length() {
        const W: u64 = 1 << 32;
        let cases: [(&[u64], CounterCombine); 7] = [
            (&[0, 0], CounterCombine::AllReduce(Word::U32)),
            (&[10, W - 11], CounterCombine::AllReduce(Word::U32)),
            // Narrow shards whose sum could overflow 32-bit counters.
            (&[10, W - 10], CounterCombine::Host),
            (&[W - 1, W - 1], CounterCombine::Host),
            // Shards on both sides of 2^32: one rank counts in 64 bits, the other in 32.
            (&[W, W - 1], CounterCombine::Host),
            (&[W - 1, W], CounterCombine::Host),
            (&[W, W + 5], CounterCombine::AllReduce(Word::U64)),
        ];
        for (lengths, want) in cases {
            assert_eq!(counter_combine(lengths), want, "{lengths:?}");
        }
    }
}
