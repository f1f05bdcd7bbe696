#!/usr/bin/env bash
# Session call 6: the committed runs kernel (bin34: unique with its keys in registers, encode and
# reduce-by-key through head places; 128-bit look-back slots): run tests and sanitizers, then the
# benchmarks with CUB in the same call and a few reduce-by-key shapes.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
NEW=.gpu/bin34/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
t tests
rt=$(ls .gpu/tests34/cuda_runs-*)
( TALLY_REQUIRE_GPU=1 timeout 300 $rt > "$out/test-runs.txt" 2>&1; echo "rc $?" >> "$out/test-runs.txt" ) &
( TALLY_REQUIRE_GPU=1 TALLY_COMPACT_THREADS=256 TALLY_COMPACT_VECS=4 TALLY_COMPACT_MIN_BLOCKS=3 timeout 300 $rt --skip more_than > "$out/test-runs-256x4x3.txt" 2>&1; echo "rc $?" >> "$out/test-runs-256x4x3.txt" ) &
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 300 compute-sanitizer --tool $tool --error-exitcode 99 $rt --test-threads=1 --skip more_than > "$out/san-runs-$tool.txt" 2>&1; echo "rc $?" >> "$out/san-runs-$tool.txt" ) &
done
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked" "$out"/test-*.txt "$out"/san-*.txt | head -30
t bench
b() { echo "# $1" >> "$out/bench-runs.txt"; shift; for w in unique rle reduce-by-key; do "$@" bench $w --backend cuda --log2-sizes 20,24,28 --reps 20 >> "$out/bench-runs.txt" 2>&1; done; }
b "bin34" $NEW; b "bin34 again" $NEW
grep -v "^case" "$out/bench-runs.txt"
for s in 256,8,2 256,4,4 128,16,2; do
  IFS=, read th v bl <<< "$s"
  echo "# reduce-by-key at $s" >> "$out/sweep-rbk.txt"
  TALLY_COMPACT_THREADS=$th TALLY_COMPACT_VECS=$v TALLY_COMPACT_MIN_BLOCKS=$bl timeout 60 $NEW bench reduce-by-key --backend cuda --log2-sizes 28 --reps 10 >> "$out/sweep-rbk.txt" 2>&1
done
grep -E "^# r|268435456" "$out/sweep-rbk.txt"
t peers
bash .gpu/peers/run-peers-primitives.sh > "$out/peers-primitives.txt" 2>&1; grep -E "Unique|Encode|ReduceByKey|copy" "$out/peers-primitives.txt"
t done
