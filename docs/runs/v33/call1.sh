#!/usr/bin/env bash
# v33 call 1 (two GPUs): kept plans for device sets (SetHistogramPlan, SetReducePlan) tested and
# timed against one GPU's kept plans; the in-order partition's reversal with eight pairs a
# thread in flight; sanitizers over the changed select kernel and (v32's gap) racecheck over
# cuda_reduce; CUB's select and partition in the same call.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o1; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call1.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)/lib
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$nccl NCCL_NVLS_ENABLE=0 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b1/*.xz
B=.gpu/b1/tally
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_primitives .gpu/peers/cub_primitives.cu > $o/cub-build.txt 2>&1 ) &
t tests-multi
TALLY_REQUIRE_GPU=2 timeout 150 .gpu/b1/cuda_multi --test-threads=1 > $o/tests-multi.txt 2>&1; echo "rc $?" >> $o/tests-multi.txt
tail -4 $o/tests-multi.txt
t tests-select-and-sanitizers
( CUDA_VISIBLE_DEVICES=1 TALLY_REQUIRE_GPU=1 timeout 200 .gpu/b1/cuda_select > $o/tests-select.txt 2>&1; echo "rc $?" >> $o/tests-select.txt ) &
( for tool in memcheck racecheck synccheck; do
    CUDA_VISIBLE_DEVICES=0 TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 70 compute-sanitizer --tool $tool --error-exitcode 99 \
      .gpu/b1/cuda_select --test-threads=1 gpu_plans_run_many_times gpu_poisoned > $o/san-select-$tool.txt 2>&1; echo "rc $?" >> $o/san-select-$tool.txt
  done
  CUDA_VISIBLE_DEVICES=0 TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 TALLY_RACECHECK=1 timeout 120 compute-sanitizer --tool racecheck --error-exitcode 99 \
      .gpu/b1/cuda_reduce --test-threads=1 > $o/san-reduce-racecheck.txt 2>&1; echo "rc $?" >> $o/san-reduce-racecheck.txt ) &
wait
for f in $o/tests-*.txt $o/san-*.txt; do
  echo "$(basename $f): $(tail -1 $f) | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1) | $(grep -E '^test result' $f | tail -1 | cut -c1-70)"
done | tee $o/summary.txt
grep -E "FAILED|panicked" $o/tests-*.txt | head -20
t bench-multi
for r in 1 2; do
  echo "# round $r"
  timeout 100 $B bench multi --devices all --reps 9 2>&1
done > $o/bench-multi.txt
grep -v "^$" $o/bench-multi.txt
t select
for r in 1 2; do
  CUDA_VISIBLE_DEVICES=0 timeout 60 $B bench select --backend cuda --log2-sizes 28 --reps 20 --cases "partition 50%,partition rev 50%,select 50%,unordered 50%" 2>&1
done > $o/bench-select.txt
cat $o/bench-select.txt
CUDA_VISIBLE_DEVICES=0 timeout 60 /tmp/cub_primitives 2>&1 | grep -E "Select|Partition|memcpy|copy|n=  268435456" > $o/cub.txt; cat $o/cub.txt
t done
