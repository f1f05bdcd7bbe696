#!/usr/bin/env bash
# Session call 7: exact f64 sums with and without the run of same-digit elements in registers
# (the NVRTC define TALLY_EXACT_RUN) on the H200, alternating, one build (bin27); the reduction
# tests.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
NEW=.gpu/bin27/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
t bench
r() { echo "# $1" >> "$out/bench-reduce.txt"; TALLY_NVRTC_OPTIONS="$2" $NEW bench reduce --backend cuda --log2-sizes 24,28 --dtypes f64,f32 --ops exact-sum --reps 30 >> "$out/bench-reduce.txt" 2>&1; }
r "run (default)" ""
r "no run" "-DTALLY_EXACT_RUN=0"
r "run (default)" ""
r "no run" "-DTALLY_EXACT_RUN=0"
cat "$out/bench-reduce.txt"
t ncu
for v in 1 0; do
  TALLY_NVRTC_OPTIONS="-DTALLY_EXACT_RUN=$v" timeout 120 ncu --set full --kernel-name tally_reduce_exact --launch-skip 3 --launch-count 1 $NEW bench reduce --backend cuda --log2-sizes 28 --dtypes f64 --ops exact-sum --reps 2 > "$out/ncu-exact-f64-run$v.txt" 2>&1
  echo "# run=$v"; grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Warp Cycles Per Issued|Executed Instructions  |SM Frequency" "$out/ncu-exact-f64-run$v.txt"
done
t done
