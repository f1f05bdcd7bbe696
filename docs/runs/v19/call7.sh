#!/usr/bin/env bash
# Session call 7: widening scans store each warp's row piece through shared memory (bin15)
# against bin14: scan benchmarks twice each, CUB/torch in the same call, ncu of i32 into i64,
# the scan tests (with the 2^31+ case) and compute-sanitizer over them.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
OLD=.gpu/bin14/tally; NEW=.gpu/bin15/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
t bench
for v in NEW OLD NEW OLD; do
  echo "# $v" >> "$out/bench-scan.txt"
  ${!v} bench scan --backend cuda --log2-sizes 24,28 --reps 20 2>&1 | grep -v "^case" >> "$out/bench-scan.txt"
done
cat "$out/bench-scan.txt"
t peers
bash .gpu/peers/run-peers-primitives.sh > "$out/peers-primitives.txt" 2>&1; grep -i -E "scan|cumsum|memcpy" "$out/peers-primitives.txt"
t ncu
python3 -c "
import numpy as np
np.save('/tmp/i32.npy', np.random.default_rng(1).integers(-1000, 1000, 1 << 28, dtype=np.int32))"
timeout 100 ncu --set full --kernel-name tally_scan --launch-count 1 $NEW scan /tmp/i32.npy --out /tmp/o.npy --backend cuda > "$out/ncu-scan-i32-i64.txt" 2>&1
grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|Executed Instructions  |excessive" "$out/ncu-scan-i32-i64.txt"
t tests
sc=$(ls .gpu/tests15/cuda_scan-*)
( TALLY_REQUIRE_GPU=1 timeout 250 $sc > "$out/test-scan.txt" 2>&1; echo "rc $?" >> "$out/test-scan.txt" ) &
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 TALLY_SMALL=1 timeout 280 compute-sanitizer --tool $tool --error-exitcode 99 $sc --test-threads=1 --skip more_than > "$out/san-$tool.txt" 2>&1; echo "rc $?" >> "$out/san-$tool.txt" ) &
done
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED" "$out"/test-*.txt "$out"/san-*.txt
t done
