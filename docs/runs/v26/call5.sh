#!/usr/bin/env bash
# Session call 5: the committed kernels with bench reduce-by-key's new integer case (bin5).
# Reduce-by-key of i32 values into i64 sums (the fast look-back) with one window a round (the
# new default) and four (the old), f32 sums (the fixed look-back, unaffected) as the control;
# then select's fast look-back against the fixed one (TALLY_SELECT_FIXED_LOOKBACK).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin5/tally.xz
B=.gpu/bin5/tally
for round in 1 2; do
  for w in 1 4; do
    TALLY_NVRTC_OPTIONS="-DTALLY_RUNS_WINDOWS=$w" timeout 90 $B bench reduce-by-key --backend cuda --log2-sizes 28 --reps 20 > $o/bench-rbk-w$w-r$round.txt 2>&1
    echo "== rbk windows $w round $round"; grep -v "^#" $o/bench-rbk-w$w-r$round.txt | tail -n +2
  done
done
for round in 1 2; do
  for f in 0 1; do
    TALLY_NVRTC_OPTIONS="-DTALLY_SELECT_FIXED_LOOKBACK=$f" timeout 120 $B bench select --backend cuda --log2-sizes 28 --reps 20 --cases "select 1%,select 50%,select 99%" > $o/bench-select-fixed$f-r$round.txt 2>&1
    echo "== select fixed=$f round $round"; grep -v "^#" $o/bench-select-fixed$f-r$round.txt | tail -n +2
  done
done
tar czf "${OUT:-gpu-out}/call5.tgz" -C $o .
