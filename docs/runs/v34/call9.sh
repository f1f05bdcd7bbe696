#!/usr/bin/env bash
# v34 call 9 (one GPU): the committed build (b54edf6, after the last review): the kept-plan tests
# of the three look-back primitives, cuda_scan whole, and the Python package's GPU tests (a
# wheel of the same source; its calls keep plans).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o9; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call9.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b9/*.xz
site=/tmp/tally-site; rm -rf $site
python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/wheels/tally-*.whl > $o/py-install.txt 2>&1
tests=$(realpath crates/tally-python/tests)
( cd /tmp && PYTHONPATH=$site timeout 300 python3 -m pytest -p no:cacheprovider -q "$tests/test_gpu.py" > $o/py-test-gpu.txt 2>&1; echo "rc $?" >> $o/py-test-gpu.txt ) &
for x in cuda_select cuda_runs; do
  timeout 100 .gpu/b9/$x kept_plans > $o/test-$x-kept.txt 2>&1; echo "rc $?" >> $o/test-$x-kept.txt
done
timeout 200 .gpu/b9/cuda_scan --test-threads=2 > $o/test-cuda_scan.txt 2>&1; echo "rc $?" >> $o/test-cuda_scan.txt
wait
for f in $o/test-*.txt $o/py-test-gpu.txt; do
  echo "$(basename $f): $(tail -1 $f) | $(grep -E '^test result|passed|failed' $f | tail -1 | cut -c1-80)"
done | tee $o/summary.txt
grep -E "FAILED|panicked" $o/test-*.txt $o/py-test-gpu.txt | head
