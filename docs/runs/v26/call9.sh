#!/usr/bin/env bash
# Session call 9: the final build (bin8: runs.cu without the losing experiment switch, the
# bench's reduce-by-key helper sharing the bench's timer). cuda_runs; bench reduce-by-key;
# compute-sanitizer memcheck and racecheck over cuda_runs (TALLY_SMALL, the 2^31-key case out).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin8/tally.xz .gpu/tests8/*.xz
TALLY_REQUIRE_GPU=1 timeout 120 .gpu/tests8/cuda_runs > $o/tests-cuda_runs.txt 2>&1; echo "rc $?" >> $o/tests-cuda_runs.txt
echo "cuda_runs: $(grep -E '^test result' $o/tests-cuda_runs.txt | tail -1) $(tail -1 $o/tests-cuda_runs.txt)"
timeout 90 .gpu/bin8/tally bench reduce-by-key --backend cuda --log2-sizes 24,28 --reps 20 > $o/bench-rbk.txt 2>&1; echo "rc $?" >> $o/bench-rbk.txt
cat $o/bench-rbk.txt
export TALLY_SMALL=1 TALLY_SKIP_HUGE=1 TALLY_REQUIRE_GPU=1
for tool in memcheck racecheck; do
  ( timeout 330 compute-sanitizer --tool $tool --error-exitcode 99 .gpu/tests8/cuda_runs --test-threads=1 --skip gpu_more_than > $o/san-runs-$tool.txt 2>&1; echo "rc $?" >> $o/san-runs-$tool.txt ) &
done
wait
for f in $o/san-*.txt; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^rc|test result" $f | tail -3; done
tar czf "${OUT:-gpu-out}/call9.tgz" -C $o .
