#!/usr/bin/env bash
# v36 call 3 (b1): where the scatter's 1,024-thread tiles (call 2: 11% faster at 16M bins, 5%
# slower at 1M) start to win: 2M to 16M bins (64 to 512 chunks), uniform and Zipf, three shapes,
# two rounds.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o3; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call3.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1 CUDA_VISIBLE_DEVICES=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
[ -x .gpu/b1/tally ] || bash scripts/unpack-xz.sh .gpu/b1/tally.xz
B=.gpu/b1/tally
big="--backend cuda --dtypes i32 --bins 2097152,4194304,8388608,16777216 --distributions uniform,zipf --reps 10 --strategies partition"
for round in 1 2; do
  for shape in 512,16,2 1024,16,1 512,32,1; do
    IFS=, read th it bl <<< "$shape"
    TALLY_PARTITION_THREADS=$th TALLY_PARTITION_ITEMS=$it TALLY_PARTITION_BLOCKS_PER_SM=$bl \
      timeout 150 $B bench hist $big > $o/shape-$th-$it-$bl-$round.txt 2>&1
    echo "== $shape round $round ($SECONDS s)"; grep -h "partition " $o/shape-$th-$it-$bl-$round.txt | awk '{print $2, $3, $6}'
  done
done
