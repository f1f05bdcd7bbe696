#!/usr/bin/env bash
# Session call 3: the per-chunk histogram (bin43): one kind of unit (parts of 32 tiles'
# segments), the split between blocks weighted by 16 keys a segment, the ticket after next and
# the next unit's segments loaded before a unit is counted. Tests and sanitizers; bench against
# v23 (bin40); a sweep of the weight and the unit size; ncu of both kernels.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
T=.gpu/tests43
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 300 compute-sanitizer --tool $tool --error-exitcode 99 $T/cuda_partition --test-threads=1 > $o/san-partition-$tool.txt 2>&1; echo "rc $?" >> $o/san-partition-$tool.txt ) &
done
for t in cuda_partition cuda_properties; do
  TALLY_REQUIRE_GPU=1 timeout 200 $T/$t --test-threads=1 > $o/test-$t.txt 2>&1; echo "rc $?" >> $o/test-$t.txt
  grep -E "^test result|^rc|FAILED|panicked" $o/test-$t.txt | head -6
done
TALLY_REQUIRE_GPU=1 timeout 150 $T/cuda_histogram --test-threads=1 --skip cuda_more_than_2_pow_32_samples > $o/test-cuda_histogram.txt 2>&1; echo "rc $?" >> $o/test-cuda_histogram.txt
grep -E "^test result|^rc|FAILED|panicked" $o/test-cuda_histogram.txt | head -6
wait
for f in $o/san-*.txt; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^rc|test result" $f | tail -4; done
B="bench hist --backend cuda --dtypes i32 --bins 1048576,4194304,16777216 --distributions uniform,zipf,hot90 --strategies auto,partition --reps 10"
for r in 1 2; do
  for v in 40 42; do
    echo "== bin$v run $r" >> $o/bench.txt
    timeout 100 .gpu/bin$v/tally $B >> $o/bench.txt 2>&1
  done
done
grep -E "==|partition  " $o/bench.txt | head -80
S="bench hist --backend cuda --dtypes i32 --bins 1048576,16777216 --distributions uniform,zipf --strategies partition --reps 10"
for d in "" "-DTALLY_PARTITION_SEGMENT_WEIGHT=4" "-DTALLY_PARTITION_SEGMENT_WEIGHT=32" "-DTALLY_PARTITION_SEGMENT_WEIGHT=64" "-DTALLY_PARTITION_UNIT_KEYS=4096" "-DTALLY_PARTITION_UNIT_KEYS=16384" "-DTALLY_PARTITION_UNROLL=2"; do
  echo "== sweep [$d]" >> $o/sweep.txt
  TALLY_NVRTC_OPTIONS="$d" timeout 60 .gpu/bin43/tally $S >> $o/sweep.txt 2>&1
done
grep -E "==|partition  " $o/sweep.txt
for case in "1048576 zipf" "16777216 uniform" "1048576 uniform"; do set -- $case
timeout 80 ncu --kernel-name regex:"tally_partition_(scatter|bins)" --launch-count 2 --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
  .gpu/bin43/tally bench hist --backend cuda --dtypes i32 --bins $1 --distributions $2 --strategies auto --reps 1 --size 67108864 > $o/ncu-$1-$2.txt 2>&1
echo "== ncu $1 $2"; grep -E "  tally_partition|Duration|DRAM Throughput|SM Active Cycles|Elapsed Cycles" $o/ncu-$1-$2.txt | head -12
done
tar czf "${OUT:-gpu-out}/call3.tgz" -C $o .
