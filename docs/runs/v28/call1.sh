#!/usr/bin/env bash
# Session call 1 (v28, bin1 = the committed build of v27): where reduce-by-key and the scan by
# key spend a tile's life, against CUB's kernels for the same work. ncu full profiles with the
# per-instruction stall samples (source page, SASS) of tally_runs (f32 sums by i32 keys in runs
# of 8, 2^28) and of CUB's ReduceByKey and scan-by-key kernels in the same call; the benches of
# both beside them.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
ncu --version | tail -1 | tee -a $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin1/tally.xz
T=.gpu/bin1/tally
( nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -o /tmp/cub_primitives .gpu/peers/cub_primitives.cu > $o/cub-build.txt 2>&1 ) &
t() { echo "== $1 $(date +%T)"; }
t bench
for what in reduce-by-key rle unique; do
  timeout 60 $T bench $what --backend cuda --log2-sizes 24,28 --reps 20 > $o/bench-$what.txt 2>&1
done
timeout 60 $T bench scan --backend cuda --log2-sizes 24,28 --reps 20 --cases "f32 by key/8 det,f32 by key/8 fast" > $o/bench-scan-by-key.txt 2>&1
cat $o/bench-*.txt | grep -v "^#\|^case"
K="Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Issue Slots Busy|Warp Cycles Per Issued|Block Size|Grid Size|Dynamic Shared|Static Shared|Waves Per SM|Executed Instructions  "
prof() {  # name, kernel regex, command...
  local name=$1 kern=$2; shift 2
  timeout 200 ncu --set full --import-source yes --kernel-name regex:"$kern" --launch-skip 2 --launch-count 1 -o $o/$name "$@" > $o/$name-run.txt 2>&1
  ncu --import $o/$name.ncu-rep > $o/$name.txt 2>&1
  ncu --import $o/$name.ncu-rep --page source --csv --print-source sass > $o/$name-sass.csv 2>&1 || true
  echo "-- $name"; grep -E "$K" $o/$name.txt; wc -l $o/$name-sass.csv
}
t ncu-tally
TALLY_NVRTC_OPTIONS=-lineinfo prof rbk-tally tally_runs $T bench reduce-by-key --backend cuda --log2-sizes 28 --reps 3 --cases "rbk i32/8 f32"
TALLY_NVRTC_OPTIONS=-lineinfo prof sbk-tally tally_scan $T bench scan --backend cuda --log2-sizes 28 --reps 3 --cases "f32 by key/8 det"
wait
t ncu-cub
prof rbk-cub "ReduceByKey" /tmp/cub_primitives
prof sbk-cub "ScanByKey" /tmp/cub_primitives
t cub
timeout 150 /tmp/cub_primitives > $o/cub.txt 2>&1; echo "rc $?" >> $o/cub.txt
grep -E "ByKey|Unique|RunLength|^rc" $o/cub.txt
t end
tar czf $OUT/call1.tgz --exclude="*.ncu-rep" -C /tmp o
