//! The CUDA side of the histogram: the kernel family of `histogram.cu`, its parameters, and the
//! plan that resolves the policy for one input, loads the specialisation, and launches it.

use super::axis::{self, binning_for, Binning, DeviceAxis};
use super::binning::BinRule;
use super::partition::{PartitionKeys, PartitionParams, PartitionPlan, PartitionSource};
use super::policy::{self, Capacity, Tuning, Variant, BLOCK_SIZES, PROBE_SAMPLES};
use super::stream::AccumulateParams;
use super::{Bins, Histogram, HistogramSpec, Strategy, MAX_CHANNELS};
use crate::device::params::KernelParams;
use crate::device::registry::KernelFamily;
use crate::device::{
    CudaDevice, DevPtr, DeviceBuffer, DeviceView, DeviceViewMut, Kernel, LaunchShape, PlanReadBack, Stream,
    POSTED_WORDS_MAX,
};
use crate::error::{Error, Result};
use crate::sample::Sample;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

crate::kernel_params! {
    /// What `tally_histogram` reads.
    pub(crate) struct HistParams as "HistParams" {
        /// The samples (the kernel's `const Sample*`; typed per plan).
        samples: DevPtr<u8>,
        n: u64,
        /// nslots * bins counters, u32 or u64 by the variant.
        counts: DevPtr<u8>,
        /// nslots * 3: below, above, NaN.
        outliers: DevPtr<u64>,
        axis: axis::AxisParams,
        nslots: u32,
        edges_in_shared: u32,
        slot: [i32; MAX_CHANNELS as usize],
        slice_lo: u32,
        slice_width: u32,
        first_pass: u32,
        aggregate: u32,
        cluster_shift: u32,
        rank_counters: u32,
        hot_key: i32,
        /// The other set of counters of a plan with two (zeroed by the first pass for the next
        /// launch), or null.
        clear_counts: DevPtr<u8>,
        clear_outliers: DevPtr<u64>,
        /// One-pass plans: the blocks' ticket (zero between launches), and where the last block
        /// posts the outlier counters for the host (null: no post) with the launch's number.
        ticket: DevPtr<u32>,
        post: DevPtr<u64>,
        sequence: u64,
        /// Nonzero: the post carries the counters too, after the outlier counters.
        post_counts: u32,
    }
}

crate::kernel_params! {
    /// What `tally_histogram_probe` reads.
    pub(crate) struct ProbeParams as "ProbeParams" {
        samples: DevPtr<u8>,
        n: u64,
        probe: DevPtr<u8>,
        k: u32,
    }
}

/// `histogram.cu`: the plain histogram and its skew probe.
pub(crate) static FAMILY: KernelFamily = KernelFamily {
    name: "histogram.cu",
    source: include_str!("../kernels/histogram.cu"),
    params: || vec![axis::AxisParams::layout(), HistParams::layout(), ProbeParams::layout()],
    variants: |cc| Variant::all(cc).iter().map(Variant::defines).collect(),
};

/// How a plan counts: one kernel of `histogram.cu` (once per pass), or the partition. Both
/// variants hold a parameter struct by value; a plan has one engine, so their sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum Engine {
    Direct {
        kernel: Kernel<HistParams>,
        params: HistParams,
        shape: LaunchShape,
        /// (first key, keys) of each pass; one pass covering every key for most strategies.
        passes: Vec<(u32, u32)>,
    },
    Partition(PartitionPlan),
}

/// A second set of counters for a plan whose counters are small: each launch counts into one set
/// and zeroes the other in its kernel, so that a call is one launch rather than two memsets and
/// a kernel (docs/PERF.md, v29).
struct SpareCounters {
    counts: DeviceBuffer<u8>,
    outliers: DeviceBuffer<u64>,
    /// Whether a launch has zeroed this set since anything last wrote it.
    zeroed: bool,
}

