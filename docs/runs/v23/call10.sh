#!/usr/bin/env bash
# Session call 10: 16384-bin histograms (block-shared at 1024 threads, one block a multiprocessor
# at the estimate's register cap) against two blocks of 32 registers (-DTALLY_MIN_BLOCKS=2,
# ptxas: 20 bytes of spill for f16, 52 for f32), alternating; the committed build (bin40).
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
out=${OUT:-gpu-out}; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/info.txt"
for round in 1 2; do
  for c in "default|" "2 blocks|-DTALLY_MIN_BLOCKS=2"; do
    IFS='|' read name opt <<< "$c"
    echo "# $name"; TALLY_NVRTC_OPTIONS="$opt" .gpu/bin40/tally bench hist --dtypes f16,f32 --bins 16384 --distributions uniform,hot90,zipf --strategies block-shared --reps 20 2>&1
  done
done | tee "$out/bench-16384.txt" | grep -E "^# [d2]|16384"
