#!/usr/bin/env bash
# v30 call 2: ncu of the u8 pair prototype against one atomic a byte (why halving the atomics
# was slower), and of the small (2^20-sample) histogram kernel; then compute-sanitizer over
# every histogram test, one test a run for racecheck (v29 and before did not reach the
# large-bin tests), the binaries whole for memcheck and synccheck (TALLY_SMALL, TALLY_SKIP_HUGE).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call2.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin4/tally.xz
B=.gpu/bin4/tally
nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -o /tmp/u8p scripts/profile/u8_pairs.cu > $o/build-u8p.txt 2>&1
# Launch order with "uniform": atoms x11, then pairs16 1024x4 (checked) x11, 1024x2, 512x4,
# pairs16 unchecked 1024x4 (the 34th to 44th pairs launches), pairs8 ...
timeout 90 ncu --set full -k regex:'^atoms$' --launch-skip 3 --launch-count 1 -o $o/ncu-atoms /tmp/u8p uniform > $o/ncu-atoms.log 2>&1
timeout 90 ncu --set full -k regex:'^pairs$' --launch-skip 3 --launch-count 1 -o $o/ncu-pairs16 /tmp/u8p uniform > $o/ncu-pairs16.log 2>&1
timeout 90 ncu --set full -k regex:'^pairs$' --launch-skip 36 --launch-count 1 -o $o/ncu-pairs16-nochk /tmp/u8p uniform > $o/ncu-pairs16-nochk.log 2>&1
for r in atoms pairs16 pairs16-nochk; do
  ncu --import $o/ncu-$r.ncu-rep --page details > $o/ncu-$r.txt 2>&1
  ncu --import $o/ncu-$r.ncu-rep --page source --csv --print-source sass > $o/ncu-$r-sass.csv 2>/dev/null
  echo "== $r"; grep -E "^\s+Duration|L1/TEX Cache Throughput|Memory Throughput|Achieved Occupancy|Shared.*Wavefronts|Bank Conflicts|Issue Slots Busy|Warp Cycles Per Issued" $o/ncu-$r.txt | head -12
  python3 scripts/ncu/sass-summary.py $o/ncu-$r-sass.csv 1.5 2>/dev/null | head -25 > $o/ncu-$r-sass-summary.txt
done
# The 256-bin histogram kernel of 2^20 resident i32 (issue 14's small input): its own duration.
$B bench hist --backend cuda --size 1048576 --dtypes i32 --bins 256 --distributions uniform --strategies auto --reps 3 > /dev/null 2>&1
timeout 90 ncu --set full -k regex:'^tally_histogram$' --launch-skip 5 --launch-count 1 -o $o/ncu-small \
  $B bench hist --backend cuda --size 1048576 --dtypes i32 --bins 256 --distributions uniform --strategies auto --reps 10 > $o/ncu-small.log 2>&1
ncu --import $o/ncu-small.ncu-rep --page details > $o/ncu-small.txt 2>&1
grep -E "^\s+Duration|Elapsed Cycles|SM Active Cycles|Memory Throughput|Grid Size|Block Size|Waves Per SM" $o/ncu-small.txt | head
# Sanitizers: at most 12 runs at once, each bounded.
export TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 TALLY_SKIP_HUGE=1
runs=()
for t in cuda_large_bins_around_every_switch_over_point cuda_each_bin_once_up_to_2_pow_24 cuda_skewed_distributions_all_strategies \
         cuda_matches_reference_u8 cuda_matches_reference_i32 cuda_matches_reference_f32 cuda_matches_reference_f64 \
         cuda_matches_reference_i64 cuda_matches_reference_u16 cuda_matches_reference_u32 cuda_16_bit_counters_spill_exactly \
         cuda_bins_at_the_shared_memory_limit cuda_bins_beyond_shared_memory_fall_back cuda_f32_estimate_at_every_edge \
         cuda_passes_count_outliers_once cuda_plans_post_outliers_and_count_afresh cuda_resident_buffer_reused; do
  runs+=("racecheck cuda_histogram $t --exact")
done
for t in partition_large_bins_every_distribution partition_around_chunks_and_the_switch_point partition_every_sample_type \
         partition_in_several_slices partition_pairs_every_layout_and_binning partition_pairs_in_slices_and_small_chunks \
         partition_plans_with_different_chunks_coexist partition_smaller_chunks partition_tuned_shapes_and_ranking \
         partition_uneven_segments auto_partitions_spread_pairs; do
  runs+=("racecheck cuda_partition $t --exact")
done
runs+=("racecheck cuda_image" "racecheck cuda_weighted" "racecheck cuda_half gpu_f16_every_histogram_strategy gpu_bf16_every_histogram_strategy"
       "racecheck cuda_stream gpu_streamed_histograms" "racecheck cuda_weighted_exact")
for b in cuda_histogram cuda_partition cuda_image cuda_weighted cuda_weighted_exact cuda_stream cuda_half; do
  runs+=("memcheck $b --skip cuda_out_of_memory" "synccheck $b")
done
i=0
for r in "${runs[@]}"; do
  set -- $r; tool=$1; b=$2; shift 2
  while [ "$(jobs -rp | wc -l)" -ge 12 ]; do wait -n; done
  ( s=$(date +%s); timeout 420 compute-sanitizer --tool $tool --error-exitcode 99 .gpu/tests4/$b --test-threads=1 "$@" > $o/san-$i.txt 2>&1
    echo "rc $? secs $(( $(date +%s) - s )) :: $r" >> $o/san-$i.txt ) &
  i=$((i + 1))
done
wait
for f in $(ls $o/san-*.txt | sort -V); do
  echo "$(tail -1 $f) | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1) | $(grep -E '^test result' $f | tail -1 | cut -c1-60)"
done
