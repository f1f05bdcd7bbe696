#!/usr/bin/env bash
# Session call 2 (v28): bin2 = reduce-by-key of float sums, minima and maxima compacted within
# each thread's items (no places: 36 KiB tiles, 6 a multiprocessor) and the memsets that only
# checked sums need skipped otherwise; bin1 = the committed build of v27. The run and scan tests
# of bin2; benches of both alternating twice; tile
# shapes of the compacted kernel; ncu of it and of CUB's f32 ReduceByKey kernel; CUB in the same call.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin1/tally.xz .gpu/bin2/tally.xz .gpu/tests2/*.xz
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_primitives .gpu/peers/cub_primitives.cu > $o/cub-build.txt 2>&1 ) &
t() { echo "== $1 $(date +%T)"; }
t tests
for b in cuda_runs cuda_properties_runs cuda_scan; do
  TALLY_REQUIRE_GPU=1 timeout 300 .gpu/tests2/$b > $o/tests-$b.txt 2>&1; echo "rc $?" >> $o/tests-$b.txt
  echo "$b: $(grep -E "^test result|^rc|panicked|FAILED" $o/tests-$b.txt | head -5 | tr '\n' ' ')"
done
t bench
for r in 1 2; do
  for b in bin1 bin2; do
    for what in reduce-by-key rle unique; do
      timeout 60 .gpu/$b/tally bench $what --backend cuda --log2-sizes 20,24,28 --reps 20 > $o/$what-$b-r$r.txt 2>&1
    done
    timeout 60 .gpu/$b/tally bench scan --backend cuda --log2-sizes 20,24 --reps 30 --cases "f32 sum" > $o/scan-$b-r$r.txt 2>&1
    echo "-- $b round $r"; cat $o/{reduce-by-key,rle,unique,scan}-$b-r$r.txt | grep -v "^#\|^case"
  done
done
t shapes
for vb in 6:8 7:6 9:5 8:6; do
  v=${vb%:*}; bl=${vb#*:}
  TALLY_COMPACT_VECS=$v TALLY_COMPACT_MIN_BLOCKS=$bl timeout 60 .gpu/bin2/tally bench reduce-by-key --backend cuda --log2-sizes 24,28 --reps 20 --cases "rbk i32/8 f32" > $o/rbk-v$v-b$bl.txt 2>&1
  echo "rows $v blocks $bl: $(grep -E "^rbk" $o/rbk-v$v-b$bl.txt | awk '{print $2, $4}' | tr '\n' ' ')"
done
wait
t ncu
K="Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit Shared|Block Limit Reg|Warp Cycles Per Issued|Block Size|Grid Size|Dynamic Shared|Static Shared"
prof() {  # name, kernel regex, command...
  local name=$1 kern=$2; shift 2
  timeout 200 ncu --set full --kernel-name-base demangled --kernel-name regex:"$kern" --launch-skip 2 --launch-count 1 -o $o/$name "$@" > $o/$name-run.txt 2>&1
  ncu --import $o/$name.ncu-rep > $o/$name.txt 2>&1
  ncu --import $o/$name.ncu-rep --page source --csv --print-source sass > $o/$name-sass.csv 2>&1 || true
  echo "-- $name"; head -3 $o/$name.txt | cut -c1-150; grep -E "$K" $o/$name.txt
}
prof rbk-tally2 tally_runs .gpu/bin2/tally bench reduce-by-key --backend cuda --log2-sizes 28 --reps 3 --cases "rbk i32/8 f32"
prof rbk-cub-f32 "DeviceReduceByKeyKernel.*float" /tmp/cub_primitives
t cub
timeout 150 /tmp/cub_primitives > $o/cub.txt 2>&1; echo "rc $?" >> $o/cub.txt
grep -E "ByKey|Unique|RunLength|InclusiveSum f32|^rc" $o/cub.txt | grep -E "n= *(1048576|16777216|268435456)|^rc"
t end
tar czf $OUT/call2.tgz --exclude="*.ncu-rep" -C /tmp o
