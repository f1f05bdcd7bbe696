#!/usr/bin/env bash
# v33 call 3 (one GPU): the in-order partition's reversal through shared memory, every access
# upwards (TALLY_REVERSE_STAGED=1, the new default), against call 2's direct reversal (=0),
# alternating; ncu of both; cuda_select and the sanitizers over the partition tests.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o3; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call3.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b3/*.xz
B=.gpu/b3/tally
export CUDA_VISIBLE_DEVICES=0
t tests
TALLY_REQUIRE_GPU=1 timeout 200 .gpu/b3/cuda_select > $o/tests-select.txt 2>&1; echo "rc $?" >> $o/tests-select.txt
for tool in memcheck racecheck synccheck; do
  TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 70 compute-sanitizer --tool $tool --error-exitcode 99 \
    .gpu/b3/cuda_select --test-threads=1 gpu_plans_run_many_times gpu_poisoned > $o/san-select-$tool.txt 2>&1; echo "rc $?" >> $o/san-select-$tool.txt
done
for f in $o/tests-*.txt $o/san-*.txt; do
  echo "$(basename $f): $(tail -1 $f) | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1) | $(grep -E '^test result' $f | tail -1 | cut -c1-70)"
done | tee $o/summary.txt
grep -E "FAILED|panicked" $o/tests-*.txt | head
t ab
for r in 1 2; do
  for v in "1 8" "1 4" "0 8"; do
    set -- $v
    echo "# round $r staged $1 pairs $2"
    TALLY_NVRTC_OPTIONS="-DTALLY_REVERSE_STAGED=$1 -DTALLY_REVERSE_PAIRS=$2" timeout 60 $B bench select --backend cuda --log2-sizes 28 --reps 20 --cases "partition 50%,partition rev 50%" 2>&1
  done
done > $o/bench-ab.txt
grep -E "^#|partition" $o/bench-ab.txt
t ncu
for st in 1 0; do
  TALLY_NVRTC_OPTIONS="-DTALLY_REVERSE_STAGED=$st" timeout 90 ncu --kernel-name tally_select_reverse --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
    $B bench select --backend cuda --log2-sizes 28 --reps 2 --cases "partition 50%" > $o/ncu-reverse-staged$st.txt 2>&1
  grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Achieved Occupancy|Registers|Elapsed Cycles" $o/ncu-reverse-staged$st.txt | head -12
done
t done
