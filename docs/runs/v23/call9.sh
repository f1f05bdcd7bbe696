#!/usr/bin/env bash
# Session call 9: the committed kernels (bin40; the lane-striped u8 copy of call 8 dropped) at
# 16 and 100 bins of u8 for the record beside call 8's, and the histogram tests with 8-bit
# samples added to the skew test.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
.gpu/bin40/tally bench hist --dtypes u8 --bins 16,100,256 --distributions uniform,hot90 --strategies auto --reps 20 > $o/bench-u8-small-bins.txt 2>&1
cat $o/bench-u8-small-bins.txt
TALLY_REQUIRE_GPU=1 timeout 400 .gpu/tests43/cuda_histogram-* > $o/test-cuda_histogram.txt 2>&1; echo "rc $?" >> $o/test-cuda_histogram.txt
grep -E "^test |^test result|^rc" $o/test-cuda_histogram.txt | tail -4
tar czf "${OUT:-gpu-out}/call9.tgz" -C $o .
