//! The histogram strategies, and how `auto` picks one.

use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// How the counting is organised. Every strategy gives identical counts; they differ in where
/// the partial counts live and so in how they behave under contention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Pick from the bin count, the device's shared memory and a skew probe of the input.
    Auto,
    /// Every sample one atomic on the global histogram: the naive kernel, kept as a baseline
    /// and as the fall-back when no private copy fits in shared memory.
    GlobalAtomic,
    /// One private histogram per block in shared memory, merged with one global atomic per
    /// non-zero bin.
    BlockShared,
    /// One private histogram per warp in shared memory: less contention, more memory.
    WarpPrivate,
    /// `__match_any_sync` groups the lanes of a warp that hit the same bin; one shared atomic
    /// per distinct bin per warp. Pays where the data is skewed.
    WarpAggregated,
    /// One private histogram per block in packed 16-bit counters that spill to global memory
    /// before they wrap: twice the bins of `BlockShared` in the same shared memory.
    #[serde(rename = "block-shared-16")]
    BlockShared16,
    /// One histogram spread over the shared memory of a thread-block cluster (sm_90+), updated
    /// with remote shared-memory atomics; larger ones are counted one range of bins per pass.
    ClusterShared,
    /// `ClusterShared` with packed 16-bit counters: twice the bins per pass.
    #[serde(rename = "cluster-shared-16")]
    ClusterShared16,
    /// Global atomics on one L2-sized range of bins per pass, aggregated within each warp.
    GlobalL2,
    /// Each sample's bin index scattered into its chunk of bins (as many as one block's shared
    /// memory holds), then one shared-memory histogram per chunk: for more bins than any
    /// shared-memory strategy holds.
    Partition,
    /// The CPU backend's only strategy: a private histogram per worker thread.
    ThreadPrivate,
}

impl Strategy {
    /// The strategies a GPU run can be asked for by name (auto included).
    pub const GPU: [Strategy; 10] = [
        Strategy::Auto,
        Strategy::GlobalAtomic,
        Strategy::BlockShared,
        Strategy::WarpPrivate,
        Strategy::WarpAggregated,
        Strategy::BlockShared16,
        Strategy::ClusterShared,
        Strategy::ClusterShared16,
        Strategy::GlobalL2,
        Strategy::Partition,
    ];

    /// The name the CLI's `--strategy` takes and reports print (`block-shared`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Auto => "auto",
            Strategy::GlobalAtomic => "global-atomic",
            Strategy::BlockShared => "block-shared",
            Strategy::WarpPrivate => "warp-private",
            Strategy::WarpAggregated => "warp-aggregated",
            Strategy::BlockShared16 => "block-shared-16",
            Strategy::ClusterShared => "cluster-shared",
            Strategy::ClusterShared16 => "cluster-shared-16",
            Strategy::GlobalL2 => "global-l2",
            Strategy::Partition => "partition",
            Strategy::ThreadPrivate => "thread-private",
        }
    }

    /// Whether the strategy keeps 16-bit counters in shared memory.
    pub fn narrow(self) -> bool {
        matches!(self, Strategy::BlockShared16 | Strategy::ClusterShared16)
    }

    /// Whether the strategy needs thread-block clusters (sm_90 or newer).
    pub fn needs_clusters(self) -> bool {
        matches!(self, Strategy::ClusterShared | Strategy::ClusterShared16)
    }

    /// Every strategy's name, comma-separated, for messages.
    pub fn all_names() -> String {
        let mut v: Vec<&str> = Strategy::GPU.iter().map(|s| s.name()).collect();
        v.push(Strategy::ThreadPrivate.name());
        v.join(", ")
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Strategy {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Strategy::GPU.into_iter().chain([Strategy::ThreadPrivate]).find(|k| k.name() == s).ok_or_else(|| {
            crate::Error::invalid(format!("unknown strategy '{s}' (expected one of: {})", Strategy::all_names()))
        })
    }
}

/// What `auto` looks at before choosing.
#[derive(Clone, Copy, Debug)]
pub struct AutoInputs {
    /// One block's private copy with 32-bit counters fits in its shared memory.
    pub block_shared_fits: bool,
    /// The same with 16-bit counters.
    pub block_shared16_fits: bool,
    /// The partition's chunks cover the bins.
    pub partition_fits: bool,
    /// Keys: bins times selected channels.
    pub keys: usize,
    /// Fraction of probed samples that fell in the most frequent bin.
    pub top_bin_fraction: f64,
    /// The device's (major, minor) compute capability.
    pub compute_capability: (i32, i32),
    /// Keys that global-l2 would count in one pass over the samples: half the L2 in the plan's
    /// counters (32-bit, or 64-bit from 2^32 samples and for 2-D counts), or the tuned
    /// `pass_keys`; at most the keys.
    pub l2_pass_keys: usize,
}

