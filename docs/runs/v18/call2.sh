#!/usr/bin/env bash
# Call 2: the Python package on the GPU (tests, then the benchmark against torch and CuPy and
# the Rust bench of the same cases at 2^28), and the reductions' small sizes end to end.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
rm -rf .gpu/tests .gpu/bin; tar xJf .gpu/bundle7.tar.xz -C .gpu
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/info.txt"
t reduce-small
timeout 90 .gpu/bin/tally bench reduce --backend cuda --log2-sizes 10,16,20,24,28 --dtypes f32 --ops sum,minmax,argmax,exact-sum --reps 50 > "$out/bench-reduce.txt" 2>&1; echo "rc $?" >> "$out/bench-reduce.txt"
cat "$out/bench-reduce.txt"
t python
TALLY_BENCH_ARGS="--log2 20 28" OUT=$out timeout 460 bash scripts/gpu-python.sh .gpu/wheels/tally-*.whl .gpu/bin/tally > "$out/python-all.txt" 2>&1; echo "rc $?" >> "$out/python-all.txt"
tail -40 "$out/python-all.txt"
t done
tar czf "$out/logs.tgz" -C "$out" $(cd "$out" && ls *.txt) python
