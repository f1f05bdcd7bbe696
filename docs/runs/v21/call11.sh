#!/usr/bin/env bash
# Session call 11: the tidy commit (7fe53e9: the same kernels, restructured): the scan and
# reduction tests, and compute-sanitizer memcheck and racecheck over the scan tests.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
t tests
sc=$(ls .gpu/tests29/cuda_scan-*); rd=$(ls .gpu/tests29/cuda_reduce-*)
( TALLY_REQUIRE_GPU=1 timeout 300 $sc > "$out/test-scan.txt" 2>&1; echo "rc $?" >> "$out/test-scan.txt"
  TALLY_REQUIRE_GPU=1 timeout 200 $rd > "$out/test-reduce.txt" 2>&1; echo "rc $?" >> "$out/test-reduce.txt" ) &
for tool in memcheck racecheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 400 compute-sanitizer --tool $tool --error-exitcode 99 $sc --test-threads=1 --skip more_than > "$out/san-$tool.txt" 2>&1; echo "rc $?" >> "$out/san-$tool.txt" ) &
done
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED" "$out"/test-*.txt "$out"/san-*.txt
t done
