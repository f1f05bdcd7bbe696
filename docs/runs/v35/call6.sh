#!/usr/bin/env bash
# v35 call 6 (one GPU): after a review of the small shapes (b5): cuda_scan whole (its kept-plan
# test now also keeps an f32 sum by key and a widening sum short enough for its small shape; its
# sizes cover the large tiles' edges past each switch), compute-sanitizer over that test at
# small sizes, cuda_external and cuda_multi (widening sums of few elements, carries), and the
# Python package's GPU tests (a wheel of the same source).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o6; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call6.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b5/*.xz
nccl=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])')/lib
t=.gpu/b5
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY|RACECHECK SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
site=/tmp/py; tests=$PWD/crates/tally-python/tests
if ls $t/tally-*.whl > /dev/null 2>&1; then
  python3 -m pip install --quiet --no-index --no-deps --target $site $t/tally-*.whl > $o/pip.txt 2>&1
  ( cd /tmp && PYTHONPATH=$site LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH timeout 420 python3 -m pytest -p no:cacheprovider -q "$tests/test_gpu.py" > $o/python-gpu.txt 2>&1; echo "rc $?" >> $o/python-gpu.txt ) &
fi
run test-scan 300 $t/cuda_scan --test-threads=4
run test-external 200 $t/cuda_external
LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH run test-multi 200 $t/cuda_multi
for tool in memcheck racecheck synccheck; do
  TALLY_SMALL=1 run sanitizer-$tool 150 compute-sanitizer --tool $tool $t/cuda_scan gpu_kept_plans
done
wait
[ -f $o/python-gpu.txt ] && grep -E "passed|failed|rc " $o/python-gpu.txt | tail -3