/// A histogram ready to launch on resident samples of `T`: policy resolved, kernel loaded,
/// output buffers allocated. Build it once for a spec, type and size and run it many times.
pub struct HistogramPlan<T> {
    dev: Arc<CudaDevice>,
    engine: Engine,
    /// The counters of the last launch (the outliers: below, above, NaN for each slot).
    counts: DeviceBuffer<u8>,
    outliers: DeviceBuffer<u64>,
    /// Plans of one kernel whose counters take at most `Tuning::spare_counters_max_bytes`,
    /// from their second launch (a plan made for one call never needs it).
    spare: Option<SpareCounters>,
    /// Whether this plan keeps a second set once it is launched again.
    spare_wanted: bool,
    /// Whether the plan has been launched.
    launched: bool,
    /// Plans of one launch: the ticket that finds the last block, which posts the outliers.
    ticket: Option<DeviceBuffer<u32>>,
    /// Whether that post carries the counters too ([`posts_counts`]).
    posts_counts: bool,
    /// The outlier counters' page-locked copy on the host (one stream at a time uses a plan).
    outliers_back: PlanReadBack,
    /// `accumulate.cu`'s kernel, for callers that take the counts as 64-bit words
    /// ([`HistogramPlan::copy_counts_u64`]): looked up once a plan.
    widen: OnceLock<Kernel<AccumulateParams>>,
    _axis: DeviceAxis,
    spec: HistogramSpec,
    n: usize,
    strategy: Strategy,
    variant: Variant,
    _samples: PhantomData<fn(T)>,
}

