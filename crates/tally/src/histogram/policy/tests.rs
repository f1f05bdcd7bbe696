//! The policy's unit tests, with recorded devices.

use super::*;

/// Every specialisation a plan can ask for is in Variant::all, which CI compiles.
#[test]
fn plans_only_ask_for_listed_variants() {
    let all = Variant::all(90);
    for strategy in Strategy::GPU[1..].iter().filter(|&&s| s != Strategy::Partition) {
        for width in (0..=24).map(|e| 1usize << e).chain([3, 48, 255, 257, 4095, 4097, 12000, 56000]) {
            let threads = block_threads_for(*strategy, width * 4);
            let v = Variant {
                dtype: DType::I32,
                binning: Binning::Integer32,
                channels: 1,
                wide_counters: false,
                strategy: *strategy,
                block_threads: threads,
                identity: true,
                all_in_range: false,
                hot_key: false,
                hot_slots: if *strategy == Strategy::GlobalL2 { 4096 } else { 0 },
            };
            assert!(all.contains(&v), "{v:?} (width {width}) is not compiled by the CI check");
        }
    }
    assert!(Variant::all(80).iter().all(|v| !v.strategy.needs_clusters()));
}

pub(crate) fn h200() -> DeviceInfo {
    DeviceInfo {
        name: "test".into(),
        compute_capability: (9, 0),
        multiprocessors: 132,
        l2_bytes: 50 << 20,
        smem_per_block_optin: 227 << 10,
        smem_per_multiprocessor: 228 << 10,
        total_memory: 140 << 30,
        nvrtc_version: (13, 0),
        target: "sm_90".into(),
        cache_dir: None,
    }
}

#[test]
fn cluster_shapes() {
    // 1M keys, 16-bit, 128 KB per block: 16 blocks of 65,536 counters, one pass.
    let c = ClusterShape::new(1 << 20, 2, 128 << 10, &CLUSTER_SIZES).unwrap();
    assert_eq!(c, ClusterShape { cluster: 16, rank_counters: 1 << 16, slice: 1 << 20 });
    // Small histograms take the smallest cluster; odd shares round up to whole words.
    let c = ClusterShape::new(1001, 4, 128 << 10, &CLUSTER_SIZES).unwrap();
    assert_eq!((c.cluster, c.rank_counters, c.slice), (1, 1002, 1001));
    // 25,000 counters per block: 100,000 keys fit 4 blocks, 100,001 need 8.
    let c = ClusterShape::new(100_000, 4, 100_000, &CLUSTER_SIZES).unwrap();
    assert_eq!((c.cluster, c.rank_counters), (4, 25_000));
    let c = ClusterShape::new(100_001, 4, 100_000, &CLUSTER_SIZES).unwrap();
    assert_eq!((c.cluster, c.rank_counters), (8, 12_502));
    // Too many keys: the largest cluster, several passes.
    let c = ClusterShape::new(1 << 24, 2, 128 << 10, &CLUSTER_SIZES).unwrap();
    assert_eq!((c.cluster, c.slice), (16, 1 << 20));
    assert!(ClusterShape::new(10, 4, 2, &CLUSTER_SIZES).is_none());
}

