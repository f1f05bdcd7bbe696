#!/usr/bin/env bash
# Session call 1: 2-D histograms through the partition (bin48/tests48). Tests (partition, weighted
# and 2-D, properties) with sanitizers over the partition tests; the 2-D bench with every
# strategy, 1024 x 1024 and 4096 x 4096, beside the read bandwidth of the same run; the 1-D
# partition at 1M / 16M bins as a check that it did not move.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
T=.gpu/tests48 B=.gpu/bin48/tally
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 330 compute-sanitizer --tool $tool --error-exitcode 99 $T/cuda_partition --test-threads=1 pairs chunks coexist > $o/san-partition-$tool.txt 2>&1; echo "rc $?" >> $o/san-partition-$tool.txt ) &
done
for t in cuda_partition cuda_weighted cuda_properties; do
  TALLY_REQUIRE_GPU=1 timeout 240 $T/$t --test-threads=1 > $o/test-$t.txt 2>&1; echo "rc $?" >> $o/test-$t.txt
  echo "== $t"; grep -E "^test result|^rc|FAILED|panicked" $o/test-$t.txt | head -8
done
wait
for f in $o/san-*.txt; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^rc|test result" $f | tail -4; done
timeout 120 $B bench hist2d --backend cuda --reps 10 > $o/bench-hist2d.txt 2>&1
timeout 100 $B bench hist2d --backend cuda --reps 5 --bins 4096 --strategies auto,partition,global-l2 >> $o/bench-hist2d.txt 2>&1
cat $o/bench-hist2d.txt
timeout 60 $B bench hist --backend cuda --dtypes i32 --bins 1048576,16777216 --distributions uniform,zipf --strategies auto --reps 10 > $o/bench-hist.txt 2>&1
cat $o/bench-hist.txt
tar czf "${OUT:-gpu-out}/call1.tgz" -C $o .