impl<T: Sample> HistogramPlan<T> {
    /// Prepares a histogram of `samples.len()` samples. `auto` (and the 16-bit and pass
    /// strategies) probe `samples` for skew; later launches may use other samples of that length.
    pub fn new(
        dev: &Arc<CudaDevice>,
        samples: &DeviceView<'_, T>,
        spec: &HistogramSpec,
        requested: Strategy,
        tuning: &Tuning,
    ) -> Result<Self> {
        spec.validate()?;
        let info = dev.info();
        let stream = dev.stream();
        let n = samples.len();
        let bins = spec.bins.count();
        let nslots = spec.channels.selected.len();
        let width = bins * nslots;
        let binning = binning_for(T::DTYPE, &spec.bins);
        let num_edges = if let Bins::Edges(e) = &spec.bins { e.len() } else { 0 };
        let counter_size = counter_bytes_for(n as u64);
        let wide = counter_size == 8;
        let cap = Capacity::new(info, binning, nslots, tuning);

        // The most frequent key of a strided probe of the input, where it decides something.
        let mut skew: Option<Skew> = None;
        let strategy = match requested {
            Strategy::Auto => {
                // Hopper combines same-address shared atomics itself: no probe needed there,
                // unless the histogram is too large for any block copy (partition or hot-bin
                // cache, by skew).
                if n > 0 && (!info.has_clusters() || !cap.fits(Strategy::BlockShared16, width, 0)) {
                    skew = Some(probe_skew(dev, samples, spec)?);
                }
                policy::choose(&cap, info, width, skew.unwrap_or_default().top_fraction, counter_size)
            }
            Strategy::ThreadPrivate => {
                return Err(Error::invalid("thread-private is the CPU backend's strategy; use --backend cpu"))
            }
            s => s,
        };
        let strategy = cap.degrade(strategy, width);
        let mut counts = stream.alloc::<u8>(width * counter_size, "histogram counters")?;
        let mut outliers = stream.alloc::<u64>(nslots * 3, "outlier counters")?;
        let axis = DeviceAxis::new::<T>(stream, &spec.bins, binning)?;
        let counts_ptr = counts.view_mut().ptr_mut(stream.cuda_stream());
        let outliers_ptr = outliers.view_mut().ptr_mut(stream.cuda_stream());
        let slots = spec.channels.slots();
        let mut slot = [-1; MAX_CHANNELS as usize];
        slot[..slots.len()].copy_from_slice(&slots);
        let identity = axis::identity(binning, &spec.bins);
        let all_in_range = binning == Binning::Integer32 && axis::all_in_range(T::DTYPE, &spec.bins);
        // The kernel specialisation, given what only the direct kernels vary.
        let variant_of = |block_threads: u32, hot_key: bool, hot_slots: u32| Variant {
            dtype: T::DTYPE,
            binning,
            channels: spec.channels.interleave,
            wide_counters: wide,
            strategy,
            block_threads,
            identity,
            all_in_range,
            hot_key,
            hot_slots,
        };
        let (engine, variant) = 'engine: {
            if strategy == Strategy::Partition {
                // The scatter's ranking follows the data unless the caller fixed it: one shared
                // atomic per key where keys spread over the chunks, warp-matched ranks where a
                // few chunks take most of them (`partition::match_ranks_preferred`).
                let mut tuning = tuning.clone();
                if tuning.partition_match.is_none() && n > 0 {
                    let top = match skew {
                        Some(s) => s.top_fraction,
                        None => probe_skew(dev, samples, spec)?.top_fraction,
                    };
                    tuning.partition_match = Some(super::partition::match_ranks_preferred(top));
                }
                let tuning = &tuning;
                let shape = super::partition::scatter_shape(dev.info(), tuning, T::DTYPE, width);
                let variant = variant_of(shape.threads, false, 0);
                let params = PartitionParams {
                    counts: counts_ptr,
                    outliers: outliers_ptr,
                    axis: axis.params,
                    nslots: nslots as u32,
                    width: width as u32,
                    slot,
                    ..Default::default()
                };
                let plan = PartitionPlan::new(dev, &PartitionKeys::Samples(variant), n, params, tuning)?;
                break 'engine (Engine::Partition(plan), variant);
            }
            if skew.is_none() && matches!(strategy, Strategy::GlobalL2 | Strategy::BlockShared16) {
                skew = Some(probe_skew(dev, samples, spec)?);
            }
            let skewed = skew.is_some_and(|s| s.top_fraction >= super::strategy::SKEW_THRESHOLD);
            // block-shared-16 counts a dominant key in a 32-bit counter of its own: an atomic whose
            // old value is needed (the 16-bit wrap test) is not combined with the warp's other
            // updates of the same address, and hot90 data ran at 24% of the read bandwidth (v9).
            // Compiled in only then: the extra compare cost uniform data 13 points (84% to 71%).
            let hot_key = match (strategy, skew) {
                (Strategy::BlockShared16, Some(s)) if skewed && n > 0 => s.top_key.map_or(-1, |k| k as i32),
                _ => -1,
            };
            let threads = policy::block_threads_for(strategy, width * 4);
            let hot_slots = if strategy == Strategy::GlobalL2 { tuning.hot_slots() as u32 } else { 0 };
            let variant = variant_of(threads, hot_key >= 0, hot_slots);
            let defines = variant.defines();
            let load = |smem: usize| dev.kernel::<HistParams>(&FAMILY, &defines, "tally_histogram", smem);

            // The keys of each pass, the block's shared memory and the grid.
            let (kernel, shape, edges_shared, slice, rank_counters);
            if strategy.needs_clusters() {
                // The smallest cluster that holds the histogram, or the largest the device can
                // co-schedule, counting one range of keys per pass.
                let mut max_cluster = 16;
                loop {
                    let c = cap
                        .cluster_shape(strategy, width, max_cluster)
                        .ok_or_else(|| Error::invalid("no cluster shape fits the shared memory"))?;
                    let with_edges = cap.layout(strategy, width, num_edges, c.rank_counters).bytes();
                    let e = if num_edges > 0 && with_edges <= cap.room(strategy, width) { num_edges } else { 0 };
                    let smem = cap.layout(strategy, width, e, c.rank_counters).bytes();
                    let k = load(smem)?;
                    let active = k.max_active_clusters(stream, threads, smem, c.cluster)?;
                    if active == 0 && c.cluster > 1 {
                        max_cluster = c.cluster / 2;
                        continue;
                    }
                    if active == 0 {
                        return Err(Error::Unsupported {
                            what: format!("{strategy} with {width} keys"),
                            why: "not even a single block fits".into(),
                        });
                    }
                    let cluster = c.cluster as u64;
                    let blocks = policy::capped_blocks((active * c.cluster) as u64, tuning.hist_grid, cluster);
                    // No block counts 2^31 samples, and with 32-bit counters no cluster counts 2^32
                    // into one.
                    let safe = if strategy.narrow() { n as u64 } else { n as u64 * cluster }.div_ceil(1 << 31);
                    let grid = blocks.max(safe.next_multiple_of(cluster));
                    shape =
                        LaunchShape { grid: grid as u32, block: threads, smem: smem as u32, cluster: Some(c.cluster) };
                    (kernel, edges_shared, slice, rank_counters) = (k, e, c.slice, c.rank_counters);
                    break;
                }
            } else {
                // Edges go to shared memory when they leave room for the private copy.
                edges_shared = if num_edges > 0 && cap.fits(strategy, width, num_edges) { num_edges } else { 0 };
                let smem = cap.layout(strategy, width, edges_shared, 0).bytes();
                kernel = load(smem)?;
                let resident = info.multiprocessors as u64 * kernel.blocks_per_sm(threads, smem)? as u64;
                let max_grid = policy::capped_blocks(resident, tuning.hist_grid, 1);
                let grid = policy::grid(n as u64, policy::tile_samples(T::DTYPE, threads), max_grid);
                shape = LaunchShape::new(grid as u32, threads, smem);
                slice = cap.pass_keys(info, strategy, width, counter_size);
                rank_counters = 0;
            }
            let passes = policy::passes(width, slice.clamp(1, width));
            let params = HistParams {
                n: n as u64,
                counts: counts_ptr,
                outliers: outliers_ptr,
                axis: axis.params,
                nslots: nslots as u32,
                edges_in_shared: (edges_shared > 0) as u32,
                slot,
                slice_lo: 0,
                slice_width: width as u32,
                first_pass: 1,
                aggregate: cap.aggregate(strategy, skewed) as u32,
                hot_key,
                cluster_shift: shape.cluster.unwrap_or(1).trailing_zeros(),
                rank_counters: rank_counters as u32,
                ..Default::default()
            };
            (Engine::Direct { kernel, params, shape, passes }, variant)
        };
        let direct = matches!(engine, Engine::Direct { .. }) && n > 0;
        let ticket = match &engine {
            Engine::Direct { passes, .. } if n > 0 && passes.len() == 1 => {
                Some(stream.alloc_zeros::<u32>(1, "histogram ticket")?)
            }
            _ => None,
        };
        let spare_wanted = direct && counts.len() <= tuning.spare_counters_max_bytes();
        let posts_counts = ticket.is_some() && posts_counts_under(tuning, outliers.len(), counts.len());
        let posted_words = if posts_counts { counts.len().div_ceil(8) } else { 0 };
        Ok(HistogramPlan {
            dev: dev.clone(),
            engine,
            counts,
            spare: None,
            spare_wanted,
            launched: false,
            ticket,
            posts_counts,
            outliers_back: PlanReadBack::with_posted(stream, outliers.len(), posted_words)?,
            outliers,
            widen: OnceLock::new(),
            _axis: axis,
            spec: spec.clone(),
            n,
            strategy,
            variant,
            _samples: PhantomData,
        })
    }

    /// The strategy that runs (what `auto` resolved to, after any fall-back).
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// The kernel specialisation that runs.
    pub fn variant(&self) -> &Variant {
        &self.variant
    }

    /// Passes over the samples one launch makes (one range of keys each; the partition makes
    /// one, a slice at a time).
    pub fn passes(&self) -> usize {
        match &self.engine {
            Engine::Direct { passes, .. } => passes.len(),
            Engine::Partition(_) => 1,
        }
    }

    /// Blocks of each launch of a strategy that counts samples directly; `None` for the
    /// partition, which launches several kernels of their own shapes.
    pub fn grid(&self) -> Option<u32> {
        match &self.engine {
            Engine::Direct { shape, .. } => Some(shape.grid),
            Engine::Partition(_) => None,
        }
    }

    /// Blocks per cluster, for the cluster strategies.
    pub fn cluster_size(&self) -> Option<u32> {
        match &self.engine {
            Engine::Direct { shape, .. } => shape.cluster,
            Engine::Partition(_) => None,
        }
    }

    /// The partition's slices of the input (each counted before the next) and the workspace
    /// scratch they use, in bytes; `None` for the other strategies, which need no scratch.
    pub fn partition_scratch(&self) -> Option<(usize, usize)> {
        match &self.engine {
            Engine::Direct { .. } => None,
            Engine::Partition(p) => Some((p.layout().slices, p.layout().scratch_bytes)),
        }
    }

    /// Zeroes the counters and queues the kernel (once per pass) on `stream`, asynchronously.
    /// `samples` must have the length the plan was made for. A plan of small counters launched
    /// more than once keeps two sets: it counts into the set its last launch zeroed (a memset
    /// only where none did) and zeroes the other in the kernel, one launch a call.
    ///
    /// The last block of a one-launch plan also posts the outlier counters into the plan's
    /// page-locked host words, where [`HistogramPlan::read_outliers`] and
    /// [`HistogramPlan::read`] wait for them without a copy, and the counters after them where
    /// they fit ([`HistogramPlan::posts_counts`]), so that `read` copies nothing. A caller that
    /// reads only the outliers pays for that post (about 2.5 us at 1,000 counters on an H200,
    /// docs/PERF.md v32); a `Tuning::posted_counts_max_bytes` of 0 turns it off.
    pub fn launch(&mut self, stream: &Stream, samples: &DeviceView<'_, T>) -> Result<()> {
        self.queue(stream, samples, true)
    }

    /// [`HistogramPlan::launch`] for callers that read the counters on the device (streamed
    /// chunks, device sets that combine them in place, a copy of the counts that the read must
    /// cover): nothing is posted, and a later [`HistogramPlan::read_outliers`] copies the
    /// device's outlier counters behind the work queued so far and waits for that copy.
    pub fn launch_unposted(&mut self, stream: &Stream, samples: &DeviceView<'_, T>) -> Result<()> {
        self.queue(stream, samples, false)
    }

    fn queue(&mut self, stream: &Stream, samples: &DeviceView<'_, T>, post: bool) -> Result<()> {
        self.outliers_back.forget_post();
        if samples.len() != self.n {
            return Err(Error::invalid(format!(
                "this plan counts {} samples, but {} were given",
                self.n,
                samples.len()
            )));
        }
        if self.spare_wanted && self.launched && self.spare.is_none() {
            // Launched again: a plan kept for more calls, worth a second set.
            self.spare = Some(SpareCounters {
                counts: stream.alloc::<u8>(self.counts.len(), "histogram counters (second set)")?,
                outliers: stream.alloc::<u64>(self.outliers.len(), "outlier counters (second set)")?,
                zeroed: false,
            });
        }
        self.launched = true;
        // A plan with two sets counts into the one its last launch zeroed, and that one becomes
        // the spare, zeroed by this launch.
        let zeroed = self.spare.as_mut().is_some_and(|spare| {
            std::mem::swap(&mut self.counts, &mut spare.counts);
            std::mem::swap(&mut self.outliers, &mut spare.outliers);
            std::mem::replace(&mut spare.zeroed, false)
        });
        if !zeroed {
            stream.memset_zeros(&mut self.counts.view_mut())?;
            stream.memset_zeros(&mut self.outliers.view_mut())?;
        }
        if self.n == 0 {
            return Ok(());
        }
        let cu = stream.cuda_stream();
        let samples_ptr = samples.ptr(cu).cast();
        let (counts, outliers) = (self.counts.view_mut().ptr_mut(cu), self.outliers.view_mut().ptr_mut(cu));
        match &self.engine {
            Engine::Direct { kernel, params, shape, passes } => {
                let (clear_counts, clear_outliers) = match &mut self.spare {
                    Some(spare) => (spare.counts.view_mut().ptr_mut(cu), spare.outliers.view_mut().ptr_mut(cu)),
                    None => Default::default(),
                };
                // Only plans of one pass have a ticket: their last block posts.
                let ticket = match &mut self.ticket {
                    Some(ticket) if post => Some(ticket.view_mut().ptr_mut(cu)),
                    _ => None,
                };
                let base = HistParams {
                    samples: samples_ptr,
                    counts,
                    outliers,
                    clear_counts,
                    clear_outliers,
                    ticket: ticket.unwrap_or_default(),
                    ..*params
                };
                let launch_passes = |base: HistParams| -> Result<()> {
                    for (i, &(lo, keys)) in passes.iter().enumerate() {
                        let p = HistParams { slice_lo: lo, slice_width: keys, first_pass: (i == 0) as u32, ..base };
                        stream.launch(kernel, *shape, &p)?;
                    }
                    Ok(())
                };
                if ticket.is_some() {
                    self.outliers_back.launch_posting(stream, |target| {
                        launch_passes(match target {
                            Some(t) => HistParams {
                                post: t.words,
                                sequence: t.sequence,
                                post_counts: self.posts_counts as u32,
                                ..base
                            },
                            None => base,
                        })
                    })?;
                } else {
                    launch_passes(base)?;
                }
                if let Some(spare) = &mut self.spare {
                    spare.zeroed = true;
                }
                Ok(())
            }
            Engine::Partition(plan) => {
                plan.launch(stream, PartitionSource::samples(samples_ptr), self.n, std::mem::size_of::<T>())
            }
        }
    }

    /// Waits for `stream` and reads the counts back: from the last launch's post where it
    /// carried them (a small one-pass plan launched by [`HistogramPlan::launch`]), else by a
    /// copy behind the work queued on `stream`.
    pub fn read(&self, stream: &Stream) -> Result<Histogram> {
        // The outliers first: posted ones arrive without a copy, and the counters after them
        // where the post carries them.
        let mut words = self.outliers_back.read(stream, &self.outliers.view())?;
        let posted_counts = words.split_off(self.outliers.len());
        let outliers = words;
        let raw = if posted_counts.is_empty() {
            stream.download(&self.counts.view())?
        } else {
            let mut bytes: Vec<u8> = posted_counts.iter().flat_map(|w| w.to_le_bytes()).collect();
            bytes.truncate(self.counts.len());
            bytes
        };
        let flat: Vec<u64> = if self.variant.wide_counters {
            raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()
        } else {
            raw.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")) as u64).collect()
        };
        Ok(Histogram::from_flat(&self.spec, &flat, &outliers, "cuda", self.strategy))
    }

    /// Bytes of one counter: 8 for plans of 2^32 samples or more, else 4.
    pub fn counter_bytes(&self) -> usize {
        if self.variant.wide_counters {
            8
        } else {
            4
        }
    }

    /// Queues on `stream`, without waiting, a copy of the last launch's counters into `out`:
    /// one little-endian counter of [`HistogramPlan::counter_bytes`] per bin and selected
    /// channel, channel-major, as many bytes as that makes. For callers that keep the counts
    /// on the device (the outliers are read by [`HistogramPlan::read_outliers`]).
    pub fn copy_counts(&self, stream: &Stream, out: &mut DeviceViewMut<'_, u8>) -> Result<()> {
        if out.len() != self.counts.len() {
            return Err(Error::invalid(format!(
                "the counters take {} bytes, the output holds {}",
                self.counts.len(),
                out.len()
            )));
        }
        stream.copy_on_device(&self.counts.view(), out)
    }

    /// Queues on `stream`, without waiting, the last launch's counts as 64-bit integers into
    /// `out` (one per bin and selected channel, channel-major): one small kernel widens 32-bit
    /// counters and copies 64-bit ones. For callers whose count type is int64 (numpy,
    /// PyTorch), so that they need no conversion of their own. (A strided copy of 4-byte rows
    /// into 8-byte ones, which v38 and earlier queued instead, moves each counter as a row of
    /// its own through a copy engine.)
    pub fn copy_counts_u64(&self, stream: &Stream, out: &mut DeviceViewMut<'_, u64>) -> Result<()> {
        let words = self.counts.len() / self.counter_bytes();
        if out.len() != words {
            return Err(Error::invalid(format!("the plan has {words} counters, the output holds {}", out.len())));
        }
        let cu = stream.cuda_stream();
        let from = self.counts.view().ptr(cu);
        let wide = self.counter_bytes() == 8;
        super::stream::queue_counters(
            stream,
            self.widen()?,
            from,
            self.counts.len(),
            wide,
            out.ptr_mut(cu),
            words,
            true,
        )
    }

    /// Queues on `stream`, after a [`HistogramPlan::copy_counts_u64`] into `out`, the addition
    /// of the samples the last launch counted at or above the last edge into the last count,
    /// on the device, without waiting: for a one-channel histogram whose last bin is closed on
    /// the right and whose upper edge is the data's maximum (numpy's default range), where
    /// every sample counted above lies on that edge. The outliers read afterwards still count
    /// them above; the caller moves them.
    pub fn add_above_into_last_u64(&self, stream: &Stream, out: &mut DeviceViewMut<'_, u64>) -> Result<()> {
        if self.outliers.len() != 3 {
            return Err(Error::invalid("the samples above move into the last bin of one-channel histograms only"));
        }
        let bins = out.len();
        if bins == 0 {
            return Err(Error::invalid("no bin to move the samples above into"));
        }
        let mut last = out.slice_mut(bins - 1..).expect("the last count");
        let cu = stream.cuda_stream();
        let above = self.outliers.view().slice(1..2).expect("three outlier counters").ptr(cu).cast();
        super::stream::queue_counters(stream, self.widen()?, above, 8, true, last.ptr_mut(cu), 1, false)
    }

    /// `accumulate.cu`'s kernel, looked up on first use.
    fn widen(&self) -> Result<&Kernel<AccumulateParams>> {
        if let Some(k) = self.widen.get() {
            return Ok(k);
        }
        let k = self.dev.kernel::<AccumulateParams>(&super::stream::FAMILY, &[], "tally_accumulate", 0)?;
        Ok(self.widen.get_or_init(|| k))
    }

    /// The counters and outlier counters of the last launch, in place (a streamed histogram
    /// adds them into its totals on the device).
    pub(crate) fn counters(&self) -> (DeviceView<'_, u8>, DeviceView<'_, u64>) {
        (self.counts.view(), self.outliers.view())
    }

    /// Whether the last launch posts its outlier counters for the next read (tests: the posted
    /// path ran).
    #[doc(hidden)]
    pub fn result_posted(&self) -> bool {
        self.outliers_back.has_post()
    }

    /// Reads the last launch's samples outside the bins: below, above and NaN for each selected
    /// channel. Where the launch posted them ([`HistogramPlan::launch`] of a one-pass plan),
    /// this waits for the post only: the counters are complete then, but work queued after the
    /// launch (a [`HistogramPlan::copy_counts`]) may not have run. Otherwise it copies them
    /// behind everything queued on `stream` so far and waits for that copy.
    pub fn read_outliers(&self, stream: &Stream) -> Result<Vec<u64>> {
        let mut words = self.outliers_back.read(stream, &self.outliers.view())?;
        words.truncate(self.outliers.len());
        Ok(words)
    }

    /// Whether a posted launch ([`HistogramPlan::launch`]) carries the counters too, so that
    /// [`HistogramPlan::read`] copies nothing (tests: the posted counts are checked).
    #[doc(hidden)]
    pub fn posts_counts(&self) -> bool {
        self.posts_counts
    }

    /// Fills the counters with `byte`: tests poison them before a launch, so that counters the
    /// launch leaves unwritten show.
    pub fn fill_outputs(&mut self, stream: &Stream, byte: u8) -> Result<()> {
        self.outliers_back.forget_post();
        let words = vec![u64::from_ne_bytes([byte; 8]); self.outliers.len()];
        stream.copy_to_device(&vec![byte; self.counts.len()], &mut self.counts.view_mut())?;
        stream.copy_to_device(&words, &mut self.outliers.view_mut())?;
        if let Some(spare) = &mut self.spare {
            // Both sets: the next launch zeroes the set it counts into, and the one after relies
            // on the kernel's zeroing of this one.
            stream.copy_to_device(&vec![byte; spare.counts.len()], &mut spare.counts.view_mut())?;
            stream.copy_to_device(&words, &mut spare.outliers.view_mut())?;
            spare.zeroed = false;
        }
        Ok(())
    }

    /// The counters and the outlier counters, for combining plans of several devices in place.
    pub(crate) fn counters_mut(&mut self) -> (&mut DeviceBuffer<u8>, &mut DeviceBuffer<u64>) {
        // Changed in place: a post of the last launch no longer holds what they hold.
        self.outliers_back.forget_post();
        (&mut self.counts, &mut self.outliers)
    }

    /// Launches on the device's default stream and reads the result.
    pub fn run(&mut self, samples: &DeviceView<'_, T>) -> Result<Histogram> {
        let dev = self.dev.clone();
        self.launch(dev.stream(), samples)?;
        self.read(dev.stream())
    }
}

