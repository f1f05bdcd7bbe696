#!/usr/bin/env bash
# Session call 4 (bin39): weighted and 2-D histograms bin f32 by the estimate (histogram_general.cu;
# TALLY_HIST_ESTIMATE=0 turns every estimate path off), and the exact quotient moved out of line
# into float_rule_bin (f64 samples; TALLY_EXACT_QUOTIENT=0 divides always). A/B alternating, then
# the float histogram tests and compute-sanitizer over the weighted and 2-D tests.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
T=.gpu/bin39/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
t u8-prototype
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/u8c scripts/profile/u8_columns.cu && /tmp/u8c ) > $o/u8-columns.txt 2>&1
cat $o/u8-columns.txt
.gpu/bin39/tally bench hist --dtypes u8 --bins 256 --distributions uniform,hot90,hot100 --strategies auto,block-shared --reps 20 > $o/bench-u8.txt 2>&1
cat $o/bench-u8.txt
t weighted-2d-ab
for round in 1 2; do
  for c in "new|" "no estimate (TALLY_HIST_ESTIMATE=0)|-DTALLY_HIST_ESTIMATE=0"; do
    IFS='|' read name opt <<< "$c"
    echo "# weighted $name"; TALLY_NVRTC_OPTIONS="$opt" $T bench weighted --distributions uniform,hot90 --accumulations halves,native64 --strategies auto --reps 20 2>&1
    echo "# hist2d $name"; TALLY_NVRTC_OPTIONS="$opt" $T bench hist2d --reps 10 2>&1
  done
done > $o/bench-weighted-2d-ab.txt
grep -E "^#|weighted |hist2d " $o/bench-weighted-2d-ab.txt
t hist-ab
for round in 1 2; do
  for c in "new|" "divide always (TALLY_EXACT_QUOTIENT=0)|-DTALLY_EXACT_QUOTIENT=0"; do
    IFS='|' read name opt <<< "$c"
    echo "# $name"; TALLY_NVRTC_OPTIONS="$opt" $T bench hist --dtypes f64,f16,f32 --bins 256,4096,16384 --distributions uniform --strategies block-shared --reps 20 2>&1
  done
done > $o/bench-hist-ab.txt
grep -E "^#|uniform" $o/bench-hist-ab.txt
t ncu
M=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active
for c in "new|" "old|-DTALLY_HIST_ESTIMATE=0"; do
  IFS='|' read name opt <<< "$c"
  echo "# ncu weighted 256 uniform halves $name"
  TALLY_NVRTC_OPTIONS="$opt" timeout 150 ncu --kernel-name tally_histogram_general --launch-skip 2 --launch-count 1 --metrics $M \
    $T bench weighted --distributions uniform --accumulations halves --strategies auto --reps 2 2>&1 | grep -E "gpu__|smsp__|sm__|dram__"
  echo "# ncu hist2d 1024x1024 uniform $name"
  TALLY_NVRTC_OPTIONS="$opt" timeout 150 ncu --kernel-name tally_histogram_general --launch-skip 2 --launch-count 1 --metrics $M \
    $T bench hist2d --distributions uniform --strategies global-atomic --reps 2 2>&1 | grep -E "gpu__|smsp__|sm__|dram__"
done > $o/ncu.txt
cat $o/ncu.txt
t tests
B=.gpu/tests39
for n in cuda_histogram cuda_half cuda_weighted cuda_weighted_exact cuda_partition cuda_reduce; do
  ( TALLY_REQUIRE_GPU=1 timeout 450 $B/$n-* > $o/test-$n.txt 2>&1; echo "rc $?" >> $o/test-$n.txt ) &
done
san() { local tool=$1 bin=$2 name=$3; shift 3
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 TALLY_SKIP_HUGE=1 timeout 420 compute-sanitizer --tool $tool --error-exitcode 99 $B/$bin-* --test-threads=1 "$@" > $o/san-$name-$tool.txt 2>&1; echo "rc $?" >> $o/san-$name-$tool.txt ) & }
san memcheck cuda_weighted weighted
san racecheck cuda_weighted weighted cuda_weighted_fixed_point cuda_2d_weighted cuda_weighted_and_2d
san synccheck cuda_weighted weighted cuda_weighted_and_2d cuda_2d_counts
san memcheck cuda_histogram hist cuda_matches_reference_f64 cuda_f32_estimate
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED|failed" $o/test-*.txt $o/san-*.txt | sed 's@/tmp/o/@@' | head -50
tar czf "${OUT:-gpu-out}/call4.tgz" -C $o .
t done
