#!/usr/bin/env bash
# Session call 7 (v28): bin6 = bin5 (committed) with the scan by key's key before each thread's
# first taken from the lane before by a shuffle (lane 0 alone reads it), after call 6 found
# those per-lane loads at 4.25x their ideal L2 sectors. bin6's scan tests and compute-sanitizer
# over them; scans by key of bin5 and bin6 alternating twice; ncu's sectors of bin6; CUB.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin5/tally.xz .gpu/bin6/tally.xz .gpu/tests6/*.xz
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_primitives .gpu/peers/cub_primitives.cu > $o/cub-build.txt 2>&1 ) &
t() { echo "== $1 $(date +%T)"; }
t tests
TALLY_REQUIRE_GPU=1 timeout 300 .gpu/tests6/cuda_scan > $o/tests-cuda_scan.txt 2>&1; echo "rc $?" >> $o/tests-cuda_scan.txt
grep -E "^test result|^rc|panicked|FAILED" $o/tests-cuda_scan.txt | head -5
t bench
for r in 1 2; do
  for b in bin5 bin6; do
    timeout 90 .gpu/$b/tally bench scan --backend cuda --log2-sizes 20,24,28 --reps 20 --cases "by key" > $o/scan-$b-r$r.txt 2>&1
    echo "-- $b round $r"; grep -v "^#\|^case" $o/scan-$b-r$r.txt
  done
done
t ncu
timeout 200 ncu --set full --kernel-name tally_scan --launch-skip 2 --launch-count 1 -o $o/sbk6 .gpu/bin6/tally bench scan --backend cuda --log2-sizes 28 --reps 3 --cases "f32 by key/8" > $o/sbk6-run.txt 2>&1
ncu --import $o/sbk6.ncu-rep > $o/sbk6.txt 2>&1
ncu --import $o/sbk6.ncu-rep --page source --csv --print-source sass > $o/sbk6-sass.csv 2>&1 || true
grep -E "Duration|DRAM Throughput|L2 Hit Rate" $o/sbk6.txt; grep -A1 "global loads from\|global stores to" $o/sbk6.txt | grep -o "loads from [A-Z0-9]*\|stores to [A-Z0-9]*\|only [0-9.]* of"
wait
t cub
timeout 150 /tmp/cub_primitives > $o/cub.txt 2>&1; echo "rc $?" >> $o/cub.txt
grep -E "ByKey|^rc" $o/cub.txt
t sanitizers
# memcheck and synccheck over every scan test but the 2^31 one; racecheck (slower) over the
# two named by key.
for tool in memcheck racecheck synccheck; do
  filter=""; [ $tool = racecheck ] && filter="key"
  ( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 TALLY_SMALL=1 timeout 220 compute-sanitizer --tool $tool --error-exitcode 99 .gpu/tests6/cuda_scan --test-threads=1 --skip more_than $filter > "$o/san-$tool.txt" 2>&1; echo "rc $?" >> "$o/san-$tool.txt" ) &
done
wait
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^test result" $o/san-$tool.txt | tr '\n' ' ') $(tail -1 $o/san-$tool.txt)"; done
t end
xz -T4 -9 $o/sbk6-sass.csv
tar czf $OUT/call7.tgz --exclude="*.ncu-rep" -C /tmp o
