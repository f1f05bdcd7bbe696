#!/usr/bin/env bash
# Session call 8: scans by key of 8-byte values at 8 rows with two windows, the split look-back's
# row mask in 64 bits, an exact i32 by key test (bin28), against bin26 (call 6); CUB and torch in
# the same call; the scan tests under compute-sanitizer.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
OLD=.gpu/bin26/tally; NEW=.gpu/bin28/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
t bench
b() { echo "# $1" >> "$out/bench-scan.txt"; shift; "$@" >> "$out/bench-scan.txt" 2>&1; }
b NEW $NEW bench scan --backend cuda --log2-sizes 24,28 --reps 20
b OLD $OLD bench scan --backend cuda --log2-sizes 24,28 --reps 20 --cases "by key"
b NEW $NEW bench scan --backend cuda --log2-sizes 24,28 --reps 20 --cases "by key"
grep -v "^case" "$out/bench-scan.txt"
t peers
bash .gpu/peers/run-peers-primitives.sh > "$out/peers-primitives.txt" 2>&1; grep -i -E "scan|copy" "$out/peers-primitives.txt" | grep -E "1048576|16777216|268435456|copy"
t tests
sc=$(ls .gpu/tests28/cuda_scan-*)
( TALLY_REQUIRE_GPU=1 timeout 200 $sc > "$out/test-scan.txt" 2>&1; echo "rc $?" >> "$out/test-scan.txt" ) &
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 400 compute-sanitizer --tool $tool --error-exitcode 99 $sc --test-threads=1 --skip more_than > "$out/san-$tool.txt" 2>&1; echo "rc $?" >> "$out/san-$tool.txt" ) &
done
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED" "$out"/test-*.txt "$out"/san-*.txt
t done
