#!/usr/bin/env bash
# v34 call 3 (one GPU): compute-sanitizer (memcheck, racecheck, synccheck) over the kept-plan
# tests of b2 at TALLY_SMALL=1; the Python package's GPU tests with a wheel of the same source
# (its calls keep plans, so they run the kernels that clear the next launch's states).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o3; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call3.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b2/cuda_*.xz
site=/tmp/tally-site; rm -rf $site
python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/wheels/tally-*.whl > $o/py-install.txt 2>&1
tests=$(realpath crates/tally-python/tests)
( cd /tmp && PYTHONPATH=$site timeout 300 python3 -m pytest -p no:cacheprovider -q "$tests/test_gpu.py" > $o/py-test-gpu.txt 2>&1; echo "rc $?" >> $o/py-test-gpu.txt ) &
for x in cuda_scan cuda_select cuda_runs; do
  ( for tool in memcheck racecheck synccheck; do
      TALLY_SMALL=1 timeout 150 compute-sanitizer --tool $tool --error-exitcode 99 \
        .gpu/b2/$x --test-threads=1 kept_plans > $o/san-$x-$tool.txt 2>&1; echo "rc $?" >> $o/san-$x-$tool.txt
    done ) &
done
wait
for f in $o/san-*.txt $o/py-test-gpu.txt; do
  echo "$(basename $f): $(tail -1 $f) | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1) | $(grep -E '^test result|passed|failed' $f | tail -1 | cut -c1-80)"
done | tee $o/summary.txt
grep -E "FAILED|panicked|Error" $o/san-*.txt $o/py-test-gpu.txt | head -20
