#!/usr/bin/env bash
# v34 call 1 (one GPU): kept look-back plans clear their next launch's tile states in the kernel.
# The new tests and the look-back primitives' suites; v33's build (b6) against this one (b1),
# interleaved, at 2^16-2^28, with CUB's look-back primitives at the same sizes from this call.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o1; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call1.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b6/tally.xz .gpu/b1/*.xz
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_lookback scripts/peers/cub_lookback_sizes.cu > $o/cub-build.txt 2>&1 ) &
t=.gpu/b1
# the new tests first, then the suites of the primitives that look back
for x in cuda_scan cuda_select cuda_runs; do
  timeout 150 $t/$x kept_plans --test-threads=1 > $o/test-$x-kept.txt 2>&1; echo "rc $?" >> $o/test-$x-kept.txt
  tail -3 $o/test-$x-kept.txt
done
for x in cuda_scan cuda_select cuda_runs cuda_properties_select cuda_properties_runs; do
  timeout 200 $t/$x --test-threads=2 --skip kept_plans > $o/test-$x.txt 2>&1; echo "rc $?" >> $o/test-$x.txt
  grep -E "test result|rc " $o/test-$x.txt
done
wait
sizes=16,20,24,28
for r in 1 2; do
  for b in b6 b1; do
    tb=.gpu/$b/tally
    echo "== $b round $r"
    timeout 120 $tb bench scan --backend cuda --log2-sizes $sizes --reps 50 --cases "f32 sum det,f32 sum fast,i32->i64 sum,f32 by key/8" 2>&1
    timeout 120 $tb bench select --backend cuda --log2-sizes $sizes --reps 50 --cases "select 50%,partition rev 50%" 2>&1
    timeout 60 $tb bench unique --backend cuda --log2-sizes $sizes --reps 50 2>&1
    timeout 60 $tb bench rle --backend cuda --log2-sizes $sizes --reps 50 2>&1
    timeout 60 $tb bench reduce-by-key --backend cuda --log2-sizes $sizes --reps 50 2>&1
  done
done > $o/bench.txt 2>&1
grep -E "^== |sum det|sum fast|select 50|unique|rle|rbk" $o/bench.txt | head -120
timeout 90 /tmp/cub_lookback > $o/cub.txt 2>&1; echo "rc $?" >> $o/cub.txt; cat $o/cub.txt
