#!/usr/bin/env bash
# v34 call 2 (one GPU): the kept-plan tests of the reviewed build (b2: sets belong to one stream,
# the next set checked for zeros), the select tests call 1 had no time for, then v33's build (b6)
# against b2, interleaved, at 2^16-2^24 (where a launch less shows), CUB beside from this call.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o2; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call2.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b6/tally.xz .gpu/b2/*.xz
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_lookback scripts/peers/cub_lookback_sizes.cu > $o/cub-build.txt 2>&1 ) &
t=.gpu/b2
for x in cuda_scan cuda_select cuda_runs; do
  timeout 100 $t/$x kept_plans > $o/test-$x-kept.txt 2>&1; echo "rc $?" >> $o/test-$x-kept.txt
  grep -E "test result|rc " $o/test-$x-kept.txt
done
timeout 150 $t/cuda_select gpu_u --test-threads=4 > $o/test-cuda_select-unsigned.txt 2>&1; echo "rc $?" >> $o/test-cuda_select-unsigned.txt
grep -E "test result|rc " $o/test-cuda_select-unsigned.txt
wait
sizes=16,20,24
for r in 1 2; do
  for b in b6 b2; do
    tb=.gpu/$b/tally
    echo "== $b round $r"
    timeout 60 $tb bench scan --backend cuda --log2-sizes $sizes --reps 100 --cases "f32 sum det,f32 sum fast,i32->i64 sum,f32 by key/8" 2>&1
    timeout 60 $tb bench select --backend cuda --log2-sizes $sizes --reps 100 --cases "select 50%,partition rev 50%" 2>&1
    timeout 30 $tb bench unique --backend cuda --log2-sizes $sizes --reps 100 2>&1
    timeout 30 $tb bench rle --backend cuda --log2-sizes $sizes --reps 100 2>&1
    timeout 30 $tb bench reduce-by-key --backend cuda --log2-sizes $sizes --reps 100 2>&1
  done
done > $o/bench.txt 2>&1
grep -E "^== |sum det|sum fast|i64 sum|by key/8 |select 50|partition|unique|rle|rbk" $o/bench.txt | head -150
timeout 90 /tmp/cub_lookback > $o/cub.txt 2>&1; echo "rc $?" >> $o/cub.txt; cat $o/cub.txt
