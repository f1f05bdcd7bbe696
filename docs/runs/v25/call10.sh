#!/usr/bin/env bash
# Session call 10: peers in the same call as tally's final build (bin53): tally auto at 1M and
# 16M bins and 2-D 1024 x 1024; CUB HistogramEven and the naive kernel (cub_large_bins.cu);
# torch.bincount (torch_large_bins.py). Then compute-sanitizer memcheck and racecheck over the
# weighted and 2-D tests (histogram_general.cu changed this session).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_large_bins scripts/peers/cub_large_bins.cu > $o/cub-build.txt 2>&1 ) &
B=.gpu/bin53/tally
timeout 80 $B bench hist --backend cuda --dtypes i32 --bins 1048576,16777216 --distributions uniform,zipf --strategies auto --reps 10 > $o/bench-hist.txt 2>&1
timeout 80 $B bench hist2d --backend cuda --reps 10 --distributions uniform,blob --strategies auto > $o/bench-hist2d.txt 2>&1
cat $o/bench-hist.txt $o/bench-hist2d.txt
wait
timeout 120 /tmp/cub_large_bins > $o/cub-large.txt 2>&1; echo "rc $?" >> $o/cub-large.txt
cat $o/cub-large.txt
timeout 120 python3 scripts/peers/torch_large_bins.py > $o/torch-large.txt 2>&1; echo "rc $?" >> $o/torch-large.txt
cat $o/torch-large.txt
for tool in memcheck racecheck; do
  ( TALLY_REQUIRE_GPU=1 timeout 280 compute-sanitizer --tool $tool --error-exitcode 99 .gpu/tests53/cuda_weighted --test-threads=1 > $o/san-weighted-$tool.txt 2>&1; echo "rc $?" >> $o/san-weighted-$tool.txt ) &
done
wait
for f in $o/san-*.txt; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^rc|test result|^test " $f | tail -12; done
tar czf "${OUT:-gpu-out}/call10.tgz" -C $o .
