#!/usr/bin/env bash
# Session call 4: the Python package with image_histogram (wheel of this build): the GPU tests
# and the CPU tests; then the partition's unit size at 1M and 16M bins (bin50, NVRTC defines),
# alternately twice.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
site=/tmp/tally-site; rm -rf $site
python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/wheels/tally-*.whl > $o/install.log 2>&1
export PYTHONPATH=$site
tests=$(realpath crates/tally-python/tests)
(cd $o && TALLY_REQUIRE_GPU=1 timeout 300 python3 -m pytest -p no:cacheprovider -q "$tests/test_gpu.py") > $o/test_gpu.log 2>&1; echo "rc $?" >> $o/test_gpu.log
(cd $o && timeout 200 python3 -m pytest -p no:cacheprovider -q "$tests"/test_cpu.py -k image) > $o/test_cpu.log 2>&1; echo "rc $?" >> $o/test_cpu.log
tail -3 $o/test_gpu.log $o/test_cpu.log
S="bench hist --backend cuda --dtypes i32 --bins 1048576,16777216 --distributions uniform,zipf --strategies partition --reps 10"
for r in 1 2; do
  for d in "" "-DTALLY_PARTITION_UNIT_KEYS=16384" "-DTALLY_PARTITION_UNIT_KEYS=4096"; do
    echo "== run $r [$d]" >> $o/sweep.txt
    TALLY_NVRTC_OPTIONS="$d" timeout 60 .gpu/bin50/tally $S >> $o/sweep.txt 2>&1
  done
done
grep -E "==|partition  " $o/sweep.txt
tar czf "${OUT:-gpu-out}/call4.tgz" -C $o .
