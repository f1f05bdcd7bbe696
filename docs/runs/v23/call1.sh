#!/usr/bin/env bash
# Session call 1: exact sums split from the float's bits (reduce.cu, bin36), A/B against the
# split they replace (TALLY_EXACT_F32_BITS=0, TALLY_EXACT_F64_BITS=0 and its CLASSIFY variants),
# alternating in one process each; ncu of each; the f32 and i32 histograms at 256 / 4096 bins
# with ncu of the block-shared kernel (issue 14's per-sample cost); then the reduce and select
# tests and compute-sanitizer over them.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
T=.gpu/bin36/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/info.txt"
t ab
r() { echo "# $1 $2"; TALLY_NVRTC_OPTIONS="$3" $T bench reduce --backend cuda --log2-sizes 24,28 --dtypes $1 --ops exact-sum,sum --reps 30 2>&1; }
for round in 1 2; do
  r f32 new ""
  r f32 old "-DTALLY_EXACT_F32_BITS=0"
  r f64 new ""
  r f64 old "-DTALLY_EXACT_F64_BITS=0"
  r f64 classify "-DTALLY_EXACT_F64_BITS=0 -DTALLY_EXACT_CLASSIFY=1"
  r f64 classify-signbranch "-DTALLY_EXACT_F64_BITS=0 -DTALLY_EXACT_CLASSIFY=1 -DTALLY_EXACT_SIGN_BRANCH=1"
done > "$out/bench-exact-ab.txt"
grep -E "^#|268435456" "$out/bench-exact-ab.txt"
t hist
$T bench hist --dtypes i32,f32 --bins 256,4096 --distributions uniform --strategies auto,block-shared,warp-private --reps 20 > "$out/bench-hist.txt" 2>&1
cat "$out/bench-hist.txt"
t ncu
M=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active
for c in "f32|new|" "f32|old|-DTALLY_EXACT_F32_BITS=0" "f64|new|" "f64|old|-DTALLY_EXACT_F64_BITS=0"; do
  IFS='|' read ty name opt <<< "$c"
  echo "# ncu $ty $name"
  TALLY_NVRTC_OPTIONS="$opt" timeout 120 ncu --kernel-name tally_reduce_exact --launch-skip 3 --launch-count 1 --metrics $M \
    $T bench reduce --backend cuda --log2-sizes 28 --dtypes $ty --ops exact-sum --reps 2 2>&1 | grep -E "tally_reduce_exact|gpu__|smsp__|sm__|dram__"
done > "$out/ncu-exact.txt" 2>&1
cat "$out/ncu-exact.txt"
for ty in f32 i32; do
  timeout 150 ncu --kernel-name tally_histogram --launch-skip 3 --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section WarpStateStats --section InstructionStats --section Occupancy --section SchedulerStats --metrics $M \
    $T bench hist --dtypes $ty --bins 256 --distributions uniform --strategies block-shared --reps 2 > "$out/ncu-hist-$ty.txt" 2>&1
done
grep -E "Duration|Issue Slots Busy|Executed Ipc A|inst_executed.sum|pipe_alu|pipe_fma|pipe_lsu|Achieved Occ|No Eligible" "$out"/ncu-hist-*.txt
# The histogram kernels' cache entries (key with its defines, and the CUBIN) for the SASS.
mkdir -p "$out/cache-hist" && grep -l "tally_histogram\|histogram.cu" /tmp/tally-cache/* 2>/dev/null | head -20 | xargs -r cp -t "$out/cache-hist"
t tests
R=$(ls .gpu/tests36/cuda_reduce-*); S=$(ls .gpu/tests36/cuda_select-*)
( TALLY_REQUIRE_GPU=1 timeout 300 $R > "$out/test-cuda_reduce.txt" 2>&1; echo "rc $?" >> "$out/test-cuda_reduce.txt" ) &
( TALLY_REQUIRE_GPU=1 timeout 300 $S > "$out/test-cuda_select.txt" 2>&1; echo "rc $?" >> "$out/test-cuda_select.txt" ) &
san() { local tool=$1 bin=$2 name=$3; shift 3
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 TALLY_SKIP_HUGE=1 timeout 280 compute-sanitizer --tool $tool --error-exitcode 99 $bin --test-threads=1 "$@" > "$out/san-$name-$tool.txt" 2>&1; echo "rc $?" >> "$out/san-$name-$tool.txt" ) & }
san memcheck $R reduce
san racecheck $R reduce gpu_f32_ops gpu_f64_ops gpu_exact gpu_poisoned
san synccheck $R reduce gpu_f32_ops gpu_exact
san memcheck $S select --skip gpu_more_than
san racecheck $S select gpu_f32_select gpu_u8_select gpu_f64_select gpu_poisoned
san synccheck $S select gpu_f32_select gpu_u8_select gpu_poisoned
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED|failed" "$out"/test-*.txt "$out"/san-*.txt | head -40
t done
