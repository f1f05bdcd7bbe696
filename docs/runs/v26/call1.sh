#!/usr/bin/env bash
# Session call 1: reduce-by-key's split look-back (issue 13). cuda_runs (with the new test that
# the split gives the fixed look-back's bits); bench reduce-by-key with the split (default), the
# pair's fixed look-back (=0) and the fast look-back (=2, not deterministic) alternating; rle and
# unique once; CUB and torch in the same call; the small-call latency probe (issue 11); then
# compute-sanitizer over cuda_runs.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_primitives .gpu/peers/cub_primitives.cu > $o/cub-build.txt 2>&1
  nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/small_call scripts/latency/small_call.cu -lcuda > $o/small-build.txt 2>&1 ) &
B=.gpu/bin1/tally
TALLY_REQUIRE_GPU=1 timeout 200 .gpu/tests1/cuda_runs > $o/tests-runs.txt 2>&1; echo "rc $?" >> $o/tests-runs.txt
tail -4 $o/tests-runs.txt
for round in 1 2; do
  for m in 1 0 2; do
    TALLY_NVRTC_OPTIONS="-DTALLY_RUNS_SPLIT_LOOKBACK=$m" timeout 60 $B bench reduce-by-key --backend cuda --log2-sizes 20,24,28 --reps 20 > $o/bench-rbk-m$m-r$round.txt 2>&1
    echo "== split=$m round $round"; grep -v "^#" $o/bench-rbk-m$m-r$round.txt | tail -4
  done
done
timeout 60 $B bench rle --backend cuda --log2-sizes 20,24,28 --reps 20 > $o/bench-rle.txt 2>&1
timeout 60 $B bench unique --backend cuda --log2-sizes 20,24,28 --reps 20 > $o/bench-unique.txt 2>&1
timeout 60 $B bench reduce --backend cuda --log2-sizes 10,16,20,24 --dtypes f32 --ops sum --reps 50 > $o/bench-reduce-small.txt 2>&1
cat $o/bench-rle.txt $o/bench-unique.txt $o/bench-reduce-small.txt | grep -v "^#"
wait
cat $o/cub-build.txt $o/small-build.txt | tail -5
timeout 150 /tmp/cub_primitives > $o/cub.txt 2>&1; echo "rc $?" >> $o/cub.txt
grep -E "n= *268435456|n= *1048576 |^rc|memcpy|copy" $o/cub.txt
for m in auto spin; do timeout 60 /tmp/small_call $m > $o/small-call-$m.txt 2>&1; echo "rc $?" >> $o/small-call-$m.txt; cat $o/small-call-$m.txt; done
for tool in memcheck racecheck synccheck; do
  ( TALLY_SMALL=1 TALLY_REQUIRE_GPU=1 timeout 280 compute-sanitizer --tool $tool --error-exitcode 99 .gpu/tests1/cuda_runs --test-threads=1 > $o/san-runs-$tool.txt 2>&1; echo "rc $?" >> $o/san-runs-$tool.txt ) &
done
wait
for f in $o/san-*.txt; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^rc|test result" $f | tail -4; done
tar czf "${OUT:-gpu-out}/call1.tgz" -C $o .
