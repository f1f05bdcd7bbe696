#!/usr/bin/env bash
# Session call 9: ncu of the deterministic f32 sum and the f32 sum by key (bin16), 2^28.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
T=.gpu/bin16/tally
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
# bench scan: 3 warm-up launches and --reps per case, cases in order det, fast, i32->i64, max, by key
timeout 150 ncu --set full --kernel-name tally_scan --launch-skip 0 --launch-count 1 $T bench scan --backend cuda --log2-sizes 28 --reps 1 > "$out/ncu-scan-det.txt" 2>&1
timeout 150 ncu --set full --kernel-name tally_scan --launch-skip 16 --launch-count 1 $T bench scan --backend cuda --log2-sizes 28 --reps 1 > "$out/ncu-scan-by-key.txt" 2>&1
for f in "$out"/ncu-*.txt; do echo "## $f"; grep -E "tally_scan|Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|Executed Instructions  |excessive|barrier|Block Limit (Reg|Sh)" "$f" | head -14; done
