#!/usr/bin/env bash
# v40 call 9: call 7's trace again, corrected after a review: the look-back's polls counted for
# the warp (its slowest lane's, per round), not lane 0's; the summary searching up to 1,024
# predecessors (was 128) for where a look-back with instant polls could have ended.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o9; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call9.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
export CUDA_VISIBLE_DEVICES=0
timeout 200 bash scripts/scan-experiment/run-trace.sh $o > $o/run-trace.txt 2>&1
grep -E "det=|look-back|polls|rounds|whole|rows|end|waiting|rest|published" $o/run-trace.txt
for f in $o/trace-det*.bin; do gzip -1 $f; done
echo "elapsed $SECONDS s"
