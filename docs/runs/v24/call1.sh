#!/usr/bin/env bash
# Session call 1: the partition rebuilt as three launches with 16-bit keys in tile regions
# (bin41) against v23's four launches (bin40): partition tests and compute-sanitizer over them,
# the histogram and property tests, then the large-bin bench alternating old and new twice, and
# ncu of the new kernels at 1M bins.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
T=.gpu/tests41
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 300 compute-sanitizer --tool $tool --error-exitcode 99 $T/cuda_partition --test-threads=1 > $o/san-partition-$tool.txt 2>&1; echo "rc $?" >> $o/san-partition-$tool.txt ) &
done
for t in cuda_partition cuda_histogram cuda_properties; do
  TALLY_REQUIRE_GPU=1 timeout 200 $T/$t --test-threads=1 > $o/test-$t.txt 2>&1; echo "rc $?" >> $o/test-$t.txt
  grep -E "^test result|^rc|FAILED|panicked" $o/test-$t.txt | head -6
done
wait
for f in $o/san-*.txt; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^rc|test result" $f | tail -4; done
B="bench hist --backend cuda --dtypes i32 --bins 262144,1048576,4194304,16777216 --distributions uniform,zipf,hot90 --strategies auto,partition --reps 10"
for r in 1 2; do
  for v in 40 41; do
    echo "== bin$v run $r" >> $o/bench.txt
    timeout 120 .gpu/bin$v/tally $B >> $o/bench.txt 2>&1
  done
done
grep -E "==|partition|auto" $o/bench.txt | head -80
timeout 150 ncu --kernel-name regex:tally_partition --launch-count 3 --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
  .gpu/bin41/tally bench hist --backend cuda --dtypes i32 --bins 1048576 --distributions uniform --strategies partition --reps 1 --size 67108864 > $o/ncu-1m.txt 2>&1
grep -E "tally_partition|Duration|DRAM Throughput|Memory Throughput|Registers|Achieved Occupancy|Compute \(SM\)" $o/ncu-1m.txt | head -40
tar czf "${OUT:-gpu-out}/call1.tgz" -C $o .
