#!/usr/bin/env bash
# Session call 3: u8 means binned through a table of channel sums (bin50/tests50) against the
# f64 path of call 2's build (bin49), alternately; image tests and sanitizers on the new build.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
T=.gpu/tests50
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 300 compute-sanitizer --tool $tool --error-exitcode 99 $T/cuda_image --test-threads=1 > $o/san-image-$tool.txt 2>&1; echo "rc $?" >> $o/san-image-$tool.txt ) &
done
TALLY_REQUIRE_GPU=1 timeout 200 $T/cuda_image --test-threads=1 > $o/test-cuda_image.txt 2>&1; echo "rc $?" >> $o/test-cuda_image.txt
grep -E "^test result|^rc|FAILED|panicked" $o/test-cuda_image.txt | head -8
wait
S="bench image --backend cuda --reps 10 --dtypes u8 --strategies auto"
for r in 1 2; do
  for b in bin49 bin50; do
    echo "== run $r $b" >> $o/bench-image.txt
    timeout 100 .gpu/$b/tally $S >> $o/bench-image.txt 2>&1
  done
done
grep -E "==|image " $o/bench-image.txt
for f in $o/san-*.txt; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^rc|test result" $f | tail -4; done
tar czf "${OUT:-gpu-out}/call3.tgz" -C $o .
