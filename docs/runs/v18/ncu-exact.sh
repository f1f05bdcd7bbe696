#!/usr/bin/env bash
# Call 6: ncu of the exact f64 sum (the new kernel) at 2^28: where its time goes.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
timeout 100 ncu --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy \
  --kernel-name tally_reduce_exact --launch-skip 3 --launch-count 1 \
  .gpu/bin10/tally bench reduce --backend cuda --log2-sizes 28 --dtypes f64 --ops exact-sum --reps 3 > "$out/ncu-exact-f64.txt" 2>&1
timeout 100 ncu --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy \
  --kernel-name tally_reduce_exact --launch-skip 3 --launch-count 1 \
  .gpu/bin10/tally bench reduce --backend cuda --log2-sizes 28 --dtypes f32 --ops exact-sum --reps 3 > "$out/ncu-exact-f32.txt" 2>&1
grep -E "Duration|DRAM Throughput|Compute \(SM\)|Issue Slots Busy|Executed Ipc|Pipe|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|stalled|Stall|cycles being" "$out"/ncu-exact-*.txt | cut -c1-220
