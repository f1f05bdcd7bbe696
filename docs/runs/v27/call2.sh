#!/usr/bin/env bash
# Session call 2 (v27, bin9: the committed code plus two experiment switches in lookback.cuh).
# A/B in one binary through NVRTC options: tiles numbered by a global atomic (the default) or by
# the block's index (-DTALLY_TILES_BY_BLOCK=1, as CUB does), alternating twice, over the scans,
# select and the run primitives; then the waiting lane's sleep; then ncu's source view of the
# f32 sum at 2^20 (line info).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin9/tally.xz
T=.gpu/bin9/tally
t() { echo "== $1 $(date +%T)"; }
ab() {  # label, NVRTC options
  local l=$1; export TALLY_NVRTC_OPTIONS="$2"
  timeout 90 $T bench scan --backend cuda --log2-sizes 20,24,28 --reps 20 --cases "f32 sum,i32->i64 sum,f32 by key/8" > $o/scan-$l.txt 2>&1
  timeout 90 $T bench select --backend cuda --log2-sizes 24,28 --reps 20 --cases "select 1%,select 50%,select 99%" > $o/select-$l.txt 2>&1
  for what in rle unique reduce-by-key; do
    timeout 60 $T bench $what --backend cuda --log2-sizes 24,28 --reps 20 > $o/$what-$l.txt 2>&1
  done
  unset TALLY_NVRTC_OPTIONS
  echo "-- $l"; cat $o/{scan,select,rle,unique,reduce-by-key}-$l.txt | grep -v "^#\|^case"
}
for r in 1 2; do
  t "round $r"
  ab ticket-r$r ""
  ab block-r$r "-DTALLY_TILES_BY_BLOCK=1"
done
t sleep
for v in "0:32" "4:128" "0:128" "16:32" "100000000:32"; do
  a=${v%:*}; ns=${v#*:}
  TALLY_NVRTC_OPTIONS="-DTALLY_LOOKBACK_SLEEP_AFTER=$a -DTALLY_LOOKBACK_SLEEP_NS=$ns" timeout 60 $T bench scan --backend cuda --log2-sizes 24,28 --reps 20 --cases "f32 sum" > $o/sleep-$a-$ns.txt 2>&1
  echo "sleep after $a for $ns ns"; grep "^f32" $o/sleep-$a-$ns.txt
done
t ncu-source
TALLY_NVRTC_OPTIONS="-lineinfo" timeout 150 ncu --set full --import-source yes --kernel-name tally_scan --launch-skip 2 --launch-count 1 -o $o/scan-2p20 $T bench scan --backend cuda --log2-sizes 20 --reps 3 --cases "f32 sum fast" > $o/ncu-2p20-run.txt 2>&1
ncu -i $o/scan-2p20.ncu-rep --page source --csv --print-source cuda > $o/ncu-2p20-source.csv 2>&1
ncu -i $o/scan-2p20.ncu-rep --page details > $o/ncu-2p20-details.txt 2>&1
grep -E "Duration|Elapsed Cycles|SM Active Cycles|Warp Cycles Per Issued" $o/ncu-2p20-details.txt
wc -c $o/ncu-2p20-source.csv
t end
tar czf $OUT/call2.tgz -C /tmp o
