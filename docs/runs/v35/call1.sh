#!/usr/bin/env bash
# v35 call 1 (one GPU): the tests of this build (b1): reduce-by-key's checked sums keep their
# result words in the kept tile states; detached set plans; the Python package keeps a set's
# plans for resident shards. compute-sanitizer over the new run test.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o1; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call1.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b1/*.xz
nccl=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])')/lib
t=.gpu/b1
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|passed|failed|rc |ERROR SUMMARY|RACECHECK SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
# The Python package's GPU tests (a wheel of the same source) beside the rest, from /tmp so that
# the source tree's package does not shadow the installed one.
site=/tmp/py; tests=$PWD/crates/tally-python/tests
python3 -m pip install --quiet --no-index --no-deps --target $site $t/tally-*.whl > $o/pip.txt 2>&1
( cd /tmp && PYTHONPATH=$site LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH timeout 420 python3 -m pytest -p no:cacheprovider -q "$tests/test_gpu.py" > $o/python-gpu.txt 2>&1; echo "rc $?" >> $o/python-gpu.txt ) &
run test-runs-kept 150 $t/cuda_runs kept
run test-runs-overflow 60 $t/cuda_runs overflow
run test-scan-kept 120 $t/cuda_scan kept
run test-select-kept 120 $t/cuda_select kept
LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH run test-multi 120 $t/cuda_multi detached kept_set a_set_of_one
for tool in memcheck racecheck synccheck; do
  TALLY_SMALL=1 run sanitizer-$tool 150 compute-sanitizer --tool $tool $t/cuda_runs gpu_kept_checked_sums
done
wait
grep -E "passed|failed|rc " $o/python-gpu.txt | tail -3
