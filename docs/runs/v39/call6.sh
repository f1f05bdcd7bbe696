#!/usr/bin/env bash
# v39 call 6: after a review of argmin's rounds, a test of threads that take several rounds
# (extremes only in later rounds, ties, NaNs before and after, infinities and huge values,
# every element the starting extremum) on the default device and one of a block a
# multiprocessor; the reduce tests and compute-sanitizer memcheck over the new one.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o6; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call6.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b6/*.xz
t=.gpu/b6
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
export CUDA_VISIBLE_DEVICES=0
run test-reduce 150 $t/cuda_reduce --test-threads=2
TALLY_SMALL=1 run sanitizer-reduce-rounds-memcheck 120 compute-sanitizer --tool memcheck $t/cuda_reduce gpu_argmin_argmax_over_many_rounds
echo "elapsed $SECONDS s"
