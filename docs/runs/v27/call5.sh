#!/usr/bin/env bash
# Session call 5 (v27, bin10, knobs only): the f32 scan by key's shape, candidates from call 4
# against the default, alternating twice; then three more shapes.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin10/tally.xz
T=.gpu/bin10/tally
t() { echo "== $1 $(date +%T)"; }
run() {  # label threads rows blocks windows (base: the policy's)
  local l=$1 e=(A=1)
  [ $l != base ] && e=(TALLY_SCAN_BLOCK_THREADS=$2 TALLY_SCAN_VECS=$3 TALLY_SCAN_MIN_BLOCKS=$4 TALLY_SCAN_WINDOWS=$5)
  env "${e[@]}" timeout 60 $T bench scan --backend cuda --log2-sizes 20,24,28 --reps 20 --cases "f32 by key" > $o/bykey-$l-$r.txt 2>&1
  echo "-- $l $r"; grep -E "^f32|rror" $o/bykey-$l-$r.txt | grep -v " 1048576 "
}
for r in 1 2; do
  t "round $r"
  run base; run 256-8-3-w1 256 8 3 1; run 512-6-2-w2 512 6 2 2
done
r=3
run 512-6-2-w1 512 6 2 1; run 256-12-2-w1 256 12 2 1; run 256-8-4-w1 256 8 4 1; run 256-8-3-w2 256 8 3 2; run 512-6-2-w4 512 6 2 4
t end
tar czf $OUT/call5.tgz -C /tmp o
