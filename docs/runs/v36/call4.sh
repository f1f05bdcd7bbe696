#!/usr/bin/env bash
# v36 call 4: the build with the scatter's shape by chunk count (b2: 1,024 x 16 at one block past
# 128 chunks) against v35's (base), both `auto`, 1M to 16M bins, two rounds; cuda_partition and
# compute-sanitizer over the tests whose chunks take the new shape; issue 14's table with CUB.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o4; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call4.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
gpus=$(nvidia-smi -L | wc -l)
bash scripts/unpack-xz.sh .gpu/b2/*.xz .gpu/base/*.xz
t=.gpu/b2 B=.gpu/b2/tally B0=.gpu/base/tally
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY|RACECHECK SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
checks() {
  export CUDA_VISIBLE_DEVICES=$((gpus > 1 ? 1 : 0))
  run test-partition 300 $t/cuda_partition --test-threads=2
  for tool in memcheck racecheck synccheck; do
    TALLY_SMALL=1 run sanitizer-smaller-chunks-$tool 200 compute-sanitizer --tool $tool $t/cuda_partition partition_smaller_chunks
  done
  for tool in memcheck synccheck; do
    TALLY_SMALL=1 run sanitizer-large-bins-$tool 200 compute-sanitizer --tool $tool $t/cuda_partition partition_large_bins
  done
}
if [ "$gpus" -gt 1 ]; then checks > $o/checks-summary.txt 2>&1 & san=$!; else checks > $o/checks-summary.txt 2>&1; san=; fi
export CUDA_VISIBLE_DEVICES=0
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_large_bins scripts/peers/cub_large_bins.cu > $o/build-cub.txt 2>&1 ) & nv=$!
big="--backend cuda --dtypes i32 --bins 1048576,4194304,8388608,16777216 --distributions uniform,zipf --reps 10 --strategies auto"
for round in 1 2; do
  timeout 150 $B bench hist $big > $o/bench-new-$round.txt 2>&1
  timeout 150 $B0 bench hist $big > $o/bench-base-$round.txt 2>&1
done
grep -h " auto " $o/bench-new-*.txt $o/bench-base-*.txt | awk '{print $2, $3, $5, $6, $11}'
{
  timeout 100 $B bench hist --backend cuda --dtypes i32 --bins 256,4096,16384 --distributions uniform,hot90,zipf --strategies auto --reps 20
  timeout 100 $B bench hist --backend cuda --dtypes i32 --bins 65536 --distributions uniform,zipf --strategies auto,block-shared-16,partition --reps 10
  timeout 120 $B bench hist --backend cuda --dtypes i32 --bins 1048576,16777216 --distributions uniform,zipf,hot90 --strategies auto,partition,global-l2 --reps 10
  timeout 100 $B bench hist --backend cuda --dtypes u8 --bins 256 --distributions uniform,hot90,zipf --strategies auto --reps 20
  timeout 100 $B bench hist --backend cuda --dtypes f32 --bins 256,4096,16384 --distributions uniform,hot90,zipf --strategies auto --reps 20
} > $o/bench-hist.txt 2>&1
timeout 90 $B bench weighted --backend cuda --distributions uniform,hot90 --strategies auto --reps 10 > $o/bench-weighted.txt 2>&1
timeout 90 $B bench hist2d --backend cuda --reps 10 > $o/bench-hist2d.txt 2>&1
wait $nv
timeout 120 /tmp/cub_large_bins > $o/cub-large.txt 2>&1; echo "rc $?" >> $o/cub-large.txt
[ -n "$san" ] && wait $san
cat $o/checks-summary.txt
echo "elapsed $SECONDS s"
