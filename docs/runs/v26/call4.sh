#!/usr/bin/env bash
# Session call 4: the committed build (bin4: the review's fixes: lane 0 fences again after the
# warp's barrier, settled read-backs go back to the pool without waiting). bench reduce of bin3
# and bin4 alternating; the CUDA tests of every path that reads results back; then, at once,
# compute-sanitizer over the reduce tests, memcheck over the run and read-back tests, and the
# Python package's GPU tests (the wheel of the same commit).
set -u
cd "$(dirname "$0")/../.."
root=$PWD
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin3/tally.xz .gpu/bin4/tally.xz .gpu/tests4/*.xz
T=.gpu/tests4
for round in 1 2; do
  for b in bin3 bin4; do
    timeout 60 .gpu/$b/tally bench reduce --backend cuda --log2-sizes 10,20,28 --dtypes f32,f64 --ops sum,exact-sum,argmin --reps 50 > $o/bench-reduce-$b-r$round.txt 2>&1
    echo "== $b round $round"; grep -v "^#" $o/bench-reduce-$b-r$round.txt
  done
done
for t in cuda_reduce cuda_external cuda_multi cuda_weighted cuda_runs cuda_stream; do
  TALLY_REQUIRE_GPU=1 timeout 200 $T/$t > $o/tests-$t.txt 2>&1; echo "rc $?" >> $o/tests-$t.txt
  echo "$t: $(grep -E '^test result' $o/tests-$t.txt | tail -1) $(tail -1 $o/tests-$t.txt)"
done
grep -E "panicked|FAILED" $o/tests-*.txt | head -20
(
  export TALLY_SMALL=1 TALLY_SKIP_HUGE=1 TALLY_REQUIRE_GPU=1
  for tool in memcheck racecheck synccheck; do
    ( timeout 300 compute-sanitizer --tool $tool --error-exitcode 99 $T/cuda_reduce --test-threads=1 > $o/san-reduce-$tool.txt 2>&1; echo "rc $?" >> $o/san-reduce-$tool.txt ) &
  done
  ( timeout 300 compute-sanitizer --tool memcheck --error-exitcode 99 $T/cuda_runs --test-threads=1 --skip gpu_more_than > $o/san-runs-memcheck.txt 2>&1; echo "rc $?" >> $o/san-runs-memcheck.txt ) &
  ( timeout 300 compute-sanitizer --tool memcheck --error-exitcode 99 $T/cuda_external --test-threads=1 > $o/san-external-memcheck.txt 2>&1; echo "rc $?" >> $o/san-external-memcheck.txt ) &
  wait
) &
rm -rf /tmp/tally-site
python3 -m pip install --quiet --no-index --no-deps --target /tmp/tally-site .gpu/wheels/tally-*.whl > $o/pip.txt 2>&1
( cd $o && PYTHONPATH=/tmp/tally-site TALLY_REQUIRE_GPU=1 timeout 280 python3 -m pytest -p no:cacheprovider -q $root/crates/tally-python/tests/test_gpu.py > $o/python-gpu.txt 2>&1; echo "rc $?" >> $o/python-gpu.txt )
tail -3 $o/python-gpu.txt
wait
for f in $o/san-*.txt; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^rc|test result" $f | tail -4; done
tar czf "${OUT:-gpu-out}/call4.tgz" -C $o .
