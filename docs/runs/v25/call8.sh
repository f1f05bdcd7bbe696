#!/usr/bin/env bash
# Session call 8: segment weights below 32 where there are many chunks (bin52, NVRTC defines
# override the plan's weight), alternately twice, 8M and 16M bins.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
S="bench hist --backend cuda --dtypes i32 --bins 8388608,16777216 --distributions uniform,zipf --strategies auto --reps 10"
for r in 1 2; do
  for d in "" "-DTALLY_PARTITION_SEGMENT_WEIGHT=16" "-DTALLY_PARTITION_SEGMENT_WEIGHT=24"; do
    echo "== run $r [$d]" >> $o/sweep.txt
    TALLY_NVRTC_OPTIONS="$d" timeout 60 .gpu/bin52/tally $S >> $o/sweep.txt 2>&1
  done
done
grep -E "==|partition  " $o/sweep.txt
tar czf "${OUT:-gpu-out}/call8.tgz" -C $o .
