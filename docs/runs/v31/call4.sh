#!/usr/bin/env bash
# v31 call 4: racecheck of the large-bin switch points, now one test per point (call 3's single
# test ran past 575 s), side by side, TALLY_RACECHECK=1; beside them the whole cuda_histogram
# suite at its normal sizes (TALLY_REQUIRE_GPU=1), the four new wrap tests and the split ones
# among them.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call4.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
start=$(date +%s)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
H=.gpu/tests5/cuda_histogram
( s=$(date +%s); timeout 560 $H --test-threads=1 > $o/test-histogram.txt 2>&1
  echo "rc $? secs $(( $(date +%s) - s )) :: cuda_histogram whole" >> $o/test-histogram.txt ) &
i=0
for t in cuda_large_bins_around_the_block_copy cuda_large_bins_around_the_16_bit_block_copy \
         cuda_large_bins_around_the_cluster_copy cuda_large_bins_around_the_16_bit_cluster_copy; do
  ( s=$(date +%s)
    TALLY_SMALL=1 TALLY_SKIP_HUGE=1 TALLY_RACECHECK=1 timeout 560 compute-sanitizer --tool racecheck --error-exitcode 99 \
      $H --test-threads=1 $t --exact > $o/san-$i.txt 2>&1
    echo "rc $? secs $(( $(date +%s) - s )) :: racecheck $t" >> $o/san-$i.txt ) &
  i=$((i + 1))
done
wait
for f in $(ls $o/san-*.txt | sort -V) $o/test-histogram.txt; do
  echo "$(tail -1 $f) | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1) | $(grep -E '^test result' $f | tail -1 | cut -c1-60)"
done | tee $o/summary.txt
