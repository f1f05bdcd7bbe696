#!/usr/bin/env bash
# v39 call 7: compute-sanitizer racecheck over the kernels this version touched, on tests small
# enough for it: reduce.cu (argmax over misaligned views: the round path and the finish; the
# custom reduction; posted and copied results) and accumulate.cu's widening (external memory).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o7; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call7.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1 TALLY_SMALL=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b6/*.xz
t=.gpu/b6
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |RACECHECK SUMMARY|ERROR SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
R="compute-sanitizer --tool racecheck"
run racecheck-reduce-misaligned 200 $R $t/cuda_reduce gpu_misaligned_device_input &
run racecheck-reduce-custom-posted 200 $R $t/cuda_reduce gpu_custom_reduction gpu_posted &
run racecheck-external-widening 200 $R $t/cuda_external histogram_counters &
wait
echo "elapsed $SECONDS s"
