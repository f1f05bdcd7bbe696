#!/usr/bin/env bash
# Session call 7: the partition tests with smaller tuned chunks (2^8, 2^12, 2^13 keys) and the
# largest tile at 1M bins, on the final kernels; memcheck and racecheck beside them.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
T=.gpu/tests47
for tool in memcheck racecheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 240 compute-sanitizer --tool $tool --error-exitcode 99 $T/cuda_partition --test-threads=1 smaller_chunks tuned_shapes > $o/san-partition-$tool.txt 2>&1; echo "rc $?" >> $o/san-partition-$tool.txt ) &
done
TALLY_REQUIRE_GPU=1 timeout 150 $T/cuda_partition --test-threads=1 > $o/test-cuda_partition.txt 2>&1; echo "rc $?" >> $o/test-cuda_partition.txt
grep -E "^test |^test result|^rc|FAILED|panicked" $o/test-cuda_partition.txt | head -12
wait
for f in $o/san-*.txt; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^rc|test result" $f | tail -4; done
tar czf "${OUT:-gpu-out}/call7.tgz" -C $o .
