#!/usr/bin/env bash
# v40 call 1: pipelined scan tiles (resident blocks, each copying its next tile into shared
# memory while it scans, looks back for and writes the current one) against v39's tile a
# block (TALLY_SCAN_PIPELINE=0), in one binary, alternating: the f32 sums at 2^20/2^24/2^28
# and i32->i64 (pipeline forced on, and off as its default); pipelined shapes; CUB and torch
# from the same GPU; ncu's warp states of the pipelined f32 sum. Then (or beside it, on a
# second GPU) the scan tests with TALLY_REQUIRE_GPU=1 and compute-sanitizer over the
# pipelined tiles' test.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o1; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call1.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
gpus=$(nvidia-smi -L | wc -l)
bash scripts/unpack-xz.sh .gpu/b1/*.xz
t=.gpu/b1 B=$(realpath .gpu/b1/tally)
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY|RACECHECK SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
checks() {
  export CUDA_VISIBLE_DEVICES=$((gpus > 1 ? 1 : 0))
  run test-scan 420 $t/cuda_scan --test-threads=2
  for tool in memcheck racecheck synccheck; do
    # On one GPU the checks come after the benches: stop before the call's 600 s.
    [ "$gpus" -gt 1 ] || [ $SECONDS -lt 450 ] || { echo "sanitizer-pipelined-$tool: skipped at ${SECONDS} s"; continue; }
    TALLY_SMALL=1 run sanitizer-pipelined-$tool 240 compute-sanitizer --tool $tool $t/cuda_scan gpu_pipelined_tiles
  done
  [ "$gpus" -gt 1 ] || [ $SECONDS -lt 480 ] || { echo "test-properties: skipped at ${SECONDS} s"; return; }
  run test-properties 300 $t/cuda_properties
}
if [ "$gpus" -gt 1 ]; then checks > $o/checks-summary.txt 2>&1 & san=$!; else san=; fi
export CUDA_VISIBLE_DEVICES=0
for round in 1 2; do
  for mode in pipelined one-a-block; do
    p=; [ $mode = one-a-block ] && p=0
    echo "== $mode, round $round"
    TALLY_SCAN_PIPELINE=$p timeout 120 $B bench scan --backend cuda --log2-sizes 20,24,28 --reps 20 --cases "f32 sum,i32->i64 sum" 2>&1
  done
  echo "== i32->i64 pipelined, round $round"
  TALLY_SCAN_PIPELINE=1 timeout 120 $B bench scan --backend cuda --log2-sizes 24,28 --reps 20 --cases "i32->i64 sum" 2>&1
done > $o/bench-ab.txt 2>&1
grep -E "^== |^f32|^i32|rror|copy bandwidth" $o/bench-ab.txt | grep -v "^# tally"
shape() {
  echo "== $*"
  env "$@" timeout 60 $B bench scan --backend cuda --log2-sizes 24,28 --reps 20 --cases "f32 sum fast" 2>&1
}
{
  shape X=1
  shape TALLY_SCAN_BLOCK_THREADS=256 TALLY_SCAN_VECS=12
  shape TALLY_SCAN_VECS=16 TALLY_SCAN_MIN_BLOCKS=3
  shape TALLY_SCAN_BLOCK_THREADS=256 TALLY_SCAN_VECS=8 TALLY_SCAN_MIN_BLOCKS=3
  shape TALLY_SCAN_BLOCK_THREADS=512 TALLY_SCAN_VECS=6
  shape TALLY_SCAN_VECS=32 TALLY_SCAN_MIN_BLOCKS=1
  shape X=2
} > $o/shapes.txt 2>&1
grep -E "^== |f32 sum" $o/shapes.txt
timeout 200 bash .gpu/peers/run-peers-primitives.sh > $o/peers.txt 2>&1; echo "rc $?" >> $o/peers.txt
grep -E "DeviceScan|cumsum|memcpy|copy|^rc " $o/peers.txt | grep -v -E "n= +(1024|65536) "
for mode in pipelined one-a-block; do
  p=; [ $mode = one-a-block ] && p=0
  TALLY_SCAN_PIPELINE=$p timeout 120 ncu --section WarpStateStats --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --page raw \
    --kernel-name tally_scan --launch-skip 1 --launch-count 1 \
    $B bench scan --backend cuda --log2-sizes 28 --reps 2 --cases "f32 sum fast" > $o/ncu-$mode.txt 2>&1
  echo "== ncu $mode"
  grep -E "gpu__time_duration.sum|dram__throughput.avg.pct|registers_per_thread |issue_stalled_(barrier|long_scoreboard|sleeping|membar|lg_throttle|wait|no_instruction|short_scoreboard|mio_throttle|drain|branch|selected)[a-z_]*per_issue_active|warps_active.avg.per_cycle_active|launch__grid_size|occupancy_limit_shared" $o/ncu-$mode.txt | head -24
done
[ -z "$san" ] && checks > $o/checks-summary.txt 2>&1
[ -n "$san" ] && wait $san
cat $o/checks-summary.txt
echo "elapsed $SECONDS s"
