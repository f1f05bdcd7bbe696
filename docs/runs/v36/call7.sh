#!/usr/bin/env bash
# v36 call 7: the tests after a second review (b4: slices and sizes from the scatter's tile;
# one-bin expectations from the pass and the partition's reach): cuda_partition whole, and
# cuda_histogram's switch-point tests past the block copies.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o7; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call7.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
gpus=$(nvidia-smi -L | wc -l)
bash scripts/unpack-xz.sh .gpu/b4/*.xz
t=.gpu/b4
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc " $o/$name.txt | tr '\n' ' ')"
}
CUDA_VISIBLE_DEVICES=0 run test-partition 200 $t/cuda_partition --test-threads=2 &
CUDA_VISIBLE_DEVICES=$((gpus > 1 ? 1 : 0)) run test-histogram-switch 200 $t/cuda_histogram cuda_large_bins_around --test-threads=2 &
wait
cat $o/test-*.txt | grep -E "^test |test result"
