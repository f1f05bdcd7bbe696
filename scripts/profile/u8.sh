#!/usr/bin/env bash
# ncu over tally's and CUB's 256-bin u8 histograms (2^26 uniform samples): where does u8 go?
# Run on the GPU host from the project root, with the bundle in .gpu/. Writes to $OUT.
set -u
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
sections="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section InstructionStats --section Occupancy"
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_u8 scripts/profile/cub_u8.cu
ncu --clock-control none -k regex:Sweep --launch-skip 1 --launch-count 1 $sections /tmp/cub_u8 > "$out/ncu-cub-u8.txt" 2>&1
echo "cub: exit $?"
ncu --clock-control none -k regex:tally_histogram --launch-skip 2 --launch-count 1 $sections \
  .gpu/bin/tally bench hist --dtypes u8 --bins 256 --distributions uniform --strategies block-shared --reps 1 --size 67108864 > "$out/ncu-tally-u8.txt" 2>&1
echo "tally: exit $?"
for f in "$out"/ncu-*.txt; do
  echo "== $f"
  grep -E "Duration|Memory Throughput|Compute \(SM\) Throughput|Executed Ipc Active|Achieved Occupancy|Registers Per|Block Size|Grid Size|Stall|Issue Slots Busy|Shared Memory|Bank|Executed Instructions  " "$f" | head -40
done
