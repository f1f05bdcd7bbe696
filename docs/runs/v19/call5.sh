#!/usr/bin/env bash
# Session call 5: the select tests of bin14 (default, other shapes, the 2^31+ case) and
# compute-sanitizer memcheck, racecheck and synccheck over them.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
sel=$(ls .gpu/tests14/cuda_select-*); props=$(ls .gpu/tests14/cuda_properties_select-*)
t tests
( TALLY_REQUIRE_GPU=1 timeout 250 $sel > "$out/test-select.txt" 2>&1; echo "rc $?" >> "$out/test-select.txt" ) &
( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 250 $props > "$out/test-props.txt" 2>&1; echo "rc $?" >> "$out/test-props.txt" ) &
( TALLY_COMPACT_THREADS=256 TALLY_COMPACT_VECS=4 TALLY_COMPACT_MIN_BLOCKS=3 TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 250 $sel --skip more_than > "$out/test-select-256x4x3.txt" 2>&1; echo "rc $?" >> "$out/test-select-256x4x3.txt" ) &
( TALLY_COMPACT_THREADS=64 TALLY_COMPACT_VECS=2 TALLY_COMPACT_MIN_BLOCKS=8 TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 250 $sel --skip more_than > "$out/test-select-64x2x8.txt" 2>&1; echo "rc $?" >> "$out/test-select-64x2x8.txt" ) &
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 TALLY_SMALL=1 timeout 300 compute-sanitizer --tool $tool --error-exitcode 99 $sel --test-threads=1 --skip more_than > "$out/san-$tool.txt" 2>&1; echo "rc $?" >> "$out/san-$tool.txt" ) &
done
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED" "$out"/test-*.txt "$out"/san-*.txt
t done
