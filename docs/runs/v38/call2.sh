#!/usr/bin/env bash
# v38 call 2: the ordered look-back keeps the aggregates of the rounds before its inclusive
# prefix in shared memory and goes further back (call 1 re-read its nearest round: reduce-by-key
# 3.5x slower); its fold runs from the nearest inclusive prefix only; scans by key keep the
# fixed look-back (TALLY_SCAN_ORDERED=1 tries them in order); running min/max of 4-byte items
# in 16-row tiles at 4 blocks. Alternating in one binary: the default against every
# deterministic look-back fixed (TALLY_SCAN_ORDERED=0 and -DTALLY_LOOKBACK_ORDERED=0 for the run
# primitives), CUB and torch from the same GPU, ncu of reduce-by-key both ways. Beside it on
# the second GPU: the tests, the tests with a history of 32 tiles (every miss restarts), and
# compute-sanitizer.
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
fixed="TALLY_SCAN_ORDERED=0 TALLY_NVRTC_OPTIONS=-DTALLY_LOOKBACK_ORDERED=0"
short=-DTALLY_LOOKBACK_ORDERED_HISTORY=32
checks() {
  export CUDA_VISIBLE_DEVICES=$((gpus > 1 ? 1 : 0))
  for tool in memcheck racecheck synccheck; do
    TALLY_SMALL=1 run sanitizer-scan-$tool 150 compute-sanitizer --tool $tool $t/cuda_scan gpu_kept_plans
    TALLY_SMALL=1 run sanitizer-rbk-$tool 150 compute-sanitizer --tool $tool $t/cuda_runs gpu_float_sums_repeat
  done
  TALLY_SMALL=1 TALLY_SCAN_ORDERED=1 run sanitizer-scan-keyed-ordered-racecheck 150 compute-sanitizer --tool racecheck $t/cuda_scan gpu_kept_plans
  run test-scan 400 $t/cuda_scan --test-threads=2
  run test-runs 300 $t/cuda_runs --test-threads=2
  TALLY_NVRTC_OPTIONS=$short run test-scan-short-history 400 $t/cuda_scan --test-threads=2
  TALLY_NVRTC_OPTIONS=$short run test-runs-short-history 300 $t/cuda_runs --test-threads=2
  TALLY_SCAN_ORDERED=1 run test-scan-keyed-ordered 400 $t/cuda_scan --test-threads=2
  run test-properties 300 $t/cuda_properties
  run test-properties-runs 200 $t/cuda_properties_runs
}
if [ "$gpus" -gt 1 ]; then checks > $o/checks-summary.txt 2>&1 & san=$!; else san=; fi
export CUDA_VISIBLE_DEVICES=0
for round in 1 2; do
  for mode in default fixed; do
    env=X=1; [ $mode = fixed ] && env=$fixed
    echo "== $mode, round $round"
    env $env timeout 120 $B bench scan --backend cuda --log2-sizes 20,24,28 --reps 20 2>&1
    env $env timeout 60 $B bench reduce-by-key --backend cuda --reps 20 2>&1
  done
  echo "== keyed ordered, round $round"
  TALLY_SCAN_ORDERED=1 timeout 60 $B bench scan --backend cuda --log2-sizes 24,28 --reps 20 --cases "f32 by key/8,f64 by key/8,f32 by key/2^20" 2>&1
done > $o/bench-ab.txt 2>&1
grep -E "^== |^f32|^i32|^f64|^rbk|rror" $o/bench-ab.txt | grep -v '^#'
timeout 200 bash .gpu/peers/run-peers-primitives.sh > $o/peers.txt 2>&1; echo "rc $?" >> $o/peers.txt
grep -E "DeviceScan|ReduceByKey|cumsum|^rc " $o/peers.txt | grep -v -E "n= +(1024|65536) "
for mode in default fixed; do
  env=X=1; [ $mode = fixed ] && env=$fixed
  env $env timeout 120 ncu --section WarpStateStats --section SpeedOfLight --section Occupancy --page raw \
    --kernel-name tally_runs --launch-skip 1 --launch-count 1 \
    $B bench reduce-by-key --backend cuda --reps 2 > $o/ncu-rbk-$mode.txt 2>&1
  echo "== ncu rbk $mode"
  grep -E "gpu__time_duration.sum|dram__throughput.avg.pct|issue_stalled_(barrier|long_scoreboard|sleeping|lg_throttle|wait|short_scoreboard|mio|selected)[a-z_]*per_issue_active|warps_active.avg.per_cycle_active" $o/ncu-rbk-$mode.txt | head -14
done
[ -z "$san" ] && checks > $o/checks-summary.txt 2>&1
[ -n "$san" ] && wait $san
cat $o/checks-summary.txt
echo "elapsed $SECONDS s"
