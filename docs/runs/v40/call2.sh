#!/usr/bin/env bash
# v40 call 2: pipelined tiles that take their next tile after the current one's look-back
# (the copies land while the current tile is written; TALLY_SCAN_PIPELINE_LATE=1, the build's
# default) against call 1's early take (-DTALLY_SCAN_PIPELINE_LATE=0) and a tile a block
# (TALLY_SCAN_PIPELINE=0), alternating in one binary; shapes and 8 look-back windows; ncu of
# the late take. Beside it on a second GPU (or after): the scan tests and compute-sanitizer
# over the pipelined tiles' test.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o2; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call2.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
gpus=$(nvidia-smi -L | wc -l)
bash scripts/unpack-xz.sh .gpu/b2/*.xz
t=.gpu/b2 B=$(realpath .gpu/b2/tally)
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY|RACECHECK SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
checks() {
  export CUDA_VISIBLE_DEVICES=$((gpus > 1 ? 1 : 0))
  for tool in memcheck racecheck synccheck; do
    [ "$gpus" -gt 1 ] || [ $SECONDS -lt 420 ] || { echo "sanitizer-pipelined-$tool: skipped at ${SECONDS} s"; continue; }
    TALLY_SMALL=1 run sanitizer-pipelined-$tool 200 compute-sanitizer --tool $tool $t/cuda_scan gpu_pipelined_tiles
  done
  [ "$gpus" -gt 1 ] || [ $SECONDS -lt 400 ] || { echo "test-scan: skipped at ${SECONDS} s"; return; }
  run test-scan 300 $t/cuda_scan --test-threads=2
}
if [ "$gpus" -gt 1 ]; then checks > $o/checks-summary.txt 2>&1 & san=$!; else san=; fi
export CUDA_VISIBLE_DEVICES=0
early=-DTALLY_SCAN_PIPELINE_LATE=0
for round in 1 2; do
  for mode in late early one-a-block; do
    p=; opt=; [ $mode = one-a-block ] && p=0; [ $mode = early ] && opt=$early
    echo "== $mode, round $round"
    TALLY_SCAN_PIPELINE=$p TALLY_NVRTC_OPTIONS=$opt timeout 100 $B bench scan --backend cuda --log2-sizes 20,24,28 --reps 20 --cases "f32 sum" 2>&1
  done
done > $o/bench-ab.txt 2>&1
grep -E "^== |^f32|rror|copy bandwidth" $o/bench-ab.txt | sed 's/^# tally bench scan: //'
shape() {
  echo "== $*"
  env "$@" timeout 60 $B bench scan --backend cuda --log2-sizes 24,28 --reps 20 --cases "f32 sum fast" 2>&1
}
{
  shape TALLY_SCAN_VECS=16 TALLY_SCAN_MIN_BLOCKS=3
  shape TALLY_SCAN_BLOCK_THREADS=256 TALLY_SCAN_VECS=8 TALLY_SCAN_MIN_BLOCKS=3
  shape TALLY_SCAN_WINDOWS=8
  shape TALLY_SCAN_PIPELINE=0 TALLY_SCAN_WINDOWS=8
  shape TALLY_SCAN_BLOCK_THREADS=256 TALLY_SCAN_VECS=12
  shape X=1
} > $o/shapes.txt 2>&1
grep -E "^== |f32 sum" $o/shapes.txt
TALLY_SCAN_PIPELINE=1 timeout 100 $B bench scan --backend cuda --log2-sizes 24,28 --reps 20 --cases "i32->i64 sum" > $o/bench-wide.txt 2>&1
grep -E "i32" $o/bench-wide.txt
timeout 120 ncu --section WarpStateStats --section SpeedOfLight --section Occupancy --page raw \
  --kernel-name tally_scan --launch-skip 1 --launch-count 1 \
  $B bench scan --backend cuda --log2-sizes 28 --reps 2 --cases "f32 sum fast" > $o/ncu-late.txt 2>&1
echo "== ncu late"
grep -E "gpu__time_duration.sum|dram__throughput.avg.pct|registers_per_thread |issue_stalled_(barrier|long_scoreboard|sleeping|lg_throttle|wait|short_scoreboard|mio_throttle|selected)[a-z_]*per_issue_active|warps_active.avg.per_cycle_active|launch__grid_size" $o/ncu-late.txt | head -24
# Where the tile a block waits (a tile a block, v39's kernel): stall samples by SASS line.
TALLY_SCAN_PIPELINE=0 TALLY_NVRTC_OPTIONS=-lineinfo timeout 150 ncu --section SourceCounters --section WarpStateStats \
  --kernel-name tally_scan --launch-skip 1 --launch-count 1 --page source --print-source sass --csv \
  $B bench scan --backend cuda --log2-sizes 28 --reps 2 --cases "f32 sum fast" > $o/ncu-source-one-a-block.csv 2>&1
echo "ncu source: $(wc -l < $o/ncu-source-one-a-block.csv) lines"
[ -z "$san" ] && checks > $o/checks-summary.txt 2>&1
[ -n "$san" ] && wait $san
cat $o/checks-summary.txt
echo "elapsed $SECONDS s"
