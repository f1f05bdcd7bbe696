#!/usr/bin/env bash
# Session call 7: unique of the committed kernel (bin34) at 2 and 4 blocks a multiprocessor,
# with rows copied by cp.async or through registers.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
NEW=.gpu/bin34/tally
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
u() { echo "# $1" >> "$out/sweep-unique.txt"; shift; env "$@" $NEW bench unique --backend cuda --log2-sizes 28 --reps 20 >> "$out/sweep-unique.txt" 2>&1; }
for r in 1 2; do
  u "default (4 blocks, cp.async)" X=1
  u "2 blocks, cp.async" TALLY_COMPACT_MIN_BLOCKS=2
  u "4 blocks, registers" TALLY_NVRTC_OPTIONS=-DTALLY_RUNS_ASYNC=0
  u "2 blocks, registers" TALLY_COMPACT_MIN_BLOCKS=2 TALLY_NVRTC_OPTIONS=-DTALLY_RUNS_ASYNC=0
done
grep -E "^# [d24]|268435456" "$out/sweep-unique.txt"
