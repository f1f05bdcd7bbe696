#!/usr/bin/env bash
# Session call 2: the tests of the fixed build (cp.async only for 16-byte rows), shapes of the new run kernels (bin31), registers against cp.async loads, and
# ncu of encode and reduce-by-key at the defaults.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
NEW=.gpu/bin31/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
sw() { # label, bench names, env...
  local label=$1 names=$2; shift 2
  echo "# $label" >> "$out/sweep-runs.txt"
  for w in $names; do env "$@" timeout 60 $NEW bench $w --backend cuda --log2-sizes 28 --reps 10 >> "$out/sweep-runs.txt" 2>&1; done
}
t tests
rt=$(ls .gpu/tests31/cuda_runs-*)
( TALLY_REQUIRE_GPU=1 timeout 300 $rt > "$out/test-runs.txt" 2>&1; echo "rc $?" >> "$out/test-runs.txt" ) &
( TALLY_REQUIRE_GPU=1 TALLY_COMPACT_THREADS=512 TALLY_COMPACT_VECS=4 TALLY_COMPACT_MIN_BLOCKS=2 timeout 300 $rt --skip more_than > "$out/test-runs-512x4x2.txt" 2>&1; echo "rc $?" >> "$out/test-runs-512x4x2.txt" ) &
( TALLY_REQUIRE_GPU=1 TALLY_COMPACT_THREADS=64 TALLY_COMPACT_VECS=2 TALLY_COMPACT_MIN_BLOCKS=8 timeout 300 $rt --skip more_than > "$out/test-runs-64x2x8.txt" 2>&1; echo "rc $?" >> "$out/test-runs-64x2x8.txt" ) &
( TALLY_REQUIRE_GPU=1 TALLY_NVRTC_OPTIONS=-DTALLY_RUNS_ASYNC=0 timeout 300 $rt --skip more_than > "$out/test-runs-registers.txt" 2>&1; echo "rc $?" >> "$out/test-runs-registers.txt" ) &
( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 400 compute-sanitizer --tool memcheck --error-exitcode 99 $rt --test-threads=1 --skip more_than > "$out/san-memcheck.txt" 2>&1; echo "rc $?" >> "$out/san-memcheck.txt" ) &
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|panicked" "$out"/test-*.txt "$out"/san-*.txt | head -30
t sweep
sw "default" "unique rle reduce-by-key"
echo "# v21 build (bin28)" >> "$out/sweep-runs.txt"
for w in unique rle reduce-by-key; do timeout 60 .gpu/bin28/tally bench $w --backend cuda --log2-sizes 28 --reps 10 >> "$out/sweep-runs.txt" 2>&1; done
sw "registers (no cp.async), default shapes" "unique rle reduce-by-key" TALLY_NVRTC_OPTIONS=-DTALLY_RUNS_ASYNC=0
for s in 256,8,4 512,4,2 128,8,8 256,4,6 128,16,3; do
  IFS=, read th v bl <<< "$s"
  sw "$s" "unique rle" TALLY_COMPACT_THREADS=$th TALLY_COMPACT_VECS=$v TALLY_COMPACT_MIN_BLOCKS=$bl
done
for s in 256,4,4 512,2,2 512,4,2 256,8,2 128,16,2 128,4,8; do
  IFS=, read th v bl <<< "$s"
  sw "$s" "reduce-by-key" TALLY_COMPACT_THREADS=$th TALLY_COMPACT_VECS=$v TALLY_COMPACT_MIN_BLOCKS=$bl
done
grep -E "^#|rle|unique|rbk" "$out/sweep-runs.txt" | grep -v "^case"
t ncu
for w in rle reduce-by-key; do
  timeout 100 ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section SourceCounters --kernel-name tally_runs --launch-skip 2 --launch-count 1 $NEW bench $w --backend cuda --log2-sizes 28 --reps 3 > "$out/ncu-$w.txt" 2>&1
  grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Warp Cycles Per Issued|Dynamic Shared" "$out/ncu-$w.txt"
  grep -B1 -A3 "Est. Speedup" "$out/ncu-$w.txt" | grep -i "barrier\|stall\|cycles being" | head -4
done
t done
