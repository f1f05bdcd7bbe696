#!/usr/bin/env bash
# v37 call 3: the committed build (b3, the select experiment reverted: v36's library) on the
# two-H200 host, where issues 12-14 and 17 set their goals and v36 could not measure: issue 14's
# table with CUB's large-bin peer (GPU 0), the scans and the run primitives with CUB and torch
# from the same GPU (GPU 1, beside it), then the device set over both GPUs.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o3; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call3.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
gpus=$(nvidia-smi -L | wc -l)
nccl=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])')/lib
bash scripts/unpack-xz.sh .gpu/b3/*.xz
B=.gpu/b3/tally
primitives() {
  export CUDA_VISIBLE_DEVICES=$((gpus > 1 ? 1 : 0))
  timeout 120 $B bench scan --backend cuda --log2-sizes 20,24,28 --reps 20 > $o/bench-scan.txt 2>&1
  timeout 60 $B bench reduce-by-key --backend cuda --reps 20 > $o/bench-rbk.txt 2>&1
  timeout 60 $B bench unique --backend cuda --reps 20 > $o/bench-unique.txt 2>&1
  timeout 60 $B bench rle --backend cuda --reps 20 > $o/bench-rle.txt 2>&1
  timeout 200 bash .gpu/peers/run-peers-primitives.sh > $o/peers-primitives.txt 2>&1; echo "rc $?" >> $o/peers-primitives.txt
}
if [ "$gpus" -gt 1 ]; then primitives > $o/primitives.log 2>&1 & prim=$!; else prim=; fi
export CUDA_VISIBLE_DEVICES=0
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_large_bins scripts/peers/cub_large_bins.cu > $o/build-cub.txt 2>&1 ) & nv=$!
{
  timeout 120 $B bench hist --backend cuda --dtypes i32 --bins 1048576,16777216 --distributions uniform,zipf,hot90 --strategies auto,partition,global-l2 --reps 10
  timeout 60 $B bench hist --backend cuda --dtypes i32 --bins 65536 --distributions uniform,zipf --strategies auto --reps 10
  timeout 60 $B bench hist --backend cuda --dtypes u8 --bins 256 --distributions uniform,hot90,zipf --strategies auto --reps 20
  timeout 90 $B bench hist --backend cuda --dtypes i32,f32 --bins 256,4096,16384 --distributions uniform,hot90,zipf --strategies auto --reps 20
} > $o/bench-hist.txt 2>&1
grep -E " auto | partition | global-l2 " $o/bench-hist.txt | awk '{print $1, $2, $3, $4, $5, $6, $7}' | head -40
timeout 60 $B bench weighted --backend cuda --distributions uniform,hot90 --strategies auto --reps 10 > $o/bench-weighted.txt 2>&1
timeout 60 $B bench hist2d --backend cuda --reps 10 > $o/bench-hist2d.txt 2>&1
wait $nv
timeout 120 /tmp/cub_large_bins > $o/cub-large.txt 2>&1; echo "rc $?" >> $o/cub-large.txt
grep -i -E "ms|rc " $o/cub-large.txt | head -12
[ -n "$prim" ] && wait $prim
[ -z "$prim" ] && primitives > $o/primitives.log 2>&1
grep -E "sum|by key|i64|rbk|unique|rle|encode" $o/bench-scan.txt $o/bench-rbk.txt $o/bench-unique.txt $o/bench-rle.txt | grep -v '#' | head -40
grep -i -E "scan|sum|reduce|unique|encode|copy|rc " $o/peers-primitives.txt | head -30
if [ "$gpus" -gt 1 ]; then
  unset CUDA_VISIBLE_DEVICES
  LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH NCCL_NVLS_ENABLE=0 timeout 150 $B bench multi --devices all --reps 7 > $o/bench-multi.txt 2>&1
  echo "rc $?" >> $o/bench-multi.txt
  tail -15 $o/bench-multi.txt
fi
echo "elapsed $SECONDS s"
