#!/usr/bin/env bash
# Session call 4: the committed partition (bin44: call 3's kernels, a segment weighing 64 keys
# in the split between blocks). Tests and sanitizers on it; the large-bin bench of tally auto,
# partition and global-l2 against v23 (bin40) twice; weights 128 and 256; CUB HistogramEven and
# the naive kernel at 1M bins in the same call.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
T=.gpu/tests44
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 300 compute-sanitizer --tool $tool --error-exitcode 99 $T/cuda_partition --test-threads=1 > $o/san-partition-$tool.txt 2>&1; echo "rc $?" >> $o/san-partition-$tool.txt ) &
done
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_large_bins scripts/peers/cub_large_bins.cu > $o/cub-build.txt 2>&1 ) &
for t in cuda_partition cuda_properties; do
  TALLY_REQUIRE_GPU=1 timeout 200 $T/$t --test-threads=1 > $o/test-$t.txt 2>&1; echo "rc $?" >> $o/test-$t.txt
  grep -E "^test result|^rc|FAILED|panicked" $o/test-$t.txt | head -6
done
TALLY_REQUIRE_GPU=1 timeout 150 $T/cuda_histogram --test-threads=1 --skip cuda_more_than_2_pow_32_samples > $o/test-cuda_histogram.txt 2>&1; echo "rc $?" >> $o/test-cuda_histogram.txt
grep -E "^test result|^rc|FAILED|panicked" $o/test-cuda_histogram.txt | head -6
wait
for f in $o/san-*.txt; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^rc|test result" $f | tail -4; done
B="bench hist --backend cuda --dtypes i32 --bins 262144,1048576,4194304,16777216 --distributions uniform,zipf,hot90"
for r in 1 2; do
  echo "== bin40 run $r" >> $o/bench.txt
  timeout 60 .gpu/bin40/tally $B --strategies auto --reps 10 >> $o/bench.txt 2>&1
  echo "== bin44 run $r" >> $o/bench.txt
  timeout 100 .gpu/bin44/tally $B --strategies auto,partition,global-l2 --reps 10 >> $o/bench.txt 2>&1
done
grep -E "==|i32" $o/bench.txt | head -100
echo "== bin44 f32" >> $o/bench-f32.txt
timeout 60 .gpu/bin44/tally bench hist --backend cuda --dtypes f32 --bins 1048576,16777216 --distributions uniform,zipf --strategies auto --reps 10 >> $o/bench-f32.txt 2>&1
cat $o/bench-f32.txt
S="bench hist --backend cuda --dtypes i32 --bins 1048576,16777216 --distributions uniform,zipf --strategies partition --reps 10"
for d in "" "-DTALLY_PARTITION_SEGMENT_WEIGHT=128" "-DTALLY_PARTITION_SEGMENT_WEIGHT=256"; do
  echo "== sweep [$d]" >> $o/sweep.txt
  TALLY_NVRTC_OPTIONS="$d" timeout 60 .gpu/bin44/tally $S >> $o/sweep.txt 2>&1
done
grep -E "==|partition  " $o/sweep.txt
timeout 100 /tmp/cub_large_bins > $o/cub-large.txt 2>&1; echo "rc $?" >> $o/cub-large.txt
cat $o/cub-large.txt
tar czf "${OUT:-gpu-out}/call4.tgz" -C $o .
