#!/usr/bin/env bash
# Session call 2: scans by key with two look-back windows (bin22) over shapes, for 4-byte and
# 8-byte outputs; bin21 (four windows) at the same shapes; ncu of the f32 scan by key.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
OLD=.gpu/bin21/tally; NEW=.gpu/bin22/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
sweep() {  # binary, cases, shapes...
  local bin=$1 cases=$2; shift 2
  for s in "$@"; do
    IFS=, read th v bl <<< "$s"
    echo "# ${bin} $s" >> "$out/sweep-scan.txt"
    TALLY_SCAN_BLOCK_THREADS=$th TALLY_SCAN_VECS=$v TALLY_SCAN_MIN_BLOCKS=$bl timeout 60 $bin bench scan --backend cuda --log2-sizes 28 --reps 10 --cases "$cases" 2>&1 | grep -v "^case\|^# tally" >> "$out/sweep-scan.txt"
  done
}
t sweep 4-byte
sweep $NEW "f32 by key/8" 256,4,2 256,4,3 256,4,4 128,4,8 128,8,6 512,4,2 256,8,3
sweep $OLD "f32 by key/8" 256,4,4 256,4,2
t sweep 8-byte
sweep $NEW "i32->i64 by key,f64 by key" 256,4,2 128,4,4 128,4,5 128,8,4 128,8,3 256,4,3 256,8,2 128,16,3
sweep $OLD "i32->i64 by key,f64 by key" 128,8,4
cat "$out/sweep-scan.txt"
t ncu
TALLY_SCAN_MIN_BLOCKS=4 timeout 150 ncu --set full --kernel-name tally_scan --launch-skip 3 --launch-count 1 $NEW bench scan --backend cuda --log2-sizes 28 --reps 2 --cases "f32 by key/8" > "$out/ncu-scan-by-key.txt" 2>&1
grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Block Limit|Issue Slots Busy|Warp Cycles Per Issued|Spilling|L2 Hit|Mem Busy|Max Bandwidth" "$out/ncu-scan-by-key.txt"
grep -B2 -A6 "Est. Speedup" "$out/ncu-scan-by-key.txt" | grep -v "^ *$" | head -40
t done
