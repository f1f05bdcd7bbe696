#!/usr/bin/env bash
# Session call 4 (v28): does the compaction of call 2 still pay with the swizzled tile? bin3
# (swizzled, compacted: float sums, minima and maxima stage no places) against bin4 (swizzled,
# places as before), reduce-by-key alternating twice; tile shapes of the wide case (i32 values
# summed into i64) now that its staging is smaller; CUB and torch in the same call.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin3/tally.xz .gpu/bin4/tally.xz
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_primitives .gpu/peers/cub_primitives.cu > $o/cub-build.txt 2>&1 ) &
t() { echo "== $1 $(date +%T)"; }
t bench
for r in 1 2 3; do
  for b in bin3 bin4; do
    timeout 60 .gpu/$b/tally bench reduce-by-key --backend cuda --log2-sizes 20,24,28 --reps 20 > $o/rbk-$b-r$r.txt 2>&1
    echo "-- $b round $r"; grep -v "^#\|^case" $o/rbk-$b-r$r.txt
  done
done
t wide-shapes
for vb in 4:6 8:3 8:4 4:4; do
  v=${vb%:*}; bl=${vb#*:}
  TALLY_COMPACT_VECS=$v TALLY_COMPACT_MIN_BLOCKS=$bl timeout 60 .gpu/bin3/tally bench reduce-by-key --backend cuda --log2-sizes 24,28 --reps 20 --cases "rbk i32/8 i32>i64" > $o/wide-v$v-b$bl.txt 2>&1
  echo "rows $v blocks $bl:"; grep -E "^rbk" $o/wide-v$v-b$bl.txt
done
wait
t peers
timeout 150 /tmp/cub_primitives > $o/cub.txt 2>&1; echo "rc $?" >> $o/cub.txt
grep -E "ByKey|Unique|RunLength|^rc" $o/cub.txt | grep -E "n= *(16777216|268435456)|^rc"
timeout 150 python3 .gpu/peers/torch_primitives.py > $o/torch.txt 2>&1; echo "rc $?" >> $o/torch.txt
grep -E "unique|^rc" $o/torch.txt | grep -E "n= *(268435456)|^rc"
t end
tar czf $OUT/call4.tgz -C /tmp o
