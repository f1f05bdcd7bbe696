#!/usr/bin/env bash
# Session call 5: the run primitives with 128-bit look-back slots in both kernel designs: the
# tile kept in shared memory with 16-bit head places (bin32), and v21's items in registers
# (bin33), alternating; CUB in the same call.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
t runs
b() { echo "# $1" >> "$out/bench-runs.txt"; shift; for w in unique rle reduce-by-key; do "$@" bench $w --backend cuda --log2-sizes 24,28 --reps 20 >> "$out/bench-runs.txt" 2>&1; done; }
b "places (bin32)" .gpu/bin32/tally; b "registers (bin33)" .gpu/bin33/tally
b "places (bin32)" .gpu/bin32/tally; b "registers (bin33)" .gpu/bin33/tally
grep -v "^case" "$out/bench-runs.txt" | grep -E "^# [pr]|268435456"
t peers
bash .gpu/peers/run-peers-primitives.sh > "$out/peers-primitives.txt" 2>&1; grep -E "Unique|Encode|ReduceByKey|copy" "$out/peers-primitives.txt"
t done
