#!/usr/bin/env bash
# v40 call 6: call 4's early read of the predecessors' slots, its loads now looked at only when
# warp 0 looks back (after the tile's rows), not before its rows: against none
# (-DTALLY_LOOKBACK_EARLY=0), alternating in one binary, the f32 sums, i32->i64 and the f32
# running max at 2^20/2^24/2^28; ncu's warp states both ways. Beside it (second GPU): the scan,
# tests (select and run: the same look-back code as call 4's, not run again), compute-sanitizer over the scans' kept plans and deterministic folds.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o6; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call6.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
gpus=$(nvidia-smi -L | wc -l)
bash scripts/unpack-xz.sh .gpu/b6/*.xz
t=.gpu/b6 B=$(realpath .gpu/b6/tally)
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY|RACECHECK SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
checks() {
  export CUDA_VISIBLE_DEVICES=$((gpus > 1 ? 1 : 0))
  run test-scan 300 $t/cuda_scan --test-threads=2
  for tool in memcheck racecheck synccheck; do
    [ "$gpus" -gt 1 ] || [ $SECONDS -lt 250 ] || { echo "sanitizers ($tool): skipped at ${SECONDS} s"; continue; }
    TALLY_SMALL=1 run sanitizer-kept-$tool 120 compute-sanitizer --tool $tool $t/cuda_scan gpu_kept_plans
    TALLY_SMALL=1 run sanitizer-fold-$tool 150 compute-sanitizer --tool $tool $t/cuda_scan gpu_deterministic_plain_sums
  done
}
if [ "$gpus" -gt 1 ]; then checks > $o/checks-summary.txt 2>&1 & san=$!; else san=; fi
export CUDA_VISIBLE_DEVICES=0
none=-DTALLY_LOOKBACK_EARLY=0
for round in 1 2; do
  for mode in early none; do
    opt=; [ $mode = none ] && opt=$none
    echo "== $mode, round $round"
    TALLY_NVRTC_OPTIONS=$opt timeout 100 $B bench scan --backend cuda --log2-sizes 20,24,28 --reps 20 --cases "f32 sum,i32->i64 sum,f32 max" 2>&1
  done
done > $o/bench-ab.txt 2>&1
grep -E "^== |^f32|^i32|rror|copy bandwidth" $o/bench-ab.txt | sed 's/^# tally bench scan: //'
for mode in early none; do
  opt=; [ $mode = none ] && opt=$none
  TALLY_NVRTC_OPTIONS=$opt timeout 100 ncu --section WarpStateStats --section SpeedOfLight --page raw \
    --kernel-name tally_scan --launch-skip 1 --launch-count 1 \
    $B bench scan --backend cuda --log2-sizes 28 --reps 2 --cases "f32 sum det" > $o/ncu-$mode.txt 2>&1
  echo "== ncu $mode"
  grep -E "gpu__time_duration.sum|dram__throughput.avg.pct|issue_stalled_(barrier|long_scoreboard|short_scoreboard|wait|selected)[a-z_]*per_issue_active|warps_active.avg.per_cycle_active" $o/ncu-$mode.txt | head -12
done
[ -z "$san" ] && checks > $o/checks-summary.txt 2>&1
[ -n "$san" ] && wait $san
cat $o/checks-summary.txt
echo "elapsed $SECONDS s"
