#!/usr/bin/env bash
# Session call 11: the widening scans' store buffer in 1 KiB rounds (bin18) against bin16: scan
# benchmarks alternating, the scan tests at the default and at a tuned 256-thread shape that the
# per-thread-sized buffer pushed past 48 KiB of static shared memory, compute-sanitizer.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
OLD=.gpu/bin16/tally; NEW=.gpu/bin18/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
t bench
for v in NEW OLD NEW; do
  echo "# $v" >> "$out/bench-scan.txt"
  ${!v} bench scan --backend cuda --log2-sizes 24,28 --reps 20 2>&1 | grep -v "^case" >> "$out/bench-scan.txt"
done
cat "$out/bench-scan.txt"
t tests
sc=$(ls .gpu/tests18/cuda_scan-*)
( TALLY_REQUIRE_GPU=1 timeout 250 $sc > "$out/test-scan.txt" 2>&1; echo "rc $?" >> "$out/test-scan.txt" ) &
( TALLY_SCAN_BLOCK_THREADS=256 TALLY_SCAN_VECS=4 TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 250 $sc --skip more_than > "$out/test-scan-256x4.txt" 2>&1; echo "rc $?" >> "$out/test-scan-256x4.txt" ) &
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 TALLY_SMALL=1 timeout 280 compute-sanitizer --tool $tool --error-exitcode 99 $sc --test-threads=1 --skip more_than > "$out/san-$tool.txt" 2>&1; echo "rc $?" >> "$out/san-$tool.txt" ) &
done
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED" "$out"/test-*.txt "$out"/san-*.txt
t done
