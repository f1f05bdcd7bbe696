#!/usr/bin/env bash
# v36 call 1 (the two-GPU host where lent, else what comes): the partition's scatter with warp 0
# scanning the chunk counts where they are few (b1): its tests, compute-sanitizer over them, its
# speed against the block scan of the same build (-DTALLY_PARTITION_WARP_SCAN_CHUNKS=0), against
# the build before (base) and against ranks by ballots (-DTALLY_PARTITION_BALLOT_RANKS=1), a sweep of the scatter's shape; the Python DeviceSet against
# one GPU; where two GPUs: tally bench multi; where an H200: issue 13's and 14's rows with CUB.
set -u
cd "$(dirname "$0")/../.."
o=${OUT:-gpu-out}/call1; mkdir -p $o  # straight into $OUT: a call cut off keeps what it wrote
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
gpus=$(nvidia-smi -L | wc -l)
bash scripts/unpack-xz.sh .gpu/b1/*.xz .gpu/base/*.xz
nccl=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])')/lib
t=.gpu/b1 B=.gpu/b1/tally B0=.gpu/base/tally
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY|RACECHECK SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
# Tests and sanitizers on GPU 1 beside the benches where there are two GPUs, else before them.
checks() {
  export CUDA_VISIBLE_DEVICES=$((gpus > 1 ? 1 : 0))
  run test-partition 300 $t/cuda_partition --test-threads=2
  for tool in memcheck racecheck synccheck; do
    TALLY_SMALL=1 run sanitizer-partition-$tool 200 compute-sanitizer --tool $tool $t/cuda_partition partition_smaller_chunks
  done
  TALLY_SMALL=1 run sanitizer-partition-switch-racecheck 200 compute-sanitizer --tool racecheck $t/cuda_partition partition_around_chunks
  for tool in memcheck racecheck synccheck; do
    TALLY_SMALL=1 run sanitizer-select-$tool 150 compute-sanitizer --tool $tool $t/cuda_select gpu_kept
  done
}
if [ "$gpus" -gt 1 ]; then checks > $o/checks-summary.txt 2>&1 & san=$!; else checks > $o/checks-summary.txt 2>&1; san=; fi
export CUDA_VISIBLE_DEVICES=0
big="--backend cuda --dtypes i32 --bins 1048576,16777216 --distributions uniform,zipf --reps 10"
for round in 1 2; do
  timeout 150 $B bench hist $big --strategies auto,partition > $o/bench-new-$round.txt 2>&1
  TALLY_NVRTC_OPTIONS=-DTALLY_PARTITION_WARP_SCAN_CHUNKS=0 timeout 150 $B bench hist $big --strategies partition > $o/bench-blockscan-$round.txt 2>&1
  timeout 150 $B0 bench hist $big --strategies partition > $o/bench-base-$round.txt 2>&1
  # An experiment: ranks by a ballot per bit of the chunk number where chunks are few.
  TALLY_NVRTC_OPTIONS=-DTALLY_PARTITION_BALLOT_RANKS=1 timeout 150 $B bench hist $big --strategies partition > $o/bench-ballot-$round.txt 2>&1
done
# The scatter's shape (threads, keys a thread, blocks a multiprocessor) on the new kernel.
for shape in 512,8,2 512,16,3 256,16,4 256,32,2 1024,16,1; do
  IFS=, read th it bl <<< "$shape"
  TALLY_PARTITION_THREADS=$th TALLY_PARTITION_ITEMS=$it TALLY_PARTITION_BLOCKS_PER_SM=$bl \
    timeout 150 $B bench hist $big --strategies partition > $o/sweep-$th-$it-$bl.txt 2>&1
done
unset CUDA_VISIBLE_DEVICES
[ -n "$san" ] && wait $san
cat $o/checks-summary.txt
if [ "$gpus" -gt 1 ] && [ $SECONDS -lt 480 ]; then
  LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH timeout 200 $B bench multi --devices all --reps 7 > $o/bench-multi.txt 2>&1
fi
# The Python package (a wheel of the same source): a DeviceSet against one GPU.
site=/tmp/py
if ls $t/tally-*.whl > /dev/null 2>&1; then
  python3 -m pip install --quiet --no-index --no-deps --target $site $t/tally-*.whl > $o/pip.txt 2>&1
  ( cd /tmp && PYTHONPATH=$site LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH timeout 200 python3 -m tally.bench --log2 --devices all --reps 10 > $o/python-bench-devices.txt 2>&1; echo "rc $?" >> $o/python-bench-devices.txt )
fi
# On an H200 (where issues 13 and 14 set their goals): their rows with CUB in the same call.
if grep -q H200 $o/info.txt && [ $SECONDS -lt 420 ]; then
  export CUDA_VISIBLE_DEVICES=0
  nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_lookback scripts/peers/cub_lookback_sizes.cu > $o/nvcc.txt 2>&1 && timeout 120 /tmp/cub_lookback > $o/cub-lookback.txt 2>&1
  timeout 150 $B bench select --backend cuda --log2-sizes 28 --reps 10 > $o/bench-select.txt 2>&1
  for what in unique rle reduce-by-key; do timeout 100 $B bench $what --backend cuda --log2-sizes 28 > $o/bench-$what.txt 2>&1; done
  timeout 120 $B bench scan --backend cuda --log2-sizes 20,24,28 > $o/bench-scan.txt 2>&1
fi
echo "elapsed $SECONDS s"; ls $o
