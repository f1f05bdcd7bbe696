#!/usr/bin/env bash
# Session call 1: scans by key whose tiles with a segment head publish their aggregate as their
# prefix and stop the look-back (bin21) against v20 (bin18): tests, benchmarks alternating,
# CUB and torch in the same call, then a shape sweep of the scan by key.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
OLD=.gpu/bin18/tally; NEW=.gpu/bin21/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
t tests
for b in .gpu/tests21/*; do
  n=${b##*/}; n=${n%%-*}
  ( TALLY_REQUIRE_GPU=1 timeout 200 $b > "$out/test-$n.txt" 2>&1; echo "rc $?" >> "$out/test-$n.txt" ) &
done
wait
grep -H -E "^test result|^rc [0-9]|panicked|FAILED" "$out"/test-*.txt
t bench
K="by key"
echo "# NEW" >> "$out/bench-scan.txt"; $NEW bench scan --backend cuda --log2-sizes 24,28 --reps 20 --cases "$K" >> "$out/bench-scan.txt" 2>&1
echo "# OLD" >> "$out/bench-scan.txt"; $OLD bench scan --backend cuda --log2-sizes 24,28 --reps 20 >> "$out/bench-scan.txt" 2>&1
echo "# NEW" >> "$out/bench-scan.txt"; $NEW bench scan --backend cuda --log2-sizes 24,28 --reps 20 >> "$out/bench-scan.txt" 2>&1
grep -v "^case" "$out/bench-scan.txt"
t peers
bash .gpu/peers/run-peers-primitives.sh > "$out/peers-primitives.txt" 2>&1; grep -i -E "scan|copy" "$out/peers-primitives.txt" | grep -E "16777216|268435456|copy"
t sweep
for s in 256,4,3 256,4,4 256,4,5 256,4,6 256,8,2 256,8,3 128,8,4 128,8,6 128,16,3 128,16,4; do
  IFS=, read th v bl <<< "$s"
  echo "# $s" >> "$out/sweep-scan.txt"
  TALLY_SCAN_BLOCK_THREADS=$th TALLY_SCAN_VECS=$v TALLY_SCAN_MIN_BLOCKS=$bl timeout 40 $NEW bench scan --backend cuda --log2-sizes 28 --reps 10 --cases "f32 by key/8,i32->i64 by key" >> "$out/sweep-scan.txt" 2>&1
done
grep -v "^case" "$out/sweep-scan.txt"
t done
