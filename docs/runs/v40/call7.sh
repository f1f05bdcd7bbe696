#!/usr/bin/env bash
# v40 call 7: where a scan tile's time goes (scripts/scan-experiment/run-trace.sh): the f32 sum
# of 2^28 as the library builds it (v39's kernel), without its look-back, and traced per tile
# (a patched copy), built with nvcc outside tally, fast and deterministic.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o7; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call7.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
export CUDA_VISIBLE_DEVICES=0
timeout 400 bash scripts/scan-experiment/run-trace.sh $o 2>&1 | tee $o/run-trace.txt
rm -f $o/*.bin.keep
for f in $o/trace-det*.bin; do gzip -1 $f; done
ls -la $o
echo "elapsed $SECONDS s"