/// Above this share of samples in one bin, `auto` aggregates within the warp first on devices
/// whose shared atomics serialise on one address, and the pass strategies (global-l2,
/// cluster-shared) aggregate everywhere.
pub const SKEW_THRESHOLD: f64 = 0.25;

/// `auto` partitions histograms of at most this many keys (bins times selected channels), past
/// the 16-bit block copy; global-l2 counts larger ones. Set from the partition's sweep against
/// global-l2 (docs/PERF.md); until then the partition's whole reach on sm_90 (4,096 chunks of
/// 2^15 keys).
pub const PARTITION_AUTO_MAX_KEYS: usize = 1 << 27;

/// Where the skew probe finds this share of the samples in one bin or more, `auto` leaves to
/// global-l2 the histograms that it counts in one pass: its hot-bin cache counts that bin in
/// shared memory. Past one pass global-l2 reads the samples once a pass, and the partition
/// wins again. Measured for 1-D i32 samples only, 90% in one bin, on an H100 (2^28 samples,
/// 6,553,600 keys a pass, docs/PERF.md v36, two rounds; other shares, 2-D counts and the H200
/// follow the same rule unmeasured): global-l2 0.85-0.91 ms against the partition's 1.18-1.29 from 2M to 6M
/// bins (one pass), 1.34 against 1.30 at 7M (two passes), 1.49-1.50 against 1.31-1.32 at 9M,
/// 2.11 against 1.73 at 16M (three).
pub const PARTITION_AUTO_MAX_TOP_FRACTION: f64 = SKEW_THRESHOLD;

/// Whether `auto` prefers the partition to global-l2 for `keys` keys, a probed top-bin share
/// and global-l2's keys a pass (where both can run and no block copy holds the keys): only
/// where the partition was measured faster by a margin, bounded by `PARTITION_AUTO_MAX_KEYS`,
/// and for skewed data (`PARTITION_AUTO_MAX_TOP_FRACTION`) where global-l2 would take more than
/// one pass.
pub fn partition_preferred(keys: usize, top_bin_fraction: f64, l2_pass_keys: usize) -> bool {
    keys <= PARTITION_AUTO_MAX_KEYS && (top_bin_fraction < PARTITION_AUTO_MAX_TOP_FRACTION || keys > l2_pass_keys)
}

