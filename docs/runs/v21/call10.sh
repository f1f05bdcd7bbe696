#!/usr/bin/env bash
# Session call 10: the committed Python package (wheel of 484de9f) and CLI (bin28): GPU tests, then the
# benchmark at 2^28 and the comparison with the Rust bench on its own data, group by group (issue 16).
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader > "$out/info.txt"
t python
TALLY_BENCH_ARGS="--log2 28" OUT=$out timeout 540 bash scripts/gpu-python.sh .gpu/wheels/tally-*.whl .gpu/bin28/tally > "$out/python-all.txt" 2>&1; echo "rc $?" >> "$out/python-all.txt"
grep -E "passed|failed" "$out/python/test_gpu.log" | tail -2
grep -v '^  {' "$out/python/bench.log" | tail -42
nvidia-smi --query-gpu=clocks.sm,temperature.gpu --format=csv,noheader >> "$out/info.txt"
t done
tar czf "$out/logs.tgz" -C "$out" $(cd "$out" && ls *.txt) python
