#!/usr/bin/env bash
# v32 call 4 (GPU 0 of the two-GPU host): issues 11 to 13 at 2^20-2^28 with CUB, PyTorch and
# CuPy beside them in the same call (the bundled peers script), this build.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o4; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call4.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache CUDA_VISIBLE_DEVICES=0
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
[ -x .gpu/bin6/tally ] || bash scripts/unpack-xz.sh .gpu/bin6/tally.xz
B=.gpu/bin6/tally
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_primitives .gpu/peers/cub_primitives.cu > $o/cub-build.txt 2>&1 ) &
t reduce
timeout 120 $B bench reduce --backend cuda --log2-sizes 20,24,28 --dtypes f32,f64 --ops sum,exact-sum,minmax,argmin --reps 30 > $o/bench-reduce.txt 2>&1
t scan
timeout 100 $B bench scan --backend cuda --log2-sizes 20,24,28 --reps 20 > $o/bench-scan.txt 2>&1
t select
timeout 100 $B bench select --backend cuda --log2-sizes 24,28 --reps 20 > $o/bench-select.txt 2>&1
t runs
for what in rle unique reduce-by-key; do
  timeout 60 $B bench $what --backend cuda --log2-sizes 24,28 --reps 20 > $o/bench-$what.txt 2>&1
done
cat $o/bench-*.txt | grep -v "^\s*$"
wait
t peers
timeout 150 /tmp/cub_primitives > $o/cub.txt 2>&1; echo "rc $?" >> $o/cub.txt
PYTHONUNBUFFERED=1 timeout 120 python3 .gpu/peers/torch_primitives.py > $o/torch.txt 2>&1; echo "rc $?" >> $o/torch.txt
cat $o/cub.txt $o/torch.txt
t done
