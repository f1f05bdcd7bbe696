#!/usr/bin/env bash
# v39 call 3: the Python histogram on the posted launch (outliers posted, counts widened by a
# kernel into the caller's array, not waited for): the Python bench against the Rust CLI of the
# same build (issue 16's 2%); the tests of the widening (external memory, past 2^32 samples),
# memcheck over it, the reduce tests and the Python GPU tests; ncu of tally's and CUB's f32 argmin
# at 2^24 (0.89x CUB in call 2).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o3; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call3.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
gpus=$(nvidia-smi -L | wc -l)
bash scripts/unpack-xz.sh .gpu/b3/*.xz
t=.gpu/b3 B=$(realpath .gpu/b3/tally)
site=/tmp/py; rm -rf $site
python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/wheel/tally-*.whl > $o/pip.txt 2>&1
tests=$(realpath crates/tally-python/tests)
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY| passed| failed" $o/$name.txt | tr '\n' ' ')"
}
checks() {
  export CUDA_VISIBLE_DEVICES=$((gpus > 1 ? 1 : 0))
  run test-reduce 100 $t/cuda_reduce --test-threads=2
  run test-external 100 $t/cuda_external
  run sanitizer-external-memcheck 100 compute-sanitizer --tool memcheck $t/cuda_external histogram_counters
  (cd /tmp && PYTHONPATH=$site run python-test-gpu-histogram 150 python3 -m pytest -p no:cacheprovider -q \
    -k "histogram or bincount or stream" "$tests/test_gpu.py")
  [ $SECONDS -lt 440 ] && run test-histogram-2-pow-32 120 $t/cuda_histogram cuda_more_than_2_pow_32_samples
  [ $SECONDS -lt 300 ] && (cd /tmp && PYTHONPATH=$site run python-test-gpu 250 python3 -m pytest -p no:cacheprovider -q "$tests/test_gpu.py")
}
if [ "$gpus" -gt 1 ]; then checks > $o/checks-summary.txt 2>&1 & san=$!; else san=; fi
export CUDA_VISIBLE_DEVICES=0
( cd /tmp && PYTHONPATH=$site timeout 240 python3 -m tally.bench --log2 28 --reps 10 --rust $B > $o/python-bench.txt 2>&1; echo "rc $?" >> $o/python-bench.txt )
sed -n '/python ms/,$p' $o/python-bench.txt
head -24 $o/python-bench.txt
[ $SECONDS -lt 200 ] || [ -n "$san" ] && {
N="ncu --section WarpStateStats --section SpeedOfLight --section Occupancy --section LaunchStats --page raw"
timeout 90 $N --kernel-name tally_reduce --launch-skip 3 --launch-count 1 $B bench reduce --backend cuda --log2-sizes 24 --dtypes f32 --ops argmin --reps 5 > $o/ncu-tally-argmin-24.txt 2>&1
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_reduce scripts/peers/cub_reduce.cu > $o/nvcc.txt 2>&1
timeout 90 $N --kernel-name regex:DeviceReduce --launch-skip 4 --launch-count 2 /tmp/cub_reduce argmin-f32 24 4 > $o/ncu-cub-argmin-24.txt 2>&1
for f in $o/ncu-*.txt; do echo "${f##*/}: $(grep -E "gpu__time_duration.sum|sm__cycles_active.(avg|max) |launch__grid_size |launch__registers_per_thread |smsp__inst_executed.sum |smsp__average_warps_issue_stalled_(long_scoreboard|barrier)_per_issue_active" $f | awk '{print $1, $(NF)}' | tr '\n' ' ')"; done
}
echo "elapsed $SECONDS s"
[ -z "$san" ] && checks > $o/checks-summary.txt 2>&1
[ -n "$san" ] && wait $san
cat $o/checks-summary.txt
echo "elapsed $SECONDS s"
