#!/usr/bin/env bash
# Session call 3: 128-bit look-back slots (bin32) against v21 (bin28), alternating: runs, scans
# (every case), select; CUB and torch in the same call.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
OLD=.gpu/bin28/tally; NEW=.gpu/bin32/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
t runs
b() { echo "# $1" >> "$out/bench-runs.txt"; shift; for w in unique rle reduce-by-key; do "$@" bench $w --backend cuda --log2-sizes 20,24,28 --reps 20 >> "$out/bench-runs.txt" 2>&1; done; }
b NEW $NEW; b OLD $OLD; b NEW $NEW
grep -v "^case" "$out/bench-runs.txt" | grep -E "^#|268435456"
t scan
s() { echo "# $1" >> "$out/bench-scan.txt"; shift; "$@" bench scan --backend cuda --log2-sizes 24,28 --reps 20 >> "$out/bench-scan.txt" 2>&1; }
s NEW $NEW; s OLD $OLD; s NEW $NEW
grep -v "^case" "$out/bench-scan.txt" | grep -E "^#|268435456"
t select
echo "# NEW" >> "$out/bench-select.txt"; $NEW bench select --backend cuda --log2-sizes 28 --reps 20 >> "$out/bench-select.txt" 2>&1
echo "# OLD" >> "$out/bench-select.txt"; $OLD bench select --backend cuda --log2-sizes 28 --reps 20 >> "$out/bench-select.txt" 2>&1
grep -v "^case" "$out/bench-select.txt" | grep -E "^#|268435456"
t peers
bash .gpu/peers/run-peers-primitives.sh > "$out/peers-primitives.txt" 2>&1; grep -E "268435456|copy" "$out/peers-primitives.txt"
t done
