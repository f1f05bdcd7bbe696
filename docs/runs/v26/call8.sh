#!/usr/bin/env bash
# Session call 8: bench reduce-by-key after its two cases became one generic helper (bin7).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin7/tally.xz
timeout 90 .gpu/bin7/tally bench reduce-by-key --backend cuda --log2-sizes 20,24,28 --reps 20 > $o/bench-rbk.txt 2>&1; echo "rc $?" >> $o/bench-rbk.txt
cat $o/bench-rbk.txt
tar czf "${OUT:-gpu-out}/call8.tgz" -C $o .
