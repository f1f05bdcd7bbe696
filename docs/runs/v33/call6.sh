#!/usr/bin/env bash
# v33 call 6 (one GPU, an H200 asked for): the committed build's select and partitions at 2^28
# beside CUB's, twice.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o6; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call6.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b6/tally.xz
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_primitives .gpu/peers/cub_primitives.cu > $o/cub-build.txt 2>&1 ) &
for r in 1 2; do
  timeout 60 .gpu/b6/tally bench select --backend cuda --log2-sizes 28 --reps 20 --cases "partition 50%,partition rev 50%,select 50%" 2>&1
done > $o/bench-select.txt
cat $o/bench-select.txt
wait
timeout 60 /tmp/cub_primitives 2>&1 | grep -E "Select::If f32 \(50|Partition::If f32 \(50|memcpy|n=  268435456.*Scan::InclusiveSum f32" > $o/cub.txt; cat $o/cub.txt
