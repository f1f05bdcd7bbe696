#!/usr/bin/env bash
# Session call 2: image brightness histograms on the GPU (bin49/tests49): tests and sanitizers;
# the partition and 2-D tests after the review's additions; `tally bench image`; 2-D at 256 x 256
# and 300 x 300 (where auto now partitions); i32 at 65,536 bins (issue 14's 85% goal).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
T=.gpu/tests49 B=.gpu/bin49/tally
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 300 compute-sanitizer --tool $tool --error-exitcode 99 $T/cuda_image --test-threads=1 > $o/san-image-$tool.txt 2>&1; echo "rc $?" >> $o/san-image-$tool.txt ) &
done
for t in cuda_image cuda_partition cuda_weighted; do
  TALLY_REQUIRE_GPU=1 timeout 240 $T/$t --test-threads=1 > $o/test-$t.txt 2>&1; echo "rc $?" >> $o/test-$t.txt
  echo "== $t"; grep -E "^test result|^rc|FAILED|panicked" $o/test-$t.txt | head -8
done
timeout 150 $B bench image --backend cuda --reps 10 > $o/bench-image.txt 2>&1; cat $o/bench-image.txt
timeout 100 $B bench hist2d --backend cuda --reps 10 --bins 256 --distributions uniform,blob --strategies auto,partition,global-l2,global-atomic > $o/bench-hist2d.txt 2>&1
timeout 100 $B bench hist2d --backend cuda --reps 10 --bins 300 --distributions uniform,blob --strategies auto,partition,global-l2 >> $o/bench-hist2d.txt 2>&1
cat $o/bench-hist2d.txt
timeout 80 $B bench hist --backend cuda --dtypes i32 --bins 65536 --distributions uniform,zipf --strategies auto,block-shared-16,partition --reps 10 > $o/bench-hist.txt 2>&1
cat $o/bench-hist.txt
wait
for f in $o/san-*.txt; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^rc|test result" $f | tail -4; done
tar czf "${OUT:-gpu-out}/call2.tgz" -C $o .
