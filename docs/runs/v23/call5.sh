#!/usr/bin/env bash
# Session call 5: the exact f32 estimate (axis.rs f32_estimate_is_exact: lower 0, power-of-two
# bin widths, slack -1) in bin40 against bin39 (call 4's build) alternating; the u8 column
# prototype (scripts/profile/u8_columns.cu) beside CUB; then the float histogram tests and
# compute-sanitizer over the new edge cases.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
t u8-prototype
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/u8c scripts/profile/u8_columns.cu && /tmp/u8c ) > $o/u8-columns.txt 2>&1
cat $o/u8-columns.txt
t ab
for round in 1 2; do
  for b in bin40 bin39; do
    echo "# $b"; .gpu/$b/tally bench hist --dtypes f16,f32 --bins 256,4096,16384 --distributions uniform,hot90 --strategies auto,block-shared --reps 20 2>&1
    echo "# $b weighted"; .gpu/$b/tally bench weighted --distributions uniform --accumulations halves --strategies auto --reps 20 2>&1
  done
done > $o/bench-ab.txt
grep -E "^#|uniform|hot90" $o/bench-ab.txt
t tests
B=.gpu/tests40
for n in cuda_histogram cuda_half cuda_weighted cuda_partition cuda_properties; do
  ( TALLY_REQUIRE_GPU=1 timeout 450 $B/$n-* > $o/test-$n.txt 2>&1; echo "rc $?" >> $o/test-$n.txt ) &
done
san() { local tool=$1 bin=$2 name=$3; shift 3
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 TALLY_SKIP_HUGE=1 timeout 420 compute-sanitizer --tool $tool --error-exitcode 99 $B/$bin-* --test-threads=1 "$@" > $o/san-$name-$tool.txt 2>&1; echo "rc $?" >> $o/san-$name-$tool.txt ) & }
san memcheck cuda_histogram hist cuda_f32_estimate cuda_matches_reference_f32
san racecheck cuda_histogram hist cuda_f32_estimate
san memcheck cuda_half half
san memcheck cuda_weighted weighted cuda_weighted_and_2d
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED|failed" $o/test-*.txt $o/san-*.txt | sed 's@/tmp/o/@@' | head -50
tar czf "${OUT:-gpu-out}/call5.tgz" -C $o .
t done
