#!/usr/bin/env bash
# Session call 9: the committed weights (64 up to 128 chunks, 24 past: bin53/tests53): auto at
# 1M, 8M and 16M bins, the partition tests, then memcheck over two of them.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
timeout 100 .gpu/bin53/tally bench hist --backend cuda --dtypes i32 --bins 1048576,8388608,16777216 --distributions uniform,zipf,hot90 --strategies auto --reps 10 > $o/bench-hist.txt 2>&1
cat $o/bench-hist.txt
TALLY_REQUIRE_GPU=1 timeout 200 .gpu/tests53/cuda_partition --test-threads=1 > $o/test-cuda_partition.txt 2>&1; echo "rc $?" >> $o/test-cuda_partition.txt
grep -E "^test result|^rc|FAILED|panicked" $o/test-cuda_partition.txt | head -8
TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 99 .gpu/tests53/cuda_partition --test-threads=1 uneven large_bins > $o/san-partition-memcheck.txt 2>&1; echo "rc $?" >> $o/san-partition-memcheck.txt
grep -E "ERROR SUMMARY|^rc|test result" $o/san-partition-memcheck.txt | tail -3
tar czf "${OUT:-gpu-out}/call9.tgz" -C $o .
