#!/usr/bin/env bash
# v38 call 1: the ordered look-back (deterministic float sums: a left fold from the nearest
# inclusive prefix, one round of reads) against the fixed one (-DTALLY_LOOKBACK_ORDERED=0), in
# one binary, alternating: the scans at 2^20/2^24/2^28 and reduce-by-key; the f32 running max
# now on the fast look-back, in three tile shapes; CUB and torch from the same GPU; ncu's warp
# states of the f32 sums. On the second GPU beside it: the scan and run tests, the properties,
# compute-sanitizer over the kept plans (both look-backs) and the float reduce-by-key.
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
fixed=-DTALLY_LOOKBACK_ORDERED=0
checks() {
  export CUDA_VISIBLE_DEVICES=$((gpus > 1 ? 1 : 0))
  for tool in memcheck racecheck synccheck; do
    TALLY_SMALL=1 run sanitizer-scan-$tool 150 compute-sanitizer --tool $tool $t/cuda_scan gpu_kept_plans
    TALLY_SMALL=1 run sanitizer-rbk-$tool 150 compute-sanitizer --tool $tool $t/cuda_runs gpu_float_sums_repeat
  done
  TALLY_SMALL=1 TALLY_NVRTC_OPTIONS=$fixed run sanitizer-scan-fixed-racecheck 150 compute-sanitizer --tool racecheck $t/cuda_scan gpu_kept_plans
  run test-scan 400 $t/cuda_scan --test-threads=2
  run test-runs 300 $t/cuda_runs --test-threads=2
  run test-properties 300 $t/cuda_properties
  run test-properties-runs 200 $t/cuda_properties_runs
  TALLY_NVRTC_OPTIONS=$fixed run test-scan-fixed 400 $t/cuda_scan --test-threads=2
}
if [ "$gpus" -gt 1 ]; then checks > $o/checks-summary.txt 2>&1 & san=$!; else san=; fi
export CUDA_VISIBLE_DEVICES=0
for round in 1 2; do
  for mode in ordered fixed; do
    opt=; [ $mode = fixed ] && opt=$fixed
    echo "== $mode, round $round"
    TALLY_NVRTC_OPTIONS=$opt timeout 120 $B bench scan --backend cuda --log2-sizes 20,24,28 --reps 20 2>&1
    TALLY_NVRTC_OPTIONS=$opt timeout 60 $B bench reduce-by-key --backend cuda --reps 20 2>&1
  done
done > $o/bench-ab.txt 2>&1
grep -E "^== |^f32|^i32|^f64|^rbk|rror" $o/bench-ab.txt | grep -v '^#'
shape() {
  echo "== $*"
  env "$@" timeout 60 $B bench scan --backend cuda --log2-sizes 24,28 --reps 20 --cases "f32 max" 2>&1
}
{
  for round in 1 2; do
    shape X=1
    shape TALLY_SCAN_VECS=16 TALLY_SCAN_MIN_BLOCKS=4
    shape TALLY_SCAN_VECS=24 TALLY_SCAN_MIN_BLOCKS=3
  done
} > $o/max-shapes.txt 2>&1
grep -E "^== |f32 max" $o/max-shapes.txt
timeout 200 bash .gpu/peers/run-peers-primitives.sh > $o/peers.txt 2>&1; echo "rc $?" >> $o/peers.txt
grep -E "DeviceScan|ReduceByKey|cumsum|^rc " $o/peers.txt | grep -v -E "n= +(1024|65536) "
for mode in ordered fixed fast; do
  opt=; case=$([ $mode = fast ] && echo "f32 sum fast" || echo "f32 sum det"); [ $mode = fixed ] && opt=$fixed
  TALLY_NVRTC_OPTIONS=$opt timeout 120 ncu --section WarpStateStats --section SpeedOfLight --section Occupancy --page raw \
    --kernel-name tally_scan --launch-skip 1 --launch-count 1 \
    $B bench scan --backend cuda --log2-sizes 28 --reps 2 --cases "$case" > $o/ncu-$mode.txt 2>&1
  echo "== ncu $mode"
  grep -E "gpu__time_duration.sum|dram__throughput.avg.pct|issue_stalled_(barrier|long_scoreboard|sleeping|membar|lg_throttle|wait|no_instruction|short_scoreboard|math|mio|drain|branch|dispatch|selected|not_selected)[a-z_]*per_issue_active|warps_active.avg.per_cycle_active" $o/ncu-$mode.txt | head -24
done
[ -z "$san" ] && checks > $o/checks-summary.txt 2>&1
[ -n "$san" ] && wait $san
cat $o/checks-summary.txt
echo "elapsed $SECONDS s"
