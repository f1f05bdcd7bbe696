#!/usr/bin/env bash
# Session call 6: the committed build (bin26: the split look-back for scans by key into outputs of
# up to 4 bytes only) against bin24; exact sums on the H200 (issue 11); the scan tests under
# compute-sanitizer.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
OLD=.gpu/bin24/tally; NEW=.gpu/bin26/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
t tests
sc=$(ls .gpu/tests26/cuda_scan-*)
TALLY_REQUIRE_GPU=1 timeout 200 $sc > "$out/test-scan.txt" 2>&1; echo "rc $?" >> "$out/test-scan.txt"
grep -H -E "^test result|^rc [0-9]|panicked|FAILED" "$out"/test-scan.txt
t bench
b() { echo "# $1" >> "$out/bench-scan.txt"; shift; "$@" >> "$out/bench-scan.txt" 2>&1; }
for v in NEW OLD NEW OLD; do b $v ${!v} bench scan --backend cuda --log2-sizes 24,28 --reps 20 --cases "by key"; done
grep -v "^case" "$out/bench-scan.txt"
$NEW bench reduce --backend cuda --log2-sizes 20,24,28 --dtypes f32,f64 --ops sum,exact-sum --reps 30 > "$out/bench-reduce.txt" 2>&1; cat "$out/bench-reduce.txt"
t sanitizers
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 400 compute-sanitizer --tool $tool --error-exitcode 99 $sc --test-threads=1 --skip more_than > "$out/san-$tool.txt" 2>&1; echo "rc $?" >> "$out/san-$tool.txt" ) &
done
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED" "$out"/san-*.txt
t done
