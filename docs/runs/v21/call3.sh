#!/usr/bin/env bash
# Session call 3: the committed candidate (bin23: two windows for scans by key, no struct in
# local memory, 3 blocks compiled for 4-byte outputs) against bin21 (the look-back shortcut
# alone), every scan case alternating; four windows by an NVRTC define; CUB and torch.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
OLD=.gpu/bin21/tally; NEW=.gpu/bin23/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
t tests
sc=$(ls .gpu/tests23/cuda_scan-*)
TALLY_REQUIRE_GPU=1 timeout 200 $sc > "$out/test-scan.txt" 2>&1; echo "rc $?" >> "$out/test-scan.txt"
grep -H -E "^test result|^rc [0-9]|panicked|FAILED" "$out"/test-*.txt
t bench
b() { echo "# $1" >> "$out/bench-scan.txt"; shift; "$@" >> "$out/bench-scan.txt" 2>&1; }
b NEW $NEW bench scan --backend cuda --log2-sizes 24,28 --reps 20
b OLD $OLD bench scan --backend cuda --log2-sizes 24,28 --reps 20
b NEW $NEW bench scan --backend cuda --log2-sizes 24,28 --reps 20
K="f32 by key,i32->i64 by key"
TALLY_NVRTC_OPTIONS="-DTALLY_KEYED_WINDOWS=4" b "NEW, four windows" $NEW bench scan --backend cuda --log2-sizes 28 --reps 20 --cases "$K"
TALLY_SCAN_MIN_BLOCKS=4 b "NEW at 4 blocks" $NEW bench scan --backend cuda --log2-sizes 28 --reps 20 --cases "$K"
TALLY_SCAN_MIN_BLOCKS=2 b "NEW at 2 blocks" $NEW bench scan --backend cuda --log2-sizes 28 --reps 20 --cases "$K"
b "NEW again" $NEW bench scan --backend cuda --log2-sizes 28 --reps 20 --cases "$K"
grep -v "^case" "$out/bench-scan.txt"
t peers
bash .gpu/peers/run-peers-primitives.sh > "$out/peers-primitives.txt" 2>&1; grep -i -E "scan|copy" "$out/peers-primitives.txt" | grep -E "16777216|268435456|copy"
grep -i "cumsum" "$out/peers-primitives.txt" | head
t done