#[test]
fn switch_over_points_are_where_auto_changes() {
    let info = h200();
    let s = SwitchOver::for_device(&info);
    // 32-bit copies: about 58,000 bins in 227 KB; 16-bit twice that; a 16-block cluster
    // 16x the 16-bit block; global-l2 passes of half the L2 in 32-bit counters.
    assert!((57_000..58_200).contains(&s.block_shared), "{s:?}");
    assert!((2 * s.block_shared..2 * s.block_shared + 100).contains(&s.block_shared16), "{s:?}");
    let c16 = s.cluster_shared16.unwrap();
    assert!((16 * 115_900..16 * 116_300).contains(&c16), "{s:?}");
    assert_eq!(s.global_l2_pass, (50 << 20) / 8);
    let cap = Capacity::new(&info, Binning::Integer32, 1, &Tuning::default());
    let auto = |w: usize| choose(&cap, &info, w, 0.0, 4);
    assert_eq!(auto(s.block_shared), Strategy::BlockShared);
    assert_eq!(auto(s.block_shared + 1), Strategy::BlockShared16);
    assert_eq!(auto(s.block_shared16), Strategy::BlockShared16);
    // Past the 16-bit block copy, the partition within its reach where `auto` prefers it.
    let partition_or_l2 = |w: usize| {
        if crate::histogram::strategy::partition_preferred(w, 0.0, s.global_l2_pass) {
            Strategy::Partition
        } else {
            Strategy::GlobalL2
        }
    };
    for w in [s.block_shared16 + 1, c16, s.partition] {
        assert_eq!(auto(w), partition_or_l2(w), "{w} keys");
    }
    assert_eq!(auto(s.partition + 1), Strategy::GlobalL2);
    assert_eq!(choose(&cap, &info, s.block_shared16 + 1, 0.9, 4), Strategy::GlobalL2);
    // Skewed data: global-l2 in one pass, the partition past it.
    assert_eq!(choose(&cap, &info, s.global_l2_pass, 0.5, 4), Strategy::GlobalL2);
    assert_eq!(choose(&cap, &info, s.global_l2_pass + 1, 0.5, 4), Strategy::Partition);
    assert_eq!(choose(&cap, &info, 1 << 24, 0.5, 4), Strategy::Partition);
    let one_pass = Tuning { pass_keys: Some(1 << 25), ..Tuning::default() };
    let cap_one_pass = Capacity::new(&info, Binning::Integer32, 1, &one_pass);
    assert_eq!(choose(&cap_one_pass, &info, 1 << 24, 0.5, 4), Strategy::GlobalL2);
    // 64-bit counters (2^32 samples or more) halve a pass.
    assert_eq!(choose(&cap, &info, s.global_l2_pass / 2, 0.5, 8), Strategy::GlobalL2);
    assert_eq!(choose(&cap, &info, s.global_l2_pass / 2 + 1, 0.5, 8), Strategy::Partition);
    assert_eq!(choose(&cap, &info, s.global_l2_pass / 2 + 1, 0.5, 4), Strategy::GlobalL2);
    assert_eq!((s.partition_chunk, s.partition), (1 << 15, 4096 << 15));
    let sm80 = DeviceInfo { compute_capability: (8, 0), smem_per_block_optin: 163 << 10, ..h200() };
    let s80 = SwitchOver::for_device(&sm80);
    assert_eq!((s80.cluster_shared, s80.cluster_shared16), (None, None));
    let cap80 = Capacity::new(&sm80, Binning::Integer32, 1, &Tuning::default());
    assert_eq!(choose(&cap80, &sm80, s80.block_shared16 + 1, 0.0, 4), Strategy::Partition);
    assert_eq!(choose(&cap80, &sm80, s80.block_shared16 + 1, 0.3, 4), Strategy::GlobalL2);
}

#[test]
fn strategies_that_cannot_run_degrade() {
    let info = h200();
    let cap = Capacity::new(&info, Binning::Integer32, 1, &Tuning::default());
    assert_eq!(cap.degrade(Strategy::WarpPrivate, 256), Strategy::WarpPrivate);
    assert_eq!(cap.degrade(Strategy::WarpPrivate, 20_000), Strategy::BlockShared);
    assert_eq!(cap.degrade(Strategy::BlockShared, 1 << 20), Strategy::GlobalAtomic);
    let sm80 = DeviceInfo { compute_capability: (8, 0), ..h200() };
    let cap80 = Capacity::new(&sm80, Binning::Integer32, 1, &Tuning::default());
    assert_eq!(cap80.degrade(Strategy::ClusterShared16, 1 << 20), Strategy::GlobalL2);
    assert_eq!(cap.degrade(Strategy::Partition, 3), Strategy::Partition);
    assert_eq!(cap.degrade(Strategy::Partition, 1 << 27), Strategy::Partition);
    assert_eq!(cap.degrade(Strategy::Partition, (1 << 27) + 1), Strategy::GlobalL2);
    assert_eq!(passes(10, 4), vec![(0, 4), (4, 4), (8, 2)]);
    assert_eq!(grid(0, 4096, 264), 1);
    assert_eq!(grid(1 << 40, 4096, 264), 512);
    // A cap: fewer than resident, whole clusters, at least one block, never above resident.
    assert_eq!(capped_blocks(264, None, 1), 264);
    assert_eq!(capped_blocks(264, Some(1), 1), 1);
    assert_eq!(capped_blocks(264, Some(0), 1), 1);
    assert_eq!(capped_blocks(264, Some(1000), 1), 264);
    assert_eq!(capped_blocks(128, Some(1), 16), 16);
    assert_eq!(capped_blocks(128, Some(17), 16), 32);
    assert_eq!(capped_blocks(128, Some(200), 16), 128);
    // The plain launch's floor still applies under a cap of one block.
    assert_eq!(grid(1 << 33, 4096, capped_blocks(264, Some(1), 1)), 4);
}
