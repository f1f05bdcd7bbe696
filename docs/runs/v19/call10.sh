#!/usr/bin/env bash
# Session call 10: scans by key take the key before a thread's piece from the previous lane
# (bin17) against bin16: scan benchmarks alternating, ncu of the scan by key, the scan tests
# and compute-sanitizer over them.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
OLD=.gpu/bin16/tally; NEW=.gpu/bin17/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
t bench
for v in NEW OLD NEW OLD; do
  echo "# $v" >> "$out/bench-scan.txt"
  ${!v} bench scan --backend cuda --log2-sizes 24,28 --reps 20 2>&1 | grep -v "^case" >> "$out/bench-scan.txt"
done
cat "$out/bench-scan.txt"
t ncu
timeout 150 ncu --set full --kernel-name tally_scan --launch-skip 16 --launch-count 1 $NEW bench scan --backend cuda --log2-sizes 28 --reps 1 > "$out/ncu-scan-by-key.txt" 2>&1
grep -E "Duration|DRAM Throughput|Issue Slots Busy|Executed Instructions  |excessive" "$out/ncu-scan-by-key.txt"
t tests
sc=$(ls .gpu/tests17/cuda_scan-*)
( TALLY_REQUIRE_GPU=1 timeout 250 $sc > "$out/test-scan.txt" 2>&1; echo "rc $?" >> "$out/test-scan.txt" ) &
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 TALLY_SMALL=1 timeout 280 compute-sanitizer --tool $tool --error-exitcode 99 $sc --test-threads=1 --skip more_than > "$out/san-$tool.txt" 2>&1; echo "rc $?" >> "$out/san-$tool.txt" ) &
done
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED" "$out"/test-*.txt "$out"/san-*.txt
t done
