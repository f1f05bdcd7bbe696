#!/usr/bin/env bash
# v31 call 6: the review's question, cached or write-combined staging buffers, with nothing else
# changed: 5bdc13b's CLI (cached) and the same build with cudarc's write-combined `alloc_pinned`
# (what was committed after this call), alternating, two rounds of `bench stream` from an 8 GiB file and a 4 GiB host
# array. Then stream_fill.cpp as revised (whole chunks checked after each timed run).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call6.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
bash scripts/unpack-xz.sh .gpu/bin5/tally.xz .gpu/bin5/tally-wc.xz
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
for round in 1 2; do
  for which in cached wc; do
    T=.gpu/bin5/tally; [ $which = wc ] && T=.gpu/bin5/tally-wc
    timeout 100 $T bench stream --source file --dir /tmp --size-gib 8 --buffers 2 --reps 3 > $o/file-$which-$round.txt 2>&1
    timeout 60 $T bench stream --source host --size-gib 4 --buffers 2 --reps 3 > $o/host-$which-$round.txt 2>&1
  done
done
for f in $o/file-*.txt $o/host-*.txt; do echo "== $(basename $f)"; grep -E "^(u8|i32|f32)" $f; done | tee $o/summary.txt
F=/tmp/stream-8g.bin
python3 -c "
import numpy as np, sys
b = np.random.default_rng(2).integers(0, 2**63, size=(64 << 20) // 8, dtype=np.uint64)
with open('$F', 'wb') as f:
    for k in range(128):
        b[0] = k; f.write(b.tobytes())
"
cat $F > /dev/null
g++ -O2 -std=c++17 -pthread -o /tmp/sf scripts/profile/stream_fill.cpp -ldl > $o/build-sf.txt 2>&1 || cp .gpu/bin5/stream_fill /tmp/sf
timeout 90 /tmp/sf $F > $o/stream-fill.txt 2>&1; echo "rc $?" >> $o/stream-fill.txt
cat $o/stream-fill.txt
# The review's changes to the wrap tests (four keys at 20% each, the plan's shape asserted): run,
# racecheck of the three on one block, memcheck and synccheck of all four.
export TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 TALLY_SKIP_HUGE=1
H=.gpu/tests5/cuda_histogram
( TALLY_SMALL=0 timeout 120 $H --test-threads=1 within_one > $o/test-wrap.txt 2>&1; echo "rc $?" >> $o/test-wrap.txt ) &
for t in cuda_16_bit_counters_wrap_within_one_block cuda_16_bit_outlier_counters_wrap_within_one_block \
         cuda_16_bit_channel_counters_wrap_within_one_block; do
  ( TALLY_RACECHECK=1 timeout 150 compute-sanitizer --tool racecheck --error-exitcode 99 $H --test-threads=1 $t --exact \
      > $o/race-$t.txt 2>&1; echo "rc $?" >> $o/race-$t.txt ) &
done
for tool in memcheck synccheck; do
  ( timeout 150 compute-sanitizer --tool $tool --error-exitcode 99 $H --test-threads=1 within_one > $o/$tool-wrap.txt 2>&1
    echo "rc $?" >> $o/$tool-wrap.txt ) &
done
wait
for f in $o/test-wrap.txt $o/race-*.txt $o/memcheck-wrap.txt $o/synccheck-wrap.txt; do
  echo "$(basename $f): $(tail -1 $f) | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1) | $(grep -E '^test result' $f | tail -1 | cut -c1-50)"
done | tee $o/wrap-summary.txt
