#!/usr/bin/env bash
# Session call 6: the committed kernels (bin46: a binary search for every vector's segment,
# TALLY_PARTITION_SEARCH=2, the default). Partition and property tests and sanitizers on it;
# segment weights 32, 48, 64 twice, alternating; auto at the large bin counts.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
T=.gpu/tests46
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 300 compute-sanitizer --tool $tool --error-exitcode 99 $T/cuda_partition --test-threads=1 > $o/san-partition-$tool.txt 2>&1; echo "rc $?" >> $o/san-partition-$tool.txt ) &
done
for t in cuda_partition cuda_properties; do
  TALLY_REQUIRE_GPU=1 timeout 200 $T/$t --test-threads=1 > $o/test-$t.txt 2>&1; echo "rc $?" >> $o/test-$t.txt
  grep -E "^test result|^rc|FAILED|panicked" $o/test-$t.txt | head -6
done
wait
for f in $o/san-*.txt; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^rc|test result" $f | tail -4; done
S="bench hist --backend cuda --dtypes i32 --bins 1048576,16777216 --distributions uniform,zipf --strategies partition --reps 10"
for r in 1 2; do
for d in "-DTALLY_PARTITION_SEGMENT_WEIGHT=32" "-DTALLY_PARTITION_SEGMENT_WEIGHT=48" ""; do
  echo "== run $r [$d]" >> $o/sweep.txt
  TALLY_NVRTC_OPTIONS="$d" timeout 60 .gpu/bin46/tally $S >> $o/sweep.txt 2>&1
done
done
grep -E "==|partition  " $o/sweep.txt
timeout 100 .gpu/bin46/tally bench hist --backend cuda --dtypes i32 --bins 262144,1048576,4194304,16777216 --distributions uniform,zipf,hot90 --strategies auto --reps 10 > $o/bench.txt 2>&1
cat $o/bench.txt
tar czf "${OUT:-gpu-out}/call6.tgz" -C $o .
