#!/usr/bin/env bash
# Call 1: every CUDA test binary of the build (huge cases after, alone), and compute-sanitizer
# over the changed paths (read-back words, widened counters, histogram outliers, reductions).
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
rm -rf .gpu/tests .gpu/bin; tar xJf .gpu/bundle7.tar.xz -C .gpu
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/info.txt"
.gpu/bin/tally info >> "$out/info.txt" 2>&1
t tests
for b in .gpu/tests/cuda_*; do
  name=$(basename "$b" | sed 's/-[0-9a-f]*$//')
  case $name in cuda_multi|cuda_properties_runs|cuda_properties_select) continue;; esac
  ( TALLY_SKIP_HUGE=1 timeout 320 "$b" --skip more_than > "$out/test-$name.txt" 2>&1; echo "rc $?" >> "$out/test-$name.txt" ) &
done
s() { tool=$1; b=$2; shift 2; ( TALLY_SKIP_HUGE=1 TALLY_SMALL=1 timeout 320 compute-sanitizer --tool $tool --error-exitcode 99 $(ls .gpu/tests/$b-*) --test-threads=1 "$@" > "$out/san-$tool-$b.txt" 2>&1; echo "rc $?" >> "$out/san-$tool-$b.txt" ) & }
s memcheck cuda_external
s racecheck cuda_external
s synccheck cuda_external
s memcheck cuda_reduce
s memcheck cuda_histogram cuda_matches_reference cuda_skewed cuda_bins
wait
t huge
( timeout 120 .gpu/tests/cuda_histogram-* more_than --test-threads=1 > "$out/test-huge-histogram.txt" 2>&1; echo "rc $?" >> "$out/test-huge-histogram.txt" )
t done
grep -H -E "^test result|rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED" "$out"/test-*.txt "$out"/san-*.txt
tar czf "$out/logs.tgz" -C "$out" $(cd "$out" && ls *.txt)
