#!/usr/bin/env bash
# v32 call 8 (two GPUs), the build committed after the review: the device-set tests (Rust, two
# GPUs required; Python's DeviceSet tests), the read-back tests, the histogram's posting tests
# and its 2^32-sample test (64-bit counters read from the post), and bench multi once.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o8; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call8.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)/lib
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$nccl NCCL_NVLS_ENABLE=0 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/t8/tally.xz
site=/tmp/tally-site; rm -rf $site
python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/wheels/tally-*.whl > $o/py-install.txt 2>&1
( CUDA_VISIBLE_DEVICES=1 TALLY_REQUIRE_GPU=1 timeout 200 .gpu/t8/cuda_histogram post cuda_more_than_2_pow_32 > $o/test-cuda_histogram.txt 2>&1; echo "rc $?" >> $o/test-cuda_histogram.txt ) &
TALLY_REQUIRE_GPU=2 timeout 100 .gpu/t8/cuda_multi > $o/test-cuda_multi.txt 2>&1; echo "rc $?" >> $o/test-cuda_multi.txt
CUDA_VISIBLE_DEVICES=0 TALLY_REQUIRE_GPU=1 timeout 60 .gpu/t8/cuda_external > $o/test-cuda_external.txt 2>&1; echo "rc $?" >> $o/test-cuda_external.txt
tests=$(realpath crates/tally-python/tests)
(cd /tmp && PYTHONPATH=$site TALLY_REQUIRE_GPU=2 timeout 120 python3 -m pytest -p no:cacheprovider -q -k device_set "$tests/test_gpu.py" > $o/py-test-gpu.txt 2>&1; echo "rc $?" >> $o/py-test-gpu.txt)
wait
timeout 90 .gpu/t8/tally bench multi --devices all --reps 9 > $o/bench-multi.txt 2>&1; echo "rc $?" >> $o/bench-multi.txt
cat $o/bench-multi.txt
for f in $o/test-*.txt $o/py-test-gpu.txt; do echo "$(basename $f): $(grep -E '^test result|passed|failed' $f | tail -1 | cut -c1-70) | $(tail -1 $f)"; done | tee $o/summary.txt
