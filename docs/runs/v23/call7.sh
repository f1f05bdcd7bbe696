#!/usr/bin/env bash
# Session call 7: CUB's HistogramEven of f32 (scripts/peers/cub_hist_float.cu) beside tally's f32
# sweep (bin40, the committed kernels) in one call; then the histogram, weighted and half tests
# with the review's additions (zero itself at lower-0 edges, a 2-D and half axes with the exact
# estimate), memcheck over them.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
t f32-vs-cub
.gpu/bin40/tally bench hist --dtypes f32 --bins 256,4096,16384 --distributions uniform,hot90 --strategies auto --reps 20 > $o/bench-hist-f32.txt 2>&1
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cubf scripts/peers/cub_hist_float.cu && /tmp/cubf ) > $o/cub-hist-f32.txt 2>&1
cat $o/bench-hist-f32.txt $o/cub-hist-f32.txt
t tests
B=.gpu/tests41
for n in cuda_histogram cuda_half cuda_weighted; do
  ( TALLY_REQUIRE_GPU=1 timeout 420 $B/$n-* > $o/test-$n.txt 2>&1; echo "rc $?" >> $o/test-$n.txt ) &
done
san() { local tool=$1 bin=$2 name=$3; shift 3
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 TALLY_SKIP_HUGE=1 timeout 420 compute-sanitizer --tool $tool --error-exitcode 99 $B/$bin-* --test-threads=1 "$@" > $o/san-$name-$tool.txt 2>&1; echo "rc $?" >> $o/san-$name-$tool.txt ) & }
san memcheck cuda_histogram hist cuda_f32_estimate
san memcheck cuda_weighted weighted cuda_weighted_and_2d
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|panicked|FAILED|failed" $o/test-*.txt $o/san-*.txt | sed 's@/tmp/o/@@' | head -30
tar czf "${OUT:-gpu-out}/call7.tgz" -C $o .
t done
