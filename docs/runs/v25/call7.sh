#!/usr/bin/env bash
# Session call 7: the segment weight by chunk count (64 up to 128 chunks, 32 past: bin52/tests52)
# against one weight of 64 (bin51), alternately twice; the partition tests on bin52 (sanitizers
# after the benches, so that they do not share the card with them).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
S="bench hist --backend cuda --dtypes i32 --bins 1048576,8388608,16777216 --distributions uniform,zipf --strategies auto --reps 10"
for r in 1 2; do
  for b in bin51 bin52; do
    echo "== run $r $b" >> $o/sweep.txt
    timeout 80 .gpu/$b/tally $S >> $o/sweep.txt 2>&1
  done
done
grep -E "==|partition  " $o/sweep.txt
TALLY_REQUIRE_GPU=1 timeout 200 .gpu/tests52/cuda_partition --test-threads=1 > $o/test-cuda_partition.txt 2>&1; echo "rc $?" >> $o/test-cuda_partition.txt
grep -E "^test result|^rc|FAILED|panicked" $o/test-cuda_partition.txt | head -8
TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 99 .gpu/tests52/cuda_partition --test-threads=1 uneven large_bins > $o/san-partition-memcheck.txt 2>&1; echo "rc $?" >> $o/san-partition-memcheck.txt
grep -E "ERROR SUMMARY|^rc|test result" $o/san-partition-memcheck.txt | tail -3
tar czf "${OUT:-gpu-out}/call7.tgz" -C $o .
