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
    /// The CPU backend's only strategy: a private histogram per worker thread.
    ThreadPrivate,
}

impl Strategy {
    /// The strategies a GPU run can be asked for by name (auto included).
    pub const GPU: [Strategy; 5] = [
        Strategy::Auto,
        Strategy::GlobalAtomic,
        Strategy::BlockShared,
        Strategy::WarpPrivate,
        Strategy::WarpAggregated,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::Auto => "auto",
            Strategy::GlobalAtomic => "global-atomic",
            Strategy::BlockShared => "block-shared",
            Strategy::WarpPrivate => "warp-private",
            Strategy::WarpAggregated => "warp-aggregated",
            Strategy::ThreadPrivate => "thread-private",
        }
    }

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
        Strategy::GPU
            .into_iter()
            .chain([Strategy::ThreadPrivate])
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                crate::Error::invalid(format!(
                    "unknown strategy '{s}' (expected one of: {})",
                    Strategy::all_names()
                ))
            })
    }
}

/// What `auto` looks at before choosing.
#[derive(Clone, Copy, Debug)]
pub struct AutoInputs {
    /// Bytes of one block's shared memory the block-private strategies need.
    pub private_bytes: usize,
    /// Shared memory one block may use.
    pub smem_per_block: usize,
    /// Fraction of probed samples that fell in the most frequent bin.
    pub top_bin_fraction: f64,
    pub compute_capability: (i32, i32),
}

/// Above this share of samples in one bin, `auto` aggregates within the warp first on devices
/// whose shared atomics serialise on one address.
pub const SKEW_THRESHOLD: f64 = 0.25;

/// `auto`'s choice; the measurements behind it are in docs/PERF.md.
///
/// On Hopper (sm_90) a block-private histogram in shared memory ran at 91-92% of the read
/// bandwidth on uniform, 90%-hot and all-hot i32 data alike: the shared-memory atomic unit
/// already combines a warp's updates to one address, so `__match_any_sync` only adds work
/// (55-73% there), and per-warp copies were no faster (86-88%) while needing 8x the memory.
/// Older devices are not measured; there, skew still selects warp aggregation.
pub fn choose(inp: AutoInputs) -> Strategy {
    if inp.private_bytes > inp.smem_per_block {
        return Strategy::GlobalAtomic;
    }
    if inp.compute_capability.0 < 9 && inp.top_bin_fraction >= SKEW_THRESHOLD {
        return Strategy::WarpAggregated;
    }
    Strategy::BlockShared
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(private_bytes: usize, top: f64, cc: (i32, i32)) -> AutoInputs {
        AutoInputs { private_bytes, smem_per_block: 200 << 10, top_bin_fraction: top, compute_capability: cc }
    }

    #[test]
    fn auto_choices() {
        assert_eq!(choose(inputs(1 << 10, 0.0, (9, 0))), Strategy::BlockShared);
        assert_eq!(choose(inputs(1 << 10, 1.0, (9, 0))), Strategy::BlockShared);
        assert_eq!(choose(inputs(1 << 10, 1.0, (8, 0))), Strategy::WarpAggregated);
        assert_eq!(choose(inputs(1 << 10, 0.1, (8, 0))), Strategy::BlockShared);
        assert_eq!(choose(inputs(300 << 10, 0.0, (9, 0))), Strategy::GlobalAtomic);
    }

    #[test]
    fn names_round_trip() {
        for s in Strategy::GPU.into_iter().chain([Strategy::ThreadPrivate]) {
            assert_eq!(s.name().parse::<Strategy>().unwrap(), s);
        }
        assert!("fast".parse::<Strategy>().is_err());
    }
}
