#!/usr/bin/env bash
# Session call 8: the widening scans' row buffer padded against bank conflicts (bin16) against
# bin15; widening scans held in registers again now that their stores are coalesced (tuning
# knobs); the scan tests and compute-sanitizer over bin16.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
OLD=.gpu/bin15/tally; NEW=.gpu/bin16/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
t bench
for v in NEW OLD NEW; do
  echo "# $v" >> "$out/bench-scan.txt"
  ${!v} bench scan --backend cuda --log2-sizes 24,28 --reps 20 2>&1 | grep -v "^case" >> "$out/bench-scan.txt"
done
cat "$out/bench-scan.txt"
t sweep
for s in 0,8,4 0,8,3 0,16,3 0,16,2 1,8,6; do
  IFS=, read st v b <<< "$s"
  echo "# staged $st rows $v blocks $b" >> "$out/sweep-scan.txt"
  TALLY_SCAN_STAGED=$st TALLY_SCAN_VECS=$v TALLY_SCAN_MIN_BLOCKS=$b timeout 60 $NEW bench scan --backend cuda --log2-sizes 28 --reps 10 2>&1 | grep "i32->i64" >> "$out/sweep-scan.txt"
done
cat "$out/sweep-scan.txt"
t tests
sc=$(ls .gpu/tests16/cuda_scan-*)
( TALLY_REQUIRE_GPU=1 timeout 250 $sc > "$out/test-scan.txt" 2>&1; echo "rc $?" >> "$out/test-scan.txt" ) &
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 TALLY_SMALL=1 timeout 280 compute-sanitizer --tool $tool --error-exitcode 99 $sc --test-threads=1 --skip more_than > "$out/san-$tool.txt" 2>&1; echo "rc $?" >> "$out/san-$tool.txt" ) &
done
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED" "$out"/test-*.txt "$out"/san-*.txt
t done
