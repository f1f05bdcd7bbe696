#!/usr/bin/env bash
# v32 call 3 (GPU 0 of the two-GPU host): issue 14's table at 2^28 samples with CUB and PyTorch
# beside it in the same call (v29's call 1 without its small-input rounds), this build.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o3; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call3.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache CUDA_VISIBLE_DEVICES=0
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
[ -x .gpu/bin6/tally ] || bash scripts/unpack-xz.sh .gpu/bin6/tally.xz
B=.gpu/bin6/tally
(
  for p in cub_large_bins cub_hist_float; do
    nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/$p scripts/peers/$p.cu > $o/build-$p.txt 2>&1
  done
  nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_peer .gpu/peers/cub_peer.cu > $o/build-cub_peer.txt 2>&1
) &
t table
{
  timeout 100 $B bench hist --backend cuda --dtypes i32 --bins 256,4096,16384 --distributions uniform,hot90,zipf --strategies auto --reps 20
  timeout 100 $B bench hist --backend cuda --dtypes i32 --bins 65536 --distributions uniform,zipf --strategies auto,block-shared-16,global-l2,partition --reps 10
  timeout 120 $B bench hist --backend cuda --dtypes i32 --bins 1048576,16777216 --distributions uniform,zipf --strategies auto,partition,global-l2 --reps 10
  timeout 100 $B bench hist --backend cuda --dtypes u8 --bins 256 --distributions uniform,hot90,zipf --strategies auto,block-shared,block-shared-16 --reps 20
  timeout 100 $B bench hist --backend cuda --dtypes f32 --bins 256,4096,16384 --distributions uniform,hot90,zipf --strategies auto --reps 20
} > $o/bench-hist.txt 2>&1
timeout 90 $B bench weighted --backend cuda --distributions uniform,hot90 --strategies auto --accumulations halves,native64 --reps 10 > $o/bench-weighted.txt 2>&1
timeout 90 $B bench hist2d --backend cuda --reps 10 > $o/bench-hist2d.txt 2>&1
cat $o/bench-hist.txt $o/bench-weighted.txt $o/bench-hist2d.txt | grep -v "^\s*$"
wait
t peers
timeout 100 /tmp/cub_peer > $o/cub-peer.txt 2>&1; echo "rc $?" >> $o/cub-peer.txt
timeout 100 /tmp/cub_hist_float > $o/cub-float.txt 2>&1; echo "rc $?" >> $o/cub-float.txt
timeout 120 /tmp/cub_large_bins > $o/cub-large.txt 2>&1; echo "rc $?" >> $o/cub-large.txt
PYTHONUNBUFFERED=1 timeout 100 python3 .gpu/peers/torch_peer.py > $o/torch-peer.txt 2>&1; echo "rc $?" >> $o/torch-peer.txt
cat $o/cub-peer.txt $o/cub-float.txt $o/cub-large.txt $o/torch-peer.txt
t done
