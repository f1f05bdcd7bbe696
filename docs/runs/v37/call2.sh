#!/usr/bin/env bash
# v37 call 2: the look-back warp reworked (b2): it starts on a tile as soon as warp 0 has
# published the tile's count (named barriers that alternate by round), and thread 0 takes the
# next tile number before its loads and stores it after them. b2 with and without the look-back
# warp (TALLY_COMPACT_LOOKBACK_WARP=0), alternating, 2^24 and 2^28 f32; a few shapes; ncu's warp
# states of both at 1% kept; CUB and torch in the same call; cuda_select both ways,
# cuda_properties_select, compute-sanitizer over the new test and the f32 selections.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o2; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call2.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
gpus=$(nvidia-smi -L | wc -l)
bash scripts/unpack-xz.sh .gpu/b2/*.xz
t=.gpu/b2 B=.gpu/b2/tally
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY|RACECHECK SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
checks() {
  export CUDA_VISIBLE_DEVICES=$((gpus > 1 ? 1 : 0))
  for tool in memcheck racecheck synccheck; do
    TALLY_SMALL=1 TALLY_SKIP_HUGE=1 run sanitizer-resident-$tool 240 compute-sanitizer --tool $tool $t/cuda_select gpu_resident_blocks
  done
  for tool in memcheck racecheck synccheck; do
    TALLY_SMALL=1 TALLY_SKIP_HUGE=1 run sanitizer-f32-$tool 200 compute-sanitizer --tool $tool $t/cuda_select gpu_f32_select
  done
  run test-select 300 $t/cuda_select --test-threads=2
  TALLY_COMPACT_LOOKBACK_WARP=0 run test-select-without 300 $t/cuda_select --test-threads=2
  run test-properties-select 200 $t/cuda_properties_select
}
if [ "$gpus" -gt 1 ]; then checks > $o/checks-summary.txt 2>&1 & san=$!; else checks > $o/checks-summary.txt 2>&1; san=; fi
export CUDA_VISIBLE_DEVICES=0
cases="select 1%,select 50%,select 99%,select runs 50%,partition 50%,partition rev 50%,flagged 50%,indices 50%"
for round in 1 2; do
  for lw in 1 0; do
    echo "== lookback warp $lw, round $round"
    TALLY_COMPACT_LOOKBACK_WARP=$lw timeout 150 $B bench select --backend cuda --log2-sizes 24,28 --reps 20 --cases "$cases" 2>&1
  done
done > $o/bench-select.txt 2>&1
grep -E "^== |select|partition|flagged|indices|rror" $o/bench-select.txt | grep -v '^#'
shape() {
  echo "== $*"
  env "$@" timeout 60 $B bench select --backend cuda --log2-sizes 24,28 --reps 10 --cases "select 1%,select 50%,select 99%" 2>&1
}
{
  shape TALLY_COMPACT_MIN_BLOCKS=2
  shape TALLY_COMPACT_VECS=8 TALLY_COMPACT_MIN_BLOCKS=4
  shape TALLY_NVRTC_OPTIONS=-DTALLY_SELECT_WINDOWS=2
  shape TALLY_NVRTC_OPTIONS=-DTALLY_SELECT_WINDOWS=8
  shape X=1
} > $o/shapes.txt 2>&1
grep -E "^== |select" $o/shapes.txt | grep -v '^#'
for lw in 1 0; do
  TALLY_COMPACT_LOOKBACK_WARP=$lw timeout 120 ncu --section WarpStateStats --section SpeedOfLight --section Occupancy --page raw \
    --kernel-name tally_select --launch-skip 1 --launch-count 1 \
    $B bench select --backend cuda --log2-sizes 28 --reps 2 --cases "select 1%" > $o/ncu-select1-lw$lw.txt 2>&1
  echo "== ncu lookback warp $lw"
  grep -E "gpu__time_duration.sum|dram__throughput.avg.pct|issue_stalled_(barrier|long_scoreboard|sleeping|membar|lg_throttle|wait|no_instruction|short_scoreboard|math|mio|drain|branch|dispatch|selected|not_selected)[a-z_]*per_issue_active|warps_active.avg.per_cycle_active|inst_executed.sum " $o/ncu-select1-lw$lw.txt | head -30
done
timeout 200 bash .gpu/peers/run-peers-primitives.sh > $o/peers.txt 2>&1; echo "rc $?" >> $o/peers.txt
grep -i -E "select|copy|rc " $o/peers.txt | head -20
[ -n "$san" ] && wait $san
cat $o/checks-summary.txt
echo "elapsed $SECONDS s"
