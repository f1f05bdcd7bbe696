#!/usr/bin/env bash
# v40 call 8: call 7's trace with 8 and 2 look-back windows (256 and 64 predecessors a round):
# does a poll of more slots take longer, and do fewer rounds pay for it?
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o8; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call8.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
export CUDA_VISIBLE_DEVICES=0
for w in 8 2; do
  mkdir -p $o/w$w
  WINDOWS=$w timeout 200 bash scripts/scan-experiment/run-trace.sh $o/w$w > $o/w$w/run-trace.txt 2>&1
  echo "== $w windows"; grep -E "det=|look-back|polls|rounds|whole" $o/w$w/run-trace.txt
  for f in $o/w$w/trace-det*.bin; do gzip -1 $f; done
done
echo "elapsed $SECONDS s"
