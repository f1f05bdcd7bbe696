#!/usr/bin/env bash
# v32 call 7 (one GPU): call 6's one failure, a fresh read-back's words and a short copy
# (cuda_external), after the public ReadBack::queue was made exact again; the read-back users'
# tests beside it (reductions; selection; the run primitives; the histogram's posting tests).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o7; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call7.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
for b in cuda_external cuda_reduce cuda_select cuda_runs; do
  timeout 100 .gpu/t7/$b > $o/test-$b.txt 2>&1; echo "rc $?" >> $o/test-$b.txt
done
timeout 100 .gpu/t7/cuda_histogram post > $o/test-cuda_histogram-post.txt 2>&1; echo "rc $?" >> $o/test-cuda_histogram-post.txt
for f in $o/test-*.txt; do echo "$(basename $f): $(grep -E '^test result' $f | tail -1 | cut -c1-60) | $(tail -1 $f)"; done | tee $o/summary.txt
