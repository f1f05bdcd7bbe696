#!/usr/bin/env bash
# Session call 9 (v27, bin12: the committed build after review: the 512-thread shape for the
# f32 sum by key only, the f64 sum by key at 512 x 4 x 2, a test of f32 sums by key across
# super-groups): its scan tests and compute-sanitizer over them; bench scan of bin12 against
# bin11 alternating twice; CUB in the same call.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin11/tally.xz .gpu/bin12/tally.xz .gpu/tests12/*.xz
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_primitives .gpu/peers/cub_primitives.cu > $o/cub-build.txt 2>&1 ) &
t() { echo "== $1 $(date +%T)"; }
sc=.gpu/tests12/cuda_scan
t tests
TALLY_REQUIRE_GPU=1 timeout 300 $sc > $o/tests-cuda_scan.txt 2>&1; echo "rc $?" >> $o/tests-cuda_scan.txt
grep -E "^test result|^rc|panicked|FAILED|super_groups" $o/tests-cuda_scan.txt | head
for r in 1 2; do
  for b in bin11 bin12; do
    timeout 120 .gpu/$b/tally bench scan --backend cuda --log2-sizes 24,28 --reps 20 --cases "by key" > $o/scan-$b-r$r.txt 2>&1
    echo "-- $b round $r"; grep -v "^#\|^case" $o/scan-$b-r$r.txt
  done
done
wait
t peers
timeout 150 /tmp/cub_primitives > $o/cub.txt 2>&1; echo "rc $?" >> $o/cub.txt
grep -E "DeviceScan|ByKey|^rc" $o/cub.txt | grep -E "n= *(16777216|268435456)|^rc"
t sanitizers
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 540 compute-sanitizer --tool $tool --error-exitcode 99 $sc --test-threads=1 --skip more_than > "$o/san-$tool.txt" 2>&1; echo "rc $?" >> "$o/san-$tool.txt" ) &
done
wait
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^test result" $o/san-$tool.txt | tr '\n' ' ') $(tail -1 $o/san-$tool.txt)"; done
t end
tar czf $OUT/call9.tgz -C /tmp o
