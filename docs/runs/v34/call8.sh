#!/usr/bin/env bash
# v34 call 8 (one GPU): the committed build's scan, select and run tests (b8: after the review of
# the checked sums' flag, whose test now follows an overflowing launch by a clean one on each set).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o8; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call8.tgz" -C $o .' EXIT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b8/*.xz
for x in cuda_select cuda_runs; do
  timeout 100 .gpu/b8/$x kept_plans > $o/test-$x-kept.txt 2>&1; echo "rc $?" >> $o/test-$x-kept.txt
  grep -E "test result|rc " $o/test-$x-kept.txt
done
timeout 200 .gpu/b8/cuda_scan --test-threads=2 > $o/test-cuda_scan.txt 2>&1; echo "rc $?" >> $o/test-cuda_scan.txt
grep -E "test result|rc |FAILED|panicked" $o/test-cuda_scan.txt
for tool in memcheck racecheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 99 .gpu/b8/cuda_scan kept_checked > $o/san-scan-$tool.txt 2>&1; echo "rc $?" >> $o/san-scan-$tool.txt
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|rc " $o/san-scan-$tool.txt
done
