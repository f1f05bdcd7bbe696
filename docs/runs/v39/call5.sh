#!/usr/bin/env bash
# v39 call 5: argmin and argmax take a whole round of loads in one step where it holds no NaN
# (a min/max tree and, where the extremum moves, a scan without branches; call 4's build went
# element by element there): tally bench reduce twice with CUB from the same GPU, ncu of the f32
# argmin at 2^24 (against calls 3 and 4), the reduce tests (with ties) and compute-sanitizer.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o5; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call5.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b5/*.xz
t=.gpu/b5 B=$(realpath .gpu/b5/tally)
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
export CUDA_VISIBLE_DEVICES=0
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_reduce scripts/peers/cub_reduce.cu > $o/nvcc.txt 2>&1
for round in 1 2; do
  echo "== round $round"
  timeout 90 $B bench reduce --backend cuda --log2-sizes 20,24,28 --dtypes f32,f64,i32 --ops sum,min,minmax,argmin,argmax --reps 30 2>&1
done > $o/bench-reduce.txt 2>&1
grep -E "^== |268435456|16777216" $o/bench-reduce.txt | grep -v '^#'
/tmp/cub_reduce > $o/cub-reduce.txt 2>&1; echo "rc $?" >> $o/cub-reduce.txt
grep -E "16777216|268435456" $o/cub-reduce.txt
N="ncu --section WarpStateStats --section SpeedOfLight --section Occupancy --section LaunchStats --page raw"
timeout 90 $N --kernel-name tally_reduce --launch-skip 3 --launch-count 1 $B bench reduce --backend cuda --log2-sizes 24 --dtypes f32 --ops argmin --reps 5 > $o/ncu-tally-argmin-24.txt 2>&1
for f in $o/ncu-*.txt; do echo "${f##*/}: $(grep -E "gpu__time_duration.sum|sm__cycles_active.(avg|max) |launch__registers_per_thread |sm__inst_executed.avg.pct_of_peak_sustained_elapsed|sm__inst_executed_pipe_cbu_pred_on_any.avg.pct" $f | awk '{print $1, $(NF)}' | tr '\n' ' ')"; done
echo "elapsed $SECONDS s"
run test-reduce 120 $t/cuda_reduce --test-threads=2
for tool in memcheck synccheck; do
  TALLY_SMALL=1 run sanitizer-reduce-$tool 90 compute-sanitizer --tool $tool $t/cuda_reduce \
    gpu_f32_extrema gpu_nan_placement gpu_f32_ops gpu_i32_ops gpu_u8_ops gpu_f64_ops gpu_poisoned gpu_many_partials
done
echo "elapsed $SECONDS s"
