#!/usr/bin/env bash
# Call 3: the Python package's GPU tests, the benchmark at 2^28 with the Rust bench of each
# group of cases followed at once by the same Python calls; an ncu profile of the 2^20 f32 sum.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
rm -rf .gpu/tests .gpu/bin; tar xJf .gpu/bundle7.tar.xz -C .gpu
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader > "$out/info.txt"
t python
TALLY_BENCH_ARGS="--log2 28" OUT=$out timeout 420 bash scripts/gpu-python.sh .gpu/wheels/tally-*.whl .gpu/bin/tally > "$out/python-all.txt" 2>&1; echo "rc $?" >> "$out/python-all.txt"
grep -E "passed|failed" "$out/python/test_gpu.log" | tail -2
grep -v '^  {' "$out/python/bench.log" | tail -45
t ncu
timeout 100 ncu --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
  --kernel-name tally_reduce --launch-skip 10 --launch-count 1 \
  .gpu/bin/tally bench reduce --backend cuda --log2-sizes 20 --dtypes f32 --ops sum --reps 20 > "$out/ncu-reduce-2p20.txt" 2>&1
grep -E "Duration|Elapsed Cycles|DRAM Throughput|Memory Throughput|Grid Size|Registers|Achieved Occupancy|Waves" "$out/ncu-reduce-2p20.txt" | head -20
t done
tar czf "$out/logs.tgz" -C "$out" $(cd "$out" && ls *.txt) python
