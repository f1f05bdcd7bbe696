#!/usr/bin/env bash
# Session call 9: shapes of the scans into 8-byte outputs with 128-bit look-back slots (bin34):
# i32 into i64 (plain, staged), and by key (i32 into i64, f64).
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
NEW=.gpu/bin34/tally
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
sw() { local label=$1 cases=$2; shift 2; echo "# $label" >> "$out/sweep-scan.txt"; env "$@" timeout 40 $NEW bench scan --backend cuda --log2-sizes 28 --reps 10 --cases "$cases" >> "$out/sweep-scan.txt" 2>&1; }
sw "default" "i32->i64 sum,i32->i64 by key/8,f64 by key/8" X=1
for s in 256,8,2 256,8,3 128,16,3 128,24,3 256,16,2 128,8,6; do
  IFS=, read th v bl <<< "$s"
  sw "i32->i64 sum at $s" "i32->i64 sum" TALLY_SCAN_BLOCK_THREADS=$th TALLY_SCAN_VECS=$v TALLY_SCAN_MIN_BLOCKS=$bl
done
sw "by key at 256,4,3, 2 windows" "i32->i64 by key/8" TALLY_SCAN_BLOCK_THREADS=256 TALLY_SCAN_VECS=4 TALLY_SCAN_MIN_BLOCKS=3 TALLY_NVRTC_OPTIONS=-DTALLY_KEYED_WINDOWS=2
sw "by key at 256,4,2, 2 windows" "i32->i64 by key/8" TALLY_NVRTC_OPTIONS=-DTALLY_KEYED_WINDOWS=2
sw "by key at 256,8,2" "i32->i64 by key/8" TALLY_SCAN_BLOCK_THREADS=256 TALLY_SCAN_VECS=8 TALLY_SCAN_MIN_BLOCKS=2
sw "f64 by key, 4 windows" "f64 by key/8" TALLY_NVRTC_OPTIONS=-DTALLY_KEYED_WINDOWS=4
sw "default again" "i32->i64 sum,i32->i64 by key/8,f64 by key/8" X=1
grep -E "^#|268435456" "$out/sweep-scan.txt"
