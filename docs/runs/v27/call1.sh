#!/usr/bin/env bash
# Session call 1 (v27, the committed build of v26, bin8): where the scans' small and mid sizes
# spend their time. Kernel durations by ncu beside the bench's events (which include the
# memsets of the tile states and the overflow flag); tile shapes at 2^20 and 2^24; ncu of the f32
# sum at 2^24 and of the f32 sums by key (scan and reduce-by-key) at 2^28; CUB in the same call.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin8/tally.xz
T=.gpu/bin8/tally
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_primitives .gpu/peers/cub_primitives.cu > $o/cub-build.txt 2>&1 ) &
t() { echo "== $1 $(date +%T)"; }
t base
timeout 120 $T bench scan --backend cuda --log2-sizes 20,24,28 --reps 30 --cases "f32 sum" > $o/bench-scan-base.txt 2>&1
cat $o/bench-scan-base.txt
t durations
timeout 120 ncu --metrics gpu__time_duration.sum --csv $T bench scan --backend cuda --log2-sizes 20,24 --reps 5 --cases "f32 sum" > $o/ncu-durations.txt 2>&1
grep -E "tally_|memset|Memset" $o/ncu-durations.txt | awk -F'","' '{print $5, $(NF)}' | sort | uniq -c | head -20
t shapes
for vb in 8:6 8:4 12:4 12:3 16:4 16:3 24:3 32:2; do
  v=${vb%:*}; b=${vb#*:}
  TALLY_SCAN_VECS=$v TALLY_SCAN_MIN_BLOCKS=$b timeout 60 $T bench scan --backend cuda --log2-sizes 20,24,28 --reps 30 --cases "f32 sum" > $o/bench-scan-v$v-b$b.txt 2>&1
  echo "vecs $v blocks $b"; grep -E "^f32" $o/bench-scan-v$v-b$b.txt
done
t ncu-2p24
timeout 150 ncu --set full --kernel-name tally_scan --launch-skip 2 --launch-count 1 $T bench scan --backend cuda --log2-sizes 24 --reps 3 --cases "f32 sum fast" > $o/ncu-scan-f32-fast-2p24.txt 2>&1
K="Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Block Limit|Issue Slots Busy|Warp Cycles Per Issued|Spilling|L2 Hit|Mem Busy|Max Bandwidth|Waves Per SM|Grid Size"
grep -E "$K" $o/ncu-scan-f32-fast-2p24.txt
t ncu-rbk
timeout 150 ncu --set full --kernel-name tally_runs --launch-skip 2 --launch-count 1 $T bench reduce-by-key --backend cuda --log2-sizes 28 --reps 3 --cases "rbk i32/8 f32" > $o/ncu-rbk-f32.txt 2>&1
grep -E "$K" $o/ncu-rbk-f32.txt
grep -B2 -A6 "Est. Speedup" $o/ncu-rbk-f32.txt | grep -v "^ *$" | head -40
t ncu-scan-by-key
timeout 150 ncu --set full --kernel-name tally_scan --launch-skip 2 --launch-count 1 $T bench scan --backend cuda --log2-sizes 28 --reps 3 --cases "f32 by key/8 fast" > $o/ncu-scan-by-key-fast.txt 2>&1
grep -E "$K" $o/ncu-scan-by-key-fast.txt
t rbk-bench
timeout 60 $T bench reduce-by-key --backend cuda --log2-sizes 24,28 --reps 20 > $o/bench-rbk.txt 2>&1; grep -v "^#" $o/bench-rbk.txt
wait
t cub
timeout 150 /tmp/cub_primitives > $o/cub.txt 2>&1; echo "rc $?" >> $o/cub.txt
grep -iE "scan|bykey|by_key|reduce_by|^rc" $o/cub.txt | head -30
t end
tar czf $OUT/call1.tgz -C /tmp o
