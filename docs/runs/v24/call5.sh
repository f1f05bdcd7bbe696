#!/usr/bin/env bash
# Session call 5: bin45 = call 4's kernels with the lane's first segment found by a binary
# search (TALLY_PARTITION_SEARCH=1) instead of a walk from segment 0. Partition tests, every
# histogram test, and sanitizers; the
# search modes (0 walk, 1 search first, 2 search every vector) against segment weights, twice,
# alternating; ncu of the bins kernel at 16M bins Zipf.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
T=.gpu/tests45
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 300 compute-sanitizer --tool $tool --error-exitcode 99 $T/cuda_partition --test-threads=1 > $o/san-partition-$tool.txt 2>&1; echo "rc $?" >> $o/san-partition-$tool.txt ) &
done
TALLY_REQUIRE_GPU=1 timeout 120 $T/cuda_partition --test-threads=1 > $o/test-cuda_partition.txt 2>&1; echo "rc $?" >> $o/test-cuda_partition.txt
grep -E "^test result|^rc|FAILED|panicked" $o/test-cuda_partition.txt | head -6
# Every histogram test, the 2^32-sample and u8 ones included (both run the partition).
TALLY_REQUIRE_GPU=1 timeout 330 $T/cuda_histogram --test-threads=1 > $o/test-cuda_histogram.txt 2>&1; echo "rc $?" >> $o/test-cuda_histogram.txt
grep -E "^test result|^rc|FAILED|panicked" $o/test-cuda_histogram.txt | head -6
wait
for f in $o/san-*.txt; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^rc|test result" $f | tail -4; done
S="bench hist --backend cuda --dtypes i32 --bins 1048576,16777216 --distributions uniform,zipf --strategies partition --reps 10"
for r in 1 2; do
for d in "-DTALLY_PARTITION_SEARCH=0" "" "-DTALLY_PARTITION_SEARCH=2" "-DTALLY_PARTITION_SEGMENT_WEIGHT=32" "-DTALLY_PARTITION_SEGMENT_WEIGHT=16"; do
  echo "== run $r [$d]" >> $o/sweep.txt
  TALLY_NVRTC_OPTIONS="$d" timeout 60 .gpu/bin45/tally $S >> $o/sweep.txt 2>&1
done
done
grep -E "==|partition  " $o/sweep.txt
timeout 120 ncu --kernel-name regex:"tally_partition_(scatter|bins)" --launch-count 2 --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
  .gpu/bin45/tally bench hist --backend cuda --dtypes i32 --bins 16777216 --distributions zipf --strategies auto --reps 1 --size 67108864 > $o/ncu-16m-zipf.txt 2>&1
grep -E "  tally_partition|Duration|DRAM Throughput|SM Active Cycles|Elapsed Cycles|Issued Warp" $o/ncu-16m-zipf.txt | head -14
tar czf "${OUT:-gpu-out}/call5.tgz" -C $o .