/// `auto`'s choice; the measurements behind it are in docs/PERF.md.
///
/// On Hopper (sm_90) a block-private histogram in shared memory ran at 91-92% of the read
/// bandwidth on uniform, 90%-hot and all-hot i32 data alike: the shared-memory atomic unit
/// already combines a warp's updates to one address, so `__match_any_sync` only adds work
/// (55-73% there), and per-warp copies were no faster (86-88%) while needing 8x the memory.
/// Older devices are not measured; there, skew still selects warp aggregation.
///
/// Past one block's shared memory (H200, 2^28 i32 samples, v9): 16-bit counters double what one
/// block holds (65,536 bins: 84% of the read bandwidth uniform, 77% Zipf). Past that every
/// sample costs an atomic outside the block's own shared memory, and what that costs decides:
/// distributed shared-memory atomics to another block of a cluster ran at about 65 G/s, global
/// atomics in L2 at about 100 G/s. Even with two blocks, where half the atomics stay local, a
/// cluster lost to global-l2 with its hot-bin cache on skewed data (131,072 bins, Zipf: 2.03
/// against 1.41 ms; hot90: 0.89 against 0.72 ms) and won uniform data by 13% (2.47 against
/// 2.84 ms). So `auto` leaves the cluster strategies to callers who ask for them.
///
/// There, global atomics ran at 9.1% of the read bandwidth on uniform data at 1M bins, where a
/// prototype of the partition counted in half the time (issue 14); but where one bin holds a
/// large share, global-l2's hot-bin cache counts it in shared memory (90% in one bin, 1M bins:
/// 0.72 ms against the partition's 2.1 ms), as long as it counts every key in one pass. So past
/// the 16-bit block copy `auto` partitions where `partition_preferred` says so: its inputs are
/// the keys, the skew probe's top-bin share and global-l2's keys a pass, its thresholds the
/// named constants above.
pub fn choose(inp: AutoInputs) -> Strategy {
    if inp.block_shared_fits {
        if inp.compute_capability.0 < 9 && inp.top_bin_fraction >= SKEW_THRESHOLD {
            return Strategy::WarpAggregated;
        }
        return Strategy::BlockShared;
    }
    if inp.block_shared16_fits {
        return Strategy::BlockShared16;
    }
    if inp.partition_fits && partition_preferred(inp.keys, inp.top_bin_fraction, inp.l2_pass_keys) {
        return Strategy::Partition;
    }
    Strategy::GlobalL2
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Global-l2's keys a pass in these inputs: an H100's (50 MiB of L2).
    const PASS: usize = 6_553_600;

    /// Inputs for a histogram of `counters` 32-bit counters on a device with 200 KB of shared
    /// memory per block.
    fn inputs(counters: usize, top: f64, cc: (i32, i32)) -> AutoInputs {
        let block = 200 << 10;
        AutoInputs {
            block_shared_fits: counters * 4 <= block,
            block_shared16_fits: counters * 2 <= block,
            partition_fits: counters <= 1 << 27,
            keys: counters,
            top_bin_fraction: top,
            compute_capability: cc,
            l2_pass_keys: PASS,
        }
    }

    /// What `auto` picks past the 16-bit block copy and within the partition's reach.
    fn partition_or_l2(keys: usize, top: f64) -> Strategy {
        if partition_preferred(keys, top, PASS) {
            Strategy::Partition
        } else {
            Strategy::GlobalL2
        }
    }

    #[test]
    fn partition_thresholds() {
        let most = PARTITION_AUTO_MAX_KEYS;
        assert!(partition_preferred(most, 0.0, PASS));
        assert!(!partition_preferred(most + 1, 0.0, PASS));
        assert!(partition_preferred(most, PARTITION_AUTO_MAX_TOP_FRACTION - 1e-9, PASS));
        // Skewed data: global-l2 while one pass counts every key, the partition past that.
        let top = PARTITION_AUTO_MAX_TOP_FRACTION;
        assert!(!partition_preferred(PASS, top, PASS));
        assert!(!partition_preferred(PASS, 0.9, PASS));
        assert!(partition_preferred(PASS + 1, top, PASS));
        assert!(partition_preferred(most, 1.0, PASS));
        assert!(!partition_preferred(most + 1, 1.0, PASS));
        if most < 1 << 27 {
            assert_eq!(choose(inputs(most + 1, 0.0, (9, 0))), Strategy::GlobalL2);
        }
    }

    #[test]
    fn auto_choices() {
        assert_eq!(choose(inputs(256, 0.0, (9, 0))), Strategy::BlockShared);
        assert_eq!(choose(inputs(256, 1.0, (9, 0))), Strategy::BlockShared);
        assert_eq!(choose(inputs(256, 1.0, (8, 0))), Strategy::WarpAggregated);
        assert_eq!(choose(inputs(256, 0.1, (8, 0))), Strategy::BlockShared);
        assert_eq!(choose(inputs(65536, 0.0, (9, 0))), Strategy::BlockShared16);
        assert_eq!(choose(inputs(65536, 0.0, (8, 0))), Strategy::BlockShared16);
        assert_eq!(choose(inputs(150_000, 0.0, (9, 0))), partition_or_l2(150_000, 0.0));
        assert_eq!(choose(inputs(300_000, 0.0, (9, 0))), partition_or_l2(300_000, 0.0));
        assert_eq!(choose(inputs(1 << 20, 0.0, (9, 0))), partition_or_l2(1 << 20, 0.0));
        assert_eq!(choose(inputs(1 << 20, 0.0, (8, 0))), partition_or_l2(1 << 20, 0.0));
        assert_eq!(choose(inputs(1 << 24, 0.0, (9, 0))), partition_or_l2(1 << 24, 0.0));
        // Concentrated data keep global-l2's hot-bin cache; the switch is at SKEW_THRESHOLD.
        assert_eq!(choose(inputs(1 << 20, 0.9, (9, 0))), Strategy::GlobalL2);
        assert_eq!(choose(inputs(1 << 20, SKEW_THRESHOLD, (9, 0))), Strategy::GlobalL2);
        assert_eq!(
            choose(inputs(1 << 20, SKEW_THRESHOLD - 1e-9, (9, 0))),
            partition_or_l2(1 << 20, SKEW_THRESHOLD - 1e-9)
        );
        assert_eq!(choose(inputs(PASS, 0.9, (8, 0))), Strategy::GlobalL2);
        // ... in one pass of global-l2; past it the partition.
        assert_eq!(choose(inputs(PASS + 1, 0.9, (9, 0))), Strategy::Partition);
        assert_eq!(choose(inputs(1 << 24, 0.9, (8, 0))), Strategy::Partition);
        // Below the switch point skew changes nothing on sm_90; past the partition's reach,
        // global-l2 counts everything.
        assert_eq!(choose(inputs(65536, 0.9, (9, 0))), Strategy::BlockShared16);
        assert_eq!(choose(inputs((1 << 27) + 1, 0.0, (9, 0))), Strategy::GlobalL2);
        assert_eq!(choose(inputs(1 << 27, 0.0, (9, 0))), partition_or_l2(1 << 27, 0.0));
    }

    #[test]
    fn names_round_trip() {
        for s in Strategy::GPU.into_iter().chain([Strategy::ThreadPrivate]) {
            assert_eq!(s.name().parse::<Strategy>().unwrap(), s);
            // JSON output spells every strategy as the CLI does.
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{}\"", s.name()));
        }
        assert!("fast".parse::<Strategy>().is_err());
    }
}
