#!/usr/bin/env bash
# Session call 4: look-back slots of 128 bits read and written whole (bin32): the scan, select
# and run tests, and compute-sanitizer over the scan and run tests.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
t tests
for b in .gpu/tests32/*; do
  n=${b##*/}; n=${n%%-*}
  ( TALLY_REQUIRE_GPU=1 timeout 400 $b > "$out/test-$n.txt" 2>&1; echo "rc $?" >> "$out/test-$n.txt" ) &
done
rt=$(ls .gpu/tests32/cuda_runs-*); sc=$(ls .gpu/tests32/cuda_scan-*)
( TALLY_REQUIRE_GPU=1 TALLY_COMPACT_THREADS=256 TALLY_COMPACT_VECS=4 TALLY_COMPACT_MIN_BLOCKS=3 timeout 300 $rt --skip more_than > "$out/test-runs-256x4x3.txt" 2>&1; echo "rc $?" >> "$out/test-runs-256x4x3.txt" ) &
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 450 compute-sanitizer --tool $tool --error-exitcode 99 $rt --test-threads=1 --skip more_than > "$out/san-runs-$tool.txt" 2>&1; echo "rc $?" >> "$out/san-runs-$tool.txt" ) &
done
for tool in memcheck racecheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 450 compute-sanitizer --tool $tool --error-exitcode 99 $sc --test-threads=1 --skip more_than > "$out/san-scan-$tool.txt" 2>&1; echo "rc $?" >> "$out/san-scan-$tool.txt" ) &
done
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked" "$out"/test-*.txt "$out"/san-*.txt | head -40
t done