/// Bytes of one counter of a plan of `n` samples: 8 from 2^32 samples on, where a 32-bit
/// counter could wrap, else 4. Device sets decide their combine by the same rule.
pub(crate) fn counter_bytes_for(n: u64) -> usize {
    if n >= 1 << 32 {
        8
    } else {
        4
    }
}

/// Whether a one-pass plan's post can carry its counters (`counter_bytes` of them) after its
/// `outlier_words` outlier counters: where both fit a read-back that the stream keeps (about a
/// thousand 32-bit counters: one to three channels of 256 bins), so that a small histogram costs
/// one launch and one poll, no copy (unless `Tuning::posted_counts_max_bytes` says otherwise).
pub(crate) fn counts_fit_a_post(outlier_words: usize, counter_bytes: usize) -> bool {
    outlier_words + counter_bytes.div_ceil(8) <= POSTED_WORDS_MAX
}

/// Whether a one-pass plan of `counter_bytes` of counters posts them, under `tuning`: they fit
/// ([`counts_fit_a_post`]) and the tuning does not hold them back.
pub(crate) fn posts_counts_under(tuning: &Tuning, outlier_words: usize, counter_bytes: usize) -> bool {
    counts_fit_a_post(outlier_words, counter_bytes) && counter_bytes <= tuning.posted_counts_max_bytes()
}

