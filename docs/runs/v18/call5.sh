#!/usr/bin/env bash
# Call 5: exact sums with a thread's same-digit run summed in registers: the reduction tests
# (exact sums among them), compute-sanitizer over the exact tests, the bench before (bin9) and
# after (bin10) alternately, ncu of the new f32 and f64 exact kernels at 2^28.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/info.txt"
t tests
for b in .gpu/tests10/*; do
  name=$(basename "$b" | sed 's/-[0-9a-f]*$//')
  ( TALLY_SKIP_HUGE=1 timeout 200 "$b" --skip more_than > "$out/test-$name.txt" 2>&1; echo "rc $?" >> "$out/test-$name.txt" ) &
done
s() { tool=$1; shift; ( TALLY_SKIP_HUGE=1 TALLY_SMALL=1 timeout 200 compute-sanitizer --tool $tool --error-exitcode 99 $(ls .gpu/tests10/cuda_reduce-*) --test-threads=1 "$@" > "$out/san-$tool.txt" 2>&1; echo "rc $?" >> "$out/san-$tool.txt" ) & }
s memcheck gpu_exact gpu_f32 gpu_f64 gpu_poisoned
s racecheck gpu_exact
s synccheck gpu_exact
wait
grep -H -E "^test result|rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED" "$out"/test-*.txt "$out"/san-*.txt
t bench
for round in 1 2; do
  for v in bin9 bin10; do
    echo "## $v round $round"
    timeout 60 .gpu/$v/tally bench reduce --backend cuda --log2-sizes 24,28 --dtypes f32,f64 --ops exact-sum,sum --reps 30 2>&1
  done
done > "$out/bench-exact-ab.txt"
grep -E "^##|exact|read bandwidth" "$out/bench-exact-ab.txt"
t ncu
timeout 90 ncu --section SpeedOfLight --section WarpStateStats --kernel-name tally_reduce_exact --launch-skip 3 --launch-count 2 \
  .gpu/bin10/tally bench reduce --backend cuda --log2-sizes 28 --dtypes f32,f64 --ops exact-sum --reps 3 > "$out/ncu-exact.txt" 2>&1
grep -E "tally_reduce_exact|Duration|DRAM Throughput|Compute \(SM\)|Warp Cycles Per Issued" "$out/ncu-exact.txt"
t done
tar czf "$out/logs.tgz" -C "$out" $(cd "$out" && ls *.txt)
