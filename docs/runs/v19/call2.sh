#!/usr/bin/env bash
# Session call 2: select with a ring of tiles copied ahead (bin13) against the committed kernel
# (bin12): tests (default, ring 3, other shapes, the 2^31+ case), sanitizers, benchmarks and a
# sweep, CUB and torch in the same call, ncu of the new kernel.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
OLD=.gpu/bin12/tally; NEW=.gpu/bin13/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
t tests
sel=$(ls .gpu/tests13/cuda_select-*); props=$(ls .gpu/tests13/cuda_properties_select-*)
( TALLY_REQUIRE_GPU=1 timeout 200 $sel > "$out/test-select.txt" 2>&1; echo "rc $?" >> "$out/test-select.txt" )
( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 200 $props > "$out/test-props.txt" 2>&1; echo "rc $?" >> "$out/test-props.txt" ) &
( TALLY_COMPACT_RING=3 TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 200 $sel --skip more_than > "$out/test-select-ring3.txt" 2>&1; echo "rc $?" >> "$out/test-select-ring3.txt" ) &
( TALLY_COMPACT_THREADS=256 TALLY_COMPACT_VECS=4 TALLY_COMPACT_RING=4 TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 200 $sel --skip more_than > "$out/test-select-256x4r4.txt" 2>&1; echo "rc $?" >> "$out/test-select-256x4r4.txt" ) &
( TALLY_COMPACT_THREADS=64 TALLY_COMPACT_VECS=2 TALLY_COMPACT_MIN_BLOCKS=8 TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 200 $sel --skip more_than > "$out/test-select-64x2.txt" 2>&1; echo "rc $?" >> "$out/test-select-64x2.txt" ) &
wait
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 TALLY_SMALL=1 timeout 250 compute-sanitizer --tool $tool --error-exitcode 99 $sel --test-threads=1 --skip more_than > "$out/san-$tool.txt" 2>&1; echo "rc $?" >> "$out/san-$tool.txt" ) &
done
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED" "$out"/test-*.txt "$out"/san-*.txt
t bench
for v in OLD NEW OLD NEW; do
  echo "# $v" >> "$out/bench-select.txt"
  ${!v} bench select --backend cuda --log2-sizes 20,24,28 --reps 20 >> "$out/bench-select.txt" 2>&1
done
cat "$out/bench-select.txt"
t peers
bash .gpu/peers/run-peers-primitives.sh > "$out/peers-primitives.txt" 2>&1; grep -i -E "select|partition|unique|copy" "$out/peers-primitives.txt"
t sweep
for s in 128,16,3,2 128,16,3,3 128,16,2,3 128,16,2,4 128,8,4,3 256,8,2,2 256,8,2,3 256,16,1,2 128,32,1,2 512,4,1,3; do
  IFS=, read th v b r <<< "$s"
  echo "# $s" >> "$out/sweep-select.txt"
  TALLY_COMPACT_THREADS=$th TALLY_COMPACT_VECS=$v TALLY_COMPACT_MIN_BLOCKS=$b TALLY_COMPACT_RING=$r timeout 60 $NEW bench select --backend cuda --log2-sizes 28 --reps 10 --cases "select 1%,select 50,select 99,partition rev 50,flagged,indices" >> "$out/sweep-select.txt" 2>&1
done
cat "$out/sweep-select.txt"
t ncu
timeout 120 ncu --set full --kernel-name tally_select --launch-skip 1 --launch-count 1 $NEW bench select --backend cuda --log2-sizes 28 --reps 2 --cases "select 1%" > "$out/ncu-select1.txt" 2>&1
grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|No Eligible|Issue Slots Busy|Executed Instructions  |Warp Cycles Per Issued|Spilling" "$out/ncu-select1.txt"
t done
