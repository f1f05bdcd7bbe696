#!/usr/bin/env bash
# v37 call 1: select's order-keeping kernels with a look-back warp in resident blocks (b1,
# default) against the same build without (TALLY_COMPACT_LOOKBACK_WARP=0, v36's kernel),
# alternating, 2^24 and 2^28 f32; shapes and look-back windows of the new kernel; CUB and torch
# in the same call; ncu of the new kernel at 1% kept;
# cuda_select both ways, cuda_properties_select, compute-sanitizer over the new test.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o1; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call1.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
gpus=$(nvidia-smi -L | wc -l)
bash scripts/unpack-xz.sh .gpu/b1/*.xz
t=.gpu/b1 B=.gpu/b1/tally
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY|RACECHECK SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
checks() {
  export CUDA_VISIBLE_DEVICES=$((gpus > 1 ? 1 : 0))
  run test-select 300 $t/cuda_select --test-threads=2
  TALLY_COMPACT_LOOKBACK_WARP=0 run test-select-without 300 $t/cuda_select --test-threads=2
  run test-properties-select 200 $t/cuda_properties_select
  for tool in memcheck racecheck synccheck; do
    TALLY_SMALL=1 TALLY_SKIP_HUGE=1 run sanitizer-resident-$tool 240 compute-sanitizer --tool $tool $t/cuda_select gpu_resident_blocks
  done
  for tool in memcheck synccheck; do
    TALLY_SMALL=1 TALLY_SKIP_HUGE=1 run sanitizer-f32-$tool 200 compute-sanitizer --tool $tool $t/cuda_select gpu_f32_select
  done
}
if [ "$gpus" -gt 1 ]; then checks > $o/checks-summary.txt 2>&1 & san=$!; else checks > $o/checks-summary.txt 2>&1; san=; fi
export CUDA_VISIBLE_DEVICES=0
cases="select 1%,select 50%,select 99%,select runs 50%,partition 50%,partition rev 50%,flagged 50%,indices 50%,unordered 50%"
for round in 1 2; do
  for lw in 1 0; do
    echo "== lookback warp $lw, round $round"
    TALLY_COMPACT_LOOKBACK_WARP=$lw timeout 150 $B bench select --backend cuda --log2-sizes 24,28 --reps 20 --cases "$cases" 2>&1
  done
done > $o/bench-select.txt 2>&1
grep -E "^== |select|partition|flagged|indices|unordered|rror" $o/bench-select.txt | grep -v '^#'
shape() {
  echo "== $*"
  env "$@" timeout 60 $B bench select --backend cuda --log2-sizes 24,28 --reps 10 --cases "select 1%,select 50%,select 99%" 2>&1
}
{
  shape X=0
  shape TALLY_COMPACT_MIN_BLOCKS=2
  shape TALLY_COMPACT_VECS=8 TALLY_COMPACT_MIN_BLOCKS=5
  shape TALLY_COMPACT_VECS=8 TALLY_COMPACT_MIN_BLOCKS=4
  shape TALLY_COMPACT_THREADS=256 TALLY_COMPACT_VECS=8 TALLY_COMPACT_MIN_BLOCKS=2
  shape TALLY_COMPACT_THREADS=64 TALLY_COMPACT_VECS=16 TALLY_COMPACT_MIN_BLOCKS=6
  shape TALLY_COMPACT_THREADS=256 TALLY_COMPACT_VECS=4 TALLY_COMPACT_MIN_BLOCKS=4
  shape TALLY_NVRTC_OPTIONS=-DTALLY_SELECT_WINDOWS=8
  shape TALLY_NVRTC_OPTIONS=-DTALLY_SELECT_WINDOWS=16
  shape X=1
} > $o/shapes.txt 2>&1
grep -E "^== |select" $o/shapes.txt | grep -v '^#'
timeout 240 bash .gpu/peers/run-peers-primitives.sh > $o/peers.txt 2>&1; echo "rc $?" >> $o/peers.txt
grep -i -E "select|partition|unique|copy|rc " $o/peers.txt | head -30
timeout 150 ncu --set full --kernel-name tally_select --launch-skip 1 --launch-count 1 \
  $B bench select --backend cuda --log2-sizes 28 --reps 2 --cases "select 1%" > $o/ncu-select1.txt 2>&1
grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Block Limit" $o/ncu-select1.txt | head -12
[ -n "$san" ] && wait $san
cat $o/checks-summary.txt
echo "elapsed $SECONDS s"
