#!/usr/bin/env bash
# v31 call 8: racecheck of the cluster wrap test in its final form (16-block cluster asserted,
# four keys at 20%), beside the four switch-point tests (inputs tagged) at their normal sizes.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call8.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
H=.gpu/tests5/cuda_histogram
( TALLY_SMALL=1 TALLY_RACECHECK=1 timeout 420 compute-sanitizer --tool racecheck --error-exitcode 99 $H --test-threads=1 \
    cuda_16_bit_cluster_counters_wrap_within_one_cluster --exact > $o/race-cluster-wrap.txt 2>&1
  echo "rc $?" >> $o/race-cluster-wrap.txt ) &
( timeout 420 $H --test-threads=1 cuda_large_bins_around > $o/test-switch-points.txt 2>&1; echo "rc $?" >> $o/test-switch-points.txt ) &
wait
for f in $o/race-cluster-wrap.txt $o/test-switch-points.txt; do
  echo "$(basename $f): $(tail -1 $f) | $(grep -E 'RACECHECK SUMMARY' $f | tail -1) | $(grep -E '^test result' $f | tail -1 | cut -c1-50)"
done | tee $o/summary.txt
