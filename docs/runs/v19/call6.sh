#!/usr/bin/env bash
# Session call 6: more resident blocks for the run primitives and the scans? Shape sweeps through
# the tuning knobs of the current build (bin14), 2^28.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
T=.gpu/bin14/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
t runs
r() { echo "# $*" >> "$out/sweep-runs.txt"; for k in unique rle reduce-by-key; do env "$@" timeout 80 $T bench $k --backend cuda --log2-sizes 28 --reps 10 2>&1 | grep -v "^case\|^# tally" >> "$out/sweep-runs.txt"; done; }
r X=default
r TALLY_COMPACT_MIN_BLOCKS=3
r TALLY_COMPACT_MIN_BLOCKS=4
r TALLY_COMPACT_THREADS=128 TALLY_COMPACT_VECS=16 TALLY_COMPACT_MIN_BLOCKS=3
r TALLY_COMPACT_THREADS=256 TALLY_COMPACT_VECS=8 TALLY_COMPACT_MIN_BLOCKS=3
cat "$out/sweep-runs.txt"
t scan
s() { echo "# $*" >> "$out/sweep-scan.txt"; env "$@" timeout 80 $T bench scan --backend cuda --log2-sizes 28 --reps 10 2>&1 | grep -v "^case\|^# tally" >> "$out/sweep-scan.txt"; }
s X=default
s TALLY_SCAN_MIN_BLOCKS=5
s TALLY_SCAN_MIN_BLOCKS=6
s TALLY_SCAN_BLOCK_THREADS=256 TALLY_SCAN_MIN_BLOCKS=3
cat "$out/sweep-scan.txt"
t done
