#!/usr/bin/env bash
# v32 call 5 (two GPUs): bench hist now also times the read of the whole histogram to the host
# (`read ms`, the plan kept) and the library's one-off call (`call ms`, a new plan each time).
# Small calls with the counters posted (default) and not (TALLY_POSTED_COUNTS=0), alternating;
# bench multi with the devices' plans made one after another (default) and on pool threads
# (TALLY_SET_CONCURRENT_PLANS=1), alternating; cuda_multi with the pool threads; bench select
# at 2^28 (call 4's ran past its bound) with CUB's select in the same call.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o5; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call5.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)/lib
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$nccl NCCL_NVLS_ENABLE=0 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin6/tally.xz
B=.gpu/bin6/tally
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_primitives .gpu/peers/cub_primitives.cu > $o/cub-build.txt 2>&1 ) &
t tests
TALLY_SET_CONCURRENT_PLANS=1 TALLY_REQUIRE_GPU=2 timeout 120 .gpu/tests6/cuda_multi --test-threads=1 > $o/tests-multi-concurrent.txt 2>&1; echo "rc $?" >> $o/tests-multi-concurrent.txt
tail -3 $o/tests-multi-concurrent.txt
t small-calls
$B bench hist --backend cuda --size 65536 --dtypes i32,u8,f32 --bins 256 --distributions uniform --reps 3 > /dev/null 2>&1
for r in 1 2; do
  for posted in default 0; do
    env=""; [ $posted = 0 ] && env="TALLY_POSTED_COUNTS=0"
    echo "# round $r posted counts: $posted"
    env $env CUDA_VISIBLE_DEVICES=0 timeout 60 $B bench hist --backend cuda --size 1048576 --dtypes i32,u8,f32 --bins 256 --distributions uniform --strategies auto --reps 300 2>&1
    env $env CUDA_VISIBLE_DEVICES=0 timeout 60 $B bench hist --backend cuda --size 65536 --dtypes i32 --bins 256 --distributions uniform --strategies auto --reps 300 2>&1
    env $env CUDA_VISIBLE_DEVICES=0 timeout 60 $B bench hist --backend cuda --size 1048576 --dtypes i32 --bins 1000,4096 --distributions uniform --strategies auto --reps 300 2>&1
  done
done > $o/small.txt
grep -E "^#|i32|u8|f32" $o/small.txt
t bench-multi
for r in 1 2; do
  for c in 0 1; do
    echo "# round $r concurrent plans $c"
    TALLY_SET_CONCURRENT_PLANS=$c timeout 100 $B bench multi --devices all --reps 9 2>&1
  done
done > $o/bench-multi.txt
grep -v "^$" $o/bench-multi.txt
t select
CUDA_VISIBLE_DEVICES=0 timeout 150 $B bench select --backend cuda --log2-sizes 28 --reps 20 --cases "select 1%,select 50%,select 99%,partition 50%,unordered 50%" > $o/bench-select.txt 2>&1
cat $o/bench-select.txt
wait
CUDA_VISIBLE_DEVICES=0 timeout 100 /tmp/cub_primitives 2>&1 | grep -E "Select|Partition|memcpy|copy|n=  268435456" > $o/cub.txt; cat $o/cub.txt
t done
