#!/usr/bin/env bash
# Session call 7: the committed build (bin6: reduce-by-key into wider outputs stages at most
# 56 KiB a tile by default). cuda_runs, memcheck over it; bench reduce-by-key's i64 case at the
# new default and at the old 8 rows (TALLY_COMPACT_VECS=8), alternating.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin6/tally.xz .gpu/tests6/*.xz
B=.gpu/bin6/tally
for round in 1 2; do
  timeout 60 $B bench reduce-by-key --backend cuda --log2-sizes 24,28 --reps 20 > $o/rbk-default-r$round.txt 2>&1
  echo "== default round $round"; grep -v "^#" $o/rbk-default-r$round.txt | tail -n +2
  TALLY_COMPACT_VECS=8 timeout 60 $B bench reduce-by-key --backend cuda --log2-sizes 24,28 --reps 20 --cases i64 > $o/rbk-vecs8-r$round.txt 2>&1
  echo "== 8 rows round $round"; grep -v "^#" $o/rbk-vecs8-r$round.txt | tail -n +2
done
TALLY_REQUIRE_GPU=1 timeout 200 .gpu/tests6/cuda_runs > $o/tests-cuda_runs.txt 2>&1; echo "rc $?" >> $o/tests-cuda_runs.txt
echo "cuda_runs: $(grep -E '^test result' $o/tests-cuda_runs.txt | tail -1) $(tail -1 $o/tests-cuda_runs.txt)"
grep -E "panicked|FAILED" $o/tests-cuda_runs.txt | head
TALLY_SMALL=1 TALLY_SKIP_HUGE=1 TALLY_REQUIRE_GPU=1 timeout 250 compute-sanitizer --tool memcheck --error-exitcode 99 .gpu/tests6/cuda_runs --test-threads=1 --skip gpu_more_than > $o/san-runs-memcheck.txt 2>&1; echo "rc $?" >> $o/san-runs-memcheck.txt
grep -E "ERROR SUMMARY|^rc|test result" $o/san-runs-memcheck.txt | tail -3
tar czf "${OUT:-gpu-out}/call7.tgz" -C $o .
