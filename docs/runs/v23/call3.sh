#!/usr/bin/env bash
# Session call 3 (bin38): the float rule's exact-quotient shortcut (binning.cuh, TALLY_EXACT_QUOTIENT=0
# divides as before) with the f32 estimate, A/B on f16, f32 and f64 histograms; then every test
# binary that bins floats, and compute-sanitizer over the float histogram, weighted and 2-D
# tests. Everything lands in one archive.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
T=.gpu/bin38/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
t hist-ab
h() { echo "# $1"; TALLY_NVRTC_OPTIONS="$2" $T bench hist --dtypes $3 --bins 256,4096,16384 --distributions uniform,zipf --strategies auto,block-shared --reps 20 2>&1; }
for round in 1 2; do
  h "new" "" i32,f32,f16,f64
  h "no exact quotient (TALLY_EXACT_QUOTIENT=0)" "-DTALLY_EXACT_QUOTIENT=0" f16,f64
  h "before v23 (TALLY_EXACT_QUOTIENT=0 TALLY_HIST_ESTIMATE=0)" "-DTALLY_EXACT_QUOTIENT=0 -DTALLY_HIST_ESTIMATE=0" f32,f16,f64
done > $o/bench-hist-ab.txt
grep -E "^#|uniform" $o/bench-hist-ab.txt
t weighted-2d
for c in "new|" "no exact quotient|-DTALLY_EXACT_QUOTIENT=0"; do
  IFS='|' read name opt <<< "$c"
  echo "# weighted $name"; TALLY_NVRTC_OPTIONS="$opt" $T bench weighted --distributions uniform --accumulations halves,native64,exact --reps 10 2>&1
  echo "# hist2d $name"; TALLY_NVRTC_OPTIONS="$opt" $T bench hist2d --reps 10 2>&1
done > $o/bench-weighted-2d.txt
cat $o/bench-weighted-2d.txt
t tests
B=.gpu/tests38
for n in cuda_histogram cuda_half cuda_weighted cuda_weighted_exact cuda_partition cuda_properties cuda_stream; do
  ( TALLY_REQUIRE_GPU=1 timeout 450 $B/$n-* > $o/test-$n.txt 2>&1; echo "rc $?" >> $o/test-$n.txt ) &
done
san() { local tool=$1 bin=$2 name=$3; shift 3
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 TALLY_SKIP_HUGE=1 timeout 420 compute-sanitizer --tool $tool --error-exitcode 99 $B/$bin-* --test-threads=1 "$@" > $o/san-$name-$tool.txt 2>&1; echo "rc $?" >> $o/san-$name-$tool.txt ) & }
san memcheck cuda_histogram hist cuda_matches_reference_f32 cuda_matches_reference_f64 cuda_f32_estimate
san racecheck cuda_histogram hist cuda_f32_estimate
san memcheck cuda_weighted weighted
san memcheck cuda_half half
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED|failed" $o/test-*.txt $o/san-*.txt | sed 's@/tmp/o/@@' | head -50
tar czf "${OUT:-gpu-out}/call3.tgz" -C $o .
t done
