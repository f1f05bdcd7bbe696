#!/usr/bin/env bash
# Session call 4: select staging its kept items while warp 0 looks back, at 4 blocks a
# multiprocessor (bin14), against the committed kernel (bin12) at 3 and 4 blocks; CUB and
# torch in the same call; a shape sweep; ncu of the new default.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
OLD=.gpu/bin12/tally; NEW=.gpu/bin14/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
C="select 1%,select 50,select 99,unordered 50,partition 50,partition rev 50,flagged,indices,count_if"
t bench
b() { echo "# $1" >> "$out/bench-select.txt"; shift; "$@" bench select --backend cuda --log2-sizes 24,28 --reps 20 --cases "$C" >> "$out/bench-select.txt" 2>&1; }
b "new (split, 4 blocks)" $NEW
b "committed (3 blocks)" $OLD
TALLY_COMPACT_MIN_BLOCKS=4 b "committed at 4 blocks" $OLD
b "new again" $NEW
cat "$out/bench-select.txt"
t peers
bash .gpu/peers/run-peers-primitives.sh > "$out/peers-primitives.txt" 2>&1; grep -i -E "select|partition|copy" "$out/peers-primitives.txt"
t sweep
for s in 256,8,3 256,16,2 128,16,5 128,12,4 128,8,6; do
  IFS=, read th v bl <<< "$s"
  echo "# $s" >> "$out/sweep-select.txt"
  TALLY_COMPACT_THREADS=$th TALLY_COMPACT_VECS=$v TALLY_COMPACT_MIN_BLOCKS=$bl timeout 60 $NEW bench select --backend cuda --log2-sizes 28 --reps 10 --cases "select 1%,select 50,select 99,flagged" >> "$out/sweep-select.txt" 2>&1
done
grep -v "^case\|^# tally" "$out/sweep-select.txt"
t ncu
timeout 100 ncu --set full --kernel-name tally_select --launch-skip 1 --launch-count 1 $NEW bench select --backend cuda --log2-sizes 28 --reps 2 --cases "select 1%" > "$out/ncu-select1.txt" 2>&1
grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|No Eligible|Issue Slots Busy|Executed Instructions  |Warp Cycles Per Issued|Spilling" "$out/ncu-select1.txt"
grep -A3 "Est. Speedup" "$out/ncu-select1.txt" | grep -i "barrier\|stall" | head -4
t done
