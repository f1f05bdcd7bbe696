#!/usr/bin/env bash
# Session call 2 (bin37): f32 histograms binned by the estimate a vector at a time (histogram.cu,
# TALLY_HIST_ESTIMATE=0 the kernels before), alternating in one process each, with i32 beside;
# the cleaned-up exact sums once more; ncu of the new f32 histogram kernel; then the histogram,
# half, reduce and property tests, and compute-sanitizer over the f32 histogram and exact tests.
# Everything lands in one archive (at most 8 files come back).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
T=.gpu/bin37/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
t hist-ab
h() { echo "# $1"; TALLY_NVRTC_OPTIONS="$2" $T bench hist --dtypes $3 --bins 256,4096,16384 --distributions uniform,hot90,zipf --strategies auto,block-shared,warp-private --reps 20 2>&1; }
for round in 1 2; do
  h "new" "" i32,f32,f16
  h "old (TALLY_HIST_ESTIMATE=0)" "-DTALLY_HIST_ESTIMATE=0" f32,f16
done > $o/bench-hist-ab.txt
grep -E "^#|uniform +256 |uniform +4096 " $o/bench-hist-ab.txt
t exact
$T bench reduce --backend cuda --log2-sizes 20,24,28 --dtypes f32,f64,f16 --ops exact-sum,sum --reps 30 > $o/bench-exact.txt 2>&1
cat $o/bench-exact.txt
t ncu
M=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active
for c in "new|" "old|-DTALLY_HIST_ESTIMATE=0"; do
  IFS='|' read name opt <<< "$c"
  echo "# ncu f32 256 block-shared $name"
  TALLY_NVRTC_OPTIONS="$opt" timeout 150 ncu --kernel-name tally_histogram --launch-skip 3 --launch-count 1 --section WarpStateStats --section Occupancy --metrics $M \
    $T bench hist --dtypes f32 --bins 256 --distributions uniform --strategies block-shared --reps 2 2>&1 | grep -E "gpu__|smsp__|sm__|dram__|Achieved Occ|Warp Cycles Per Issued|Registers Per|Block Limit Reg"
done > $o/ncu-hist.txt
cat $o/ncu-hist.txt
t tests
B=.gpu/tests37
for n in cuda_histogram cuda_half cuda_reduce cuda_properties; do
  ( TALLY_REQUIRE_GPU=1 timeout 420 $B/$n-* > $o/test-$n.txt 2>&1; echo "rc $?" >> $o/test-$n.txt ) &
done
san() { local tool=$1 bin=$2 name=$3; shift 3
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 TALLY_SKIP_HUGE=1 timeout 400 compute-sanitizer --tool $tool --error-exitcode 99 $B/$bin-* --test-threads=1 "$@" > $o/san-$name-$tool.txt 2>&1; echo "rc $?" >> $o/san-$name-$tool.txt ) & }
san memcheck cuda_histogram hist cuda_matches_reference_f32 cuda_f32_estimate cuda_skewed
san racecheck cuda_histogram hist cuda_matches_reference_f32 cuda_f32_estimate
san synccheck cuda_histogram hist cuda_f32_estimate
san memcheck cuda_half half
san memcheck cuda_reduce reduce gpu_exact gpu_f32_ops gpu_f64_ops gpu_misaligned
san racecheck cuda_reduce reduce gpu_exact
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED|failed" $o/test-*.txt $o/san-*.txt | sed 's@/tmp/o/@@' | head -50
tar czf "${OUT:-gpu-out}/call2.tgz" -C $o .
t done
