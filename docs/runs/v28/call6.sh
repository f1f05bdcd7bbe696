#!/usr/bin/env bash
# Session call 6 (v28, bin5 = the committed build): profiles of the f32 sum by i32 keys in runs
# of 8 at 2^28 (deterministic and fast) with per-instruction counters, and of CUB's
# scan-by-key kernel for the same work, to see whether the scan by key's loads over-fetch
# (v27's profile: 23.5 of 32 bytes used per sector read from DRAM).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin5/tally.xz
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_primitives .gpu/peers/cub_primitives.cu > $o/cub-build.txt 2>&1 ) &
t() { echo "== $1 $(date +%T)"; }
K="Duration|DRAM Throughput|L2 Hit Rate|Registers Per|Achieved Occupancy|Block Limit Shared|Block Limit Reg|Dynamic Shared|Block Size|Grid Size"
prof() {  # name, kernel regex, command...
  local name=$1 kern=$2; shift 2
  timeout 200 ncu --set full --kernel-name-base demangled --kernel-name regex:"$kern" --launch-skip 2 --launch-count 1 -o $o/$name "$@" > $o/$name-run.txt 2>&1
  ncu --import $o/$name.ncu-rep > $o/$name.txt 2>&1
  ncu --import $o/$name.ncu-rep --page source --csv --print-source sass > $o/$name-sass.csv 2>&1 || true
  echo "-- $name"; grep -E "$K" $o/$name.txt; grep -A1 "global loads from\|global stores to" $o/$name.txt | grep -o "loads from [A-Z0-9]*\|stores to [A-Z0-9]*\|only [0-9.]* of"
}
t ncu
prof sbk-det tally_scan .gpu/bin5/tally bench scan --backend cuda --log2-sizes 28 --reps 3 --cases "f32 by key/8"
prof sbk-fast tally_scan .gpu/bin5/tally bench scan --backend cuda --log2-sizes 28 --reps 3 --cases "f32 by key/8 fast"
wait
prof sbk-cub "DeviceScanByKeyKernel.*float" /tmp/cub_primitives
t end
for f in $o/*-sass.csv; do xz -T4 -9 $f; done
tar czf $OUT/call6.tgz --exclude="*.ncu-rep" -C /tmp o