/// What a strided probe of the input says about its most frequent key.
#[derive(Clone, Copy, Debug, Default)]
struct Skew {
    /// Share of the probed samples in the most frequent key (bin of a selected channel).
    top_fraction: f64,
    /// That key, `slot * bins + bin`.
    top_key: Option<u32>,
}

/// Probes `PROBE_SAMPLES` samples spread over the input (the kernel's `j * n / k`).
fn probe_skew<T: Sample>(dev: &CudaDevice, samples: &DeviceView<'_, T>, spec: &HistogramSpec) -> Result<Skew> {
    let n = samples.len();
    let k = (n as u64).min(PROBE_SAMPLES as u64) as u32;
    if k == 0 {
        return Ok(Skew::default());
    }
    let stream = dev.stream();
    let variant = Variant {
        dtype: T::DTYPE,
        binning: binning_for(T::DTYPE, &spec.bins),
        channels: spec.channels.interleave,
        wide_counters: false,
        strategy: Strategy::GlobalAtomic,
        block_threads: BLOCK_SIZES[0],
        identity: false,
        all_in_range: false,
        hot_key: false,
        hot_slots: 0,
    };
    let kernel = dev.kernel::<ProbeParams>(&FAMILY, &variant.defines(), "tally_histogram_probe", 0)?;
    let mut out = stream.alloc::<T>(k as usize, "skew probe")?;
    let params = ProbeParams {
        samples: samples.ptr(stream.cuda_stream()).cast(),
        n: n as u64,
        probe: out.view_mut().ptr_mut(stream.cuda_stream()).cast(),
        k,
    };
    stream.launch(&kernel, LaunchShape::new(k.div_ceil(256), 256, 0), &params)?;
    let probe = stream.download(&out.view())?;
    let rule = BinRule::new::<T>(spec);
    let slots = spec.channels.slots();
    let bins = spec.bins.count() as u32;
    let mut freq = std::collections::HashMap::<u32, u32>::new();
    for (j, x) in probe.into_iter().enumerate() {
        let index = j as u64 * n as u64 / k as u64;
        let slot = slots[(index % slots.len() as u64) as usize];
        let b = rule.bin(x);
        if b >= 0 && slot >= 0 {
            *freq.entry(slot as u32 * bins + b as u32).or_default() += 1;
        }
    }
    // The most frequent key; ties go to the smallest, so the choice is reproducible.
    let top = freq.into_iter().max_by_key(|&(key, count)| (count, std::cmp::Reverse(key)));
    Ok(Skew { top_fraction: top.map_or(0.0, |(_, c)| c as f64 / k as f64), top_key: top.map(|(key, _)| key) })
}

#[cfg(test)]
mod tests {
    use super::counts_fit_a_post as posts_counts;

    #[test]
    fn counters_ride_with_the_outliers_up_to_a_kept_read_back() {
        // One channel: 3 outlier words, then 32-bit counters two to a word.
        assert!(posts_counts(3, 1016 * 4));
        assert!(!posts_counts(3, 1017 * 4));
        // 64-bit counters (2^32 samples or more): one to a word.
        assert!(posts_counts(3, 508 * 8));
        assert!(!posts_counts(3, 509 * 8));
        // Three channels of 334 bins, and of 335.
        assert!(posts_counts(9, 3 * 334 * 4));
        assert!(!posts_counts(9, 3 * 335 * 4));
    }
}
