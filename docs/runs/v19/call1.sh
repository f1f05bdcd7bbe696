#!/usr/bin/env bash
# Session call 1: profile select (tally and CUB), the widening scan; sweep select's tile shapes.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
T=.gpu/bin12/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
t bench
$T bench select --backend cuda --log2-sizes 28 --reps 10 > "$out/bench-select.txt" 2>&1; cat "$out/bench-select.txt"
t ncu tally
for c in "select 1%" "select 50%"; do
  f=$(echo $c | tr -d ' %')
  timeout 120 ncu --set full --kernel-name tally_select --launch-skip 1 --launch-count 1 $T bench select --backend cuda --log2-sizes 28 --reps 2 --cases "$c" > "$out/ncu-$f.txt" 2>&1
done
t data
python3 - <<'PY'
import numpy as np
r = np.random.default_rng(1)
np.save("/tmp/i32.npy", r.integers(-1000, 1000, 1 << 28, dtype=np.int32))
np.save("/tmp/f32.npy", r.random(1 << 28, dtype=np.float32))
PY
t ncu scan
timeout 120 ncu --set full --kernel-name tally_scan --launch-count 1 $T scan /tmp/i32.npy --out /tmp/o.npy --backend cuda > "$out/ncu-scan-i32-i64.txt" 2>&1
timeout 120 ncu --set full --kernel-name tally_scan --launch-count 1 $T scan /tmp/f32.npy --out /tmp/o.npy --backend cuda > "$out/ncu-scan-f32.txt" 2>&1
t ncu cub
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_primitives .gpu/peers/cub_primitives.cu 2>&1 | grep -v -i warning
timeout 200 ncu --set full --kernel-name regex:SelectSweep --launch-count 1 /tmp/cub_primitives > "$out/ncu-cub-select.txt" 2>&1
timeout 200 ncu --set full --kernel-name regex:ScanKernel --launch-skip 2 --launch-count 1 /tmp/cub_primitives > "$out/ncu-cub-scan.txt" 2>&1
t sweep
for s in 128,16,3 128,16,4 128,24,2 256,8,2 256,16,2 128,32,2 64,32,5; do
  IFS=, read th v b <<< "$s"
  echo "# $s" >> "$out/sweep-select.txt"
  TALLY_COMPACT_THREADS=$th TALLY_COMPACT_VECS=$v TALLY_COMPACT_MIN_BLOCKS=$b timeout 60 $T bench select --backend cuda --log2-sizes 28 --reps 10 --cases "select 1%,select 50,select 99" >> "$out/sweep-select.txt" 2>&1
done
cat "$out/sweep-select.txt"
for f in "$out"/ncu-*.txt; do echo "## $f"; grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|No Eligible|Block Limit|Warp Cycles Per Issued|Stall" "$f" | head -30; done
t done
