#!/usr/bin/env bash
# Session call 9: shapes and look-back windows of the scans by key on the committed build (bin28),
# through the tuning knobs and the NVRTC define TALLY_KEYED_WINDOWS.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
NEW=.gpu/bin28/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
s() {  # threads,rows,blocks windows cases
  IFS=, read th v bl <<< "$1"
  echo "# $1 windows=$2" >> "$out/sweep-scan.txt"
  TALLY_NVRTC_OPTIONS="${2:+-DTALLY_KEYED_WINDOWS=$2}" TALLY_SCAN_BLOCK_THREADS=$th TALLY_SCAN_VECS=$v TALLY_SCAN_MIN_BLOCKS=$bl timeout 60 $NEW bench scan --backend cuda --log2-sizes 28 --reps 10 --cases "$3" 2>&1 | grep -v "^case\|^# tally" >> "$out/sweep-scan.txt"
}
t sweep
I="i32->i64 by key"
s 256,4,2 "" "$I"; s 256,8,2 4 "$I"; s 256,8,2 2 "$I"; s 128,8,4 4 "$I"; s 128,8,4 2 "$I"; s 256,4,4 2 "$I"; s 256,4,3 2 "$I"; s 256,4,2 "" "$I"
F="f32 by key/8"
s 256,4,3 "" "$F"; s 256,4,4 4 "$F"; s 256,4,3 "" "$F"; s 256,4,4 4 "$F"
cat "$out/sweep-scan.txt"
t done
