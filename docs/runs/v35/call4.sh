#!/usr/bin/env bash
# v35 call 4 (one GPU): the committed build (b3): the run and select suites whole, their
# property tests, the one-device set tests; then, for the next version, the tile shapes of the
# widening sum (i32 into i64) and the f32 sum by key at 2^16-2^22 through the tuning knobs.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o4; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call4.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b3/*.xz
nccl=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])')/lib
t=.gpu/b3
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc " $o/$name.txt | tr '\n' ' ')"
}
run test-select 330 $t/cuda_select --test-threads=6 &
run test-runs 330 $t/cuda_runs --test-threads=4 &
run test-properties-runs 330 $t/cuda_properties_runs &
run test-properties-select 330 $t/cuda_properties_select &
LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH run test-multi 200 $t/cuda_multi
wait
tb=$t/tally
shape() { # cases env...
  local cases=$1; shift
  echo "== $cases $*"
  env "$@" timeout 60 $tb bench scan --backend cuda --log2-sizes 16,18,20,22 --reps 100 --cases "$cases" 2>&1
}
{
  shape "i32->i64 sum" X=0
  shape "i32->i64 sum" TALLY_SCAN_VECS=8 TALLY_SCAN_MIN_BLOCKS=8
  shape "i32->i64 sum" TALLY_SCAN_VECS=4 TALLY_SCAN_MIN_BLOCKS=8
  shape "i32->i64 sum" X=1
  shape "f32 by key/8" X=0
  shape "f32 by key/8" TALLY_SCAN_BLOCK_THREADS=256 TALLY_SCAN_VECS=4 TALLY_SCAN_MIN_BLOCKS=4
  shape "f32 by key/8" TALLY_SCAN_BLOCK_THREADS=512 TALLY_SCAN_VECS=4 TALLY_SCAN_MIN_BLOCKS=2
  shape "f32 by key/8" X=1
} > $o/shapes.txt 2>&1
grep -E "^== |sum |by key" $o/shapes.txt
