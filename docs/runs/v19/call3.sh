#!/usr/bin/env bash
# Session call 3: select counting one tile ahead of the one it finishes (bin13) against the
# committed kernel (bin12, also at 4 blocks a multiprocessor): tests, benchmarks, a sweep, ncu.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
OLD=.gpu/bin12/tally; NEW=.gpu/bin13/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
C="select 1%,select 50,select 99,partition 50,partition rev 50,flagged,indices"
t quick
TALLY_REQUIRE_GPU=1 timeout 60 $NEW bench select --backend cuda --log2-sizes 28 --reps 10 --cases "select 1%,select 50" 2>&1 | tail -3
t tests
sel=$(ls .gpu/tests13/cuda_select-*); props=$(ls .gpu/tests13/cuda_properties_select-*)
( TALLY_REQUIRE_GPU=1 timeout 200 $sel > "$out/test-select.txt" 2>&1; echo "rc $?" >> "$out/test-select.txt" ) &
( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 200 $props > "$out/test-props.txt" 2>&1; echo "rc $?" >> "$out/test-props.txt" ) &
( TALLY_COMPACT_RING=4 TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 200 $sel --skip more_than > "$out/test-select-ring4.txt" 2>&1; echo "rc $?" >> "$out/test-select-ring4.txt" ) &
( TALLY_COMPACT_THREADS=64 TALLY_COMPACT_VECS=2 TALLY_COMPACT_MIN_BLOCKS=8 TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 200 $sel --skip more_than > "$out/test-select-64x2.txt" 2>&1; echo "rc $?" >> "$out/test-select-64x2.txt" ) &
wait
grep -H -E "^test result|^rc [0-9]|panicked|FAILED" "$out"/test-*.txt
t bench
for v in OLD NEW; do
  echo "# $v" >> "$out/bench-select.txt"
  ${!v} bench select --backend cuda --log2-sizes 24,28 --reps 20 --cases "$C" >> "$out/bench-select.txt" 2>&1
done
echo "# OLD at 4 blocks" >> "$out/bench-select.txt"
TALLY_COMPACT_MIN_BLOCKS=4 $OLD bench select --backend cuda --log2-sizes 24,28 --reps 20 --cases "$C" >> "$out/bench-select.txt" 2>&1
cat "$out/bench-select.txt"
t sweep
for s in 128,8,4,3 128,8,3,4 256,8,2,3 256,4,3,4 128,16,2,4 256,8,1,4 64,16,6,3; do
  IFS=, read th v b r <<< "$s"
  echo "# $s" >> "$out/sweep-select.txt"
  TALLY_COMPACT_THREADS=$th TALLY_COMPACT_VECS=$v TALLY_COMPACT_MIN_BLOCKS=$b TALLY_COMPACT_RING=$r timeout 60 $NEW bench select --backend cuda --log2-sizes 28 --reps 10 --cases "select 1%,select 50,select 99,flagged" >> "$out/sweep-select.txt" 2>&1
done
grep -v "^case\|^# tally" "$out/sweep-select.txt"
t ncu
timeout 100 ncu --set full --kernel-name tally_select --launch-skip 1 --launch-count 1 $NEW bench select --backend cuda --log2-sizes 28 --reps 2 --cases "select 1%" > "$out/ncu-select1.txt" 2>&1
grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|No Eligible|Issue Slots Busy|Executed Instructions  |Warp Cycles Per Issued|Spilling" "$out/ncu-select1.txt"
t done
