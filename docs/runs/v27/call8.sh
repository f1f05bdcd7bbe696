#!/usr/bin/env bash
# Session call 8 (v27, bin11 = the committed build, knobs only): the f32 sum staged in shared
# memory (as the widening scans are) at 2^20-2^28, against the default registers 128 x 24 x 3,
# alternating; scans by key of 8-byte values in blocks of 512.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin11/tally.xz
T=.gpu/bin11/tally
t() { echo "== $1 $(date +%T)"; }
run() {  # label cases rows blocks staged [threads]
  local l=$1 c=$2 e=(A=1)
  [ $l != base ] && e=(TALLY_SCAN_VECS=$3 TALLY_SCAN_MIN_BLOCKS=$4 TALLY_SCAN_STAGED=$5 TALLY_SCAN_BLOCK_THREADS=${6:-128})
  env "${e[@]}" timeout 60 $T bench scan --backend cuda --log2-sizes 20,22,24,28 --reps 30 --cases "$c" > $o/$l-$r.txt 2>&1
  echo "-- $l $r"; grep -E "^f|^i|rror" $o/$l-$r.txt | awk '{print $1,$2,$3,$4,$5,$7}'
}
for r in 1 2; do
  t "round $r"
  run base "f32 sum"; run staged-16-4 "f32 sum" 16 4 1; run staged-8-8 "f32 sum" 8 8 1; run staged-16-3 "f32 sum" 16 3 1
done
r=3
run staged-8-6 "f32 sum" 8 6 1; run staged-12-4 "f32 sum" 12 4 1; run staged-8-4-256 "f32 sum" 8 4 1 256
t by-key-8
for s in base:0:0:0 512-4-2:4:2:512 512-4-2w1:4:2:512 256-8-2w1:8:2:256; do
  IFS=: read l v b th <<< "$s"
  e=(A=1); [ $l != base ] && e=(TALLY_SCAN_VECS=$v TALLY_SCAN_MIN_BLOCKS=$b TALLY_SCAN_BLOCK_THREADS=$th)
  case $l in *w1) e+=(TALLY_SCAN_WINDOWS=1);; esac
  env "${e[@]}" timeout 60 $T bench scan --backend cuda --log2-sizes 24,28 --reps 20 --cases "f64 by key" > $o/f64key-$l.txt 2>&1
  echo "-- f64 by key $l"; grep -E "by key|rror" $o/f64key-$l.txt
done
t end
tar czf $OUT/call8.tgz -C /tmp o
