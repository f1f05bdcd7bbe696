#!/usr/bin/env bash
# Session call 5: the committed kernels with 16,384-key units (bin51/tests51): the partition
# tests and sanitizers; the final figures of auto at 1M / 16M bins and 2-D 1024 x 1024.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
T=.gpu/tests51 B=.gpu/bin51/tally
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 330 compute-sanitizer --tool $tool --error-exitcode 99 $T/cuda_partition --test-threads=1 > $o/san-partition-$tool.txt 2>&1; echo "rc $?" >> $o/san-partition-$tool.txt ) &
done
TALLY_REQUIRE_GPU=1 timeout 200 $T/cuda_partition --test-threads=1 > $o/test-cuda_partition.txt 2>&1; echo "rc $?" >> $o/test-cuda_partition.txt
grep -E "^test result|^rc|FAILED|panicked" $o/test-cuda_partition.txt | head -8
timeout 100 $B bench hist --backend cuda --dtypes i32 --bins 1048576,16777216 --distributions uniform,zipf,hot90 --strategies auto --reps 10 > $o/bench-hist.txt 2>&1
cat $o/bench-hist.txt
timeout 100 $B bench hist2d --backend cuda --reps 10 --strategies auto,global-l2 > $o/bench-hist2d.txt 2>&1
cat $o/bench-hist2d.txt
wait
for f in $o/san-*.txt; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^rc|test result" $f | tail -4; done
tar czf "${OUT:-gpu-out}/call5.tgz" -C $o .
