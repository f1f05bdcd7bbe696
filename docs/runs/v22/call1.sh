#!/usr/bin/env bash
# Session call 1: the run primitives keep their tile in shared memory and stage 16-bit head
# places (bin30) against v21 (bin28): tests and sanitizers, then benchmarks alternating, CUB
# and torch in the same call.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
OLD=.gpu/bin28/tally; NEW=.gpu/bin30/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
t tests
rt=$(ls .gpu/tests30/cuda_runs-*)
( TALLY_REQUIRE_GPU=1 timeout 300 $rt > "$out/test-runs.txt" 2>&1; echo "rc $?" >> "$out/test-runs.txt" ) &
( TALLY_REQUIRE_GPU=1 TALLY_COMPACT_THREADS=256 TALLY_COMPACT_VECS=4 TALLY_COMPACT_MIN_BLOCKS=3 timeout 300 $rt --skip more_than > "$out/test-runs-256x4x3.txt" 2>&1; echo "rc $?" >> "$out/test-runs-256x4x3.txt" ) &
( TALLY_REQUIRE_GPU=1 TALLY_COMPACT_THREADS=64 TALLY_COMPACT_VECS=2 TALLY_COMPACT_MIN_BLOCKS=8 timeout 300 $rt --skip more_than > "$out/test-runs-64x2x8.txt" 2>&1; echo "rc $?" >> "$out/test-runs-64x2x8.txt" ) &
( TALLY_REQUIRE_GPU=1 TALLY_NVRTC_OPTIONS=-DTALLY_RUNS_ASYNC=0 timeout 300 $rt --skip more_than > "$out/test-runs-registers.txt" 2>&1; echo "rc $?" >> "$out/test-runs-registers.txt" ) &
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 420 compute-sanitizer --tool $tool --error-exitcode 99 $rt --test-threads=1 --skip more_than > "$out/san-$tool.txt" 2>&1; echo "rc $?" >> "$out/san-$tool.txt" ) &
done
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED" "$out"/test-*.txt "$out"/san-*.txt
t bench
b() { echo "# $1" >> "$out/bench-runs.txt"; shift; for w in unique rle reduce-by-key; do "$@" bench $w --backend cuda --log2-sizes 20,24,28 --reps 20 >> "$out/bench-runs.txt" 2>&1; done; }
b NEW $NEW
b OLD $OLD
b NEW $NEW
grep -v "^case" "$out/bench-runs.txt"
t peers
bash .gpu/peers/run-peers-primitives.sh > "$out/peers-primitives.txt" 2>&1; grep -i -E "unique|encode|ReduceByKey|copy" "$out/peers-primitives.txt" | grep -E "268435456|copy"
t done
