#!/usr/bin/env bash
# Session call 4 (v27, bin10, knobs only): scans by key in blocks of 512 threads (call 3: the
# f32 sum by key's fast look-back 1.276 against 1.387 ms at 256 x 4 x 4). Windows, split, rows
# and blocks around 512 x 4 x 2, for f32, i32 into i64 and long segments.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin10/tally.xz
T=.gpu/bin10/tally
t() { echo "== $1 $(date +%T)"; }
run() {  # label, env assignments...
  local l=$1; shift
  env "$@" timeout 60 $T bench scan --backend cuda --log2-sizes 24,28 --reps 20 --cases "f32 by key" > $o/bykey-$l.txt 2>&1
  echo "-- $l"; grep -E "^f32|rror" $o/bykey-$l.txt
}
for r in 1 2; do
  t "round $r"
  run base-r$r A=1
  run 512-4-2-r$r TALLY_SCAN_BLOCK_THREADS=512 TALLY_SCAN_VECS=4 TALLY_SCAN_MIN_BLOCKS=2
done
t variants
run 512-4-2-w1 TALLY_SCAN_BLOCK_THREADS=512 TALLY_SCAN_VECS=4 TALLY_SCAN_MIN_BLOCKS=2 TALLY_SCAN_WINDOWS=1
run 512-4-2-w4 TALLY_SCAN_BLOCK_THREADS=512 TALLY_SCAN_VECS=4 TALLY_SCAN_MIN_BLOCKS=2 TALLY_SCAN_WINDOWS=4
run 512-4-2-nosplit TALLY_SCAN_BLOCK_THREADS=512 TALLY_SCAN_VECS=4 TALLY_SCAN_MIN_BLOCKS=2 TALLY_SCAN_SPLIT=0
run 512-8-1 TALLY_SCAN_BLOCK_THREADS=512 TALLY_SCAN_VECS=8 TALLY_SCAN_MIN_BLOCKS=1
run 512-2-2 TALLY_SCAN_BLOCK_THREADS=512 TALLY_SCAN_VECS=2 TALLY_SCAN_MIN_BLOCKS=2
run 512-6-2 TALLY_SCAN_BLOCK_THREADS=512 TALLY_SCAN_VECS=6 TALLY_SCAN_MIN_BLOCKS=2
run 512-4-1 TALLY_SCAN_BLOCK_THREADS=512 TALLY_SCAN_VECS=4 TALLY_SCAN_MIN_BLOCKS=1
run 256-8-3-w1 TALLY_SCAN_BLOCK_THREADS=256 TALLY_SCAN_VECS=8 TALLY_SCAN_MIN_BLOCKS=3 TALLY_SCAN_WINDOWS=1
t wide
for s in base:256:4:3 512-4-1:512:4:1 512-4-2:512:4:2 512-8-1:512:8:1; do
  IFS=: read l th v b <<< "$s"
  if [ $l = base ]; then e=(A=1); else e=(TALLY_SCAN_BLOCK_THREADS=$th TALLY_SCAN_VECS=$v TALLY_SCAN_MIN_BLOCKS=$b); fi
  env "${e[@]}" timeout 60 $T bench scan --backend cuda --log2-sizes 24,28 --reps 20 --cases "i32->i64 by key,f64 by key" > $o/wide-$l.txt 2>&1
  echo "-- wide $l"; grep -E "by key|rror" $o/wide-$l.txt
done
t end
tar czf $OUT/call4.tgz -C /tmp o
