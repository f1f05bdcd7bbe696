#!/usr/bin/env bash
# v39 call 2: the reductions' finish (the last block's partial loads together, the post from
# shared memory, only the op's fields merged) with call 1's f32 min/max: tally bench reduce
# twice, CUB from the same GPU, ncu at 2^24 (against call 1's) and of both sums at 2^28; the
# Python bench against the Rust CLI (issue 16's 2%, warm-up before each case). Beside it on the
# second GPU: the reduce, streaming and Python GPU tests, compute-sanitizer; then the device-set
# tests on both GPUs. On a one-GPU host the checks follow the benches (racecheck and the
# device-set tests left out).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o2; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call2.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
gpus=$(nvidia-smi -L | wc -l)
bash scripts/unpack-xz.sh .gpu/b2/*.xz
t=.gpu/b2 B=$(realpath .gpu/b2/tally)
site=/tmp/py; rm -rf $site
python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/wheel/tally-*.whl > $o/pip.txt 2>&1
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY|RACECHECK SUMMARY| passed| failed" $o/$name.txt | tr '\n' ' ')"
}
checks() {
  export CUDA_VISIBLE_DEVICES=$((gpus > 1 ? 1 : 0))
  run test-reduce 150 $t/cuda_reduce --test-threads=2
  run test-stream 150 $t/cuda_stream --test-threads=2
  for tool in memcheck synccheck; do
    TALLY_SMALL=1 run sanitizer-reduce-$tool 100 compute-sanitizer --tool $tool $t/cuda_reduce \
      gpu_f32_extrema gpu_nan_placement gpu_f32_ops gpu_i32_ops gpu_misaligned gpu_poisoned gpu_posted
  done
  [ "$gpus" -gt 1 ] && TALLY_SMALL=1 run sanitizer-reduce-racecheck 200 compute-sanitizer --tool racecheck \
    $t/cuda_reduce gpu_f32_extrema gpu_poisoned
  tests=$(realpath crates/tally-python/tests)
  (cd /tmp && PYTHONPATH=$site run python-test-gpu 200 python3 -m pytest -p no:cacheprovider -q "$tests/test_gpu.py")
}
if [ "$gpus" -gt 1 ]; then checks > $o/checks-summary.txt 2>&1 & san=$!; else san=; fi
export CUDA_VISIBLE_DEVICES=0
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_reduce scripts/peers/cub_reduce.cu > $o/nvcc.txt 2>&1
for round in 1 2; do
  echo "== round $round"
  timeout 120 $B bench reduce --backend cuda --log2-sizes 20,24,28 --reps 30 2>&1
done > $o/bench-reduce.txt 2>&1
grep -E "^== |268435456|16777216|1048576 " $o/bench-reduce.txt | grep -v '^#'
/tmp/cub_reduce > $o/cub-reduce.txt 2>&1; echo "rc $?" >> $o/cub-reduce.txt
cat $o/cub-reduce.txt
echo "elapsed $SECONDS s"
N="ncu --section WarpStateStats --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --page raw"
for op in sum min; do
  timeout 90 $N --kernel-name tally_reduce --launch-skip 3 --launch-count 1 $B bench reduce --backend cuda --log2-sizes 24 --dtypes f32 --ops $op --reps 5 > $o/ncu-tally-$op-24.txt 2>&1
done
timeout 90 $N --kernel-name tally_reduce --launch-skip 3 --launch-count 1 $B bench reduce --backend cuda --log2-sizes 28 --dtypes f32 --ops sum --reps 5 > $o/ncu-tally-sum-28.txt 2>&1
timeout 90 $N --kernel-name tally_reduce --launch-skip 3 --launch-count 1 $B bench reduce --backend cuda --log2-sizes 20 --dtypes f32 --ops sum --reps 5 > $o/ncu-tally-sum-20.txt 2>&1
timeout 90 $N --kernel-name regex:DeviceReduce --launch-skip 4 --launch-count 2 /tmp/cub_reduce sum-f32 20 4 > $o/ncu-cub-sum-20.txt 2>&1
timeout 90 $N --kernel-name regex:DeviceReduce --launch-skip 4 --launch-count 2 /tmp/cub_reduce sum-f32 28 4 > $o/ncu-cub-sum-28.txt 2>&1
for f in $o/ncu-*.txt; do echo "${f##*/}: $(grep -E "gpu__time_duration.sum|sm__cycles_active.(avg|max|min) |launch__grid_size |launch__registers_per_thread |dram__throughput.avg.pct_of_peak_sustained_elapsed" $f | awk '{print $1, $(NF)}' | tr '\n' ' ')"; done
echo "elapsed $SECONDS s"
( cd /tmp && PYTHONPATH=$site timeout 240 python3 -m tally.bench --log2 28 --reps 10 --rust $B > $o/python-bench.txt 2>&1; echo "rc $?" >> $o/python-bench.txt )
sed -n '/python ms/,$p' $o/python-bench.txt
head -8 $o/python-bench.txt
echo "elapsed $SECONDS s"
[ -z "$san" ] && checks > $o/checks-summary.txt 2>&1
[ -n "$san" ] && wait $san
cat $o/checks-summary.txt
unset CUDA_VISIBLE_DEVICES
[ "$gpus" -gt 1 ] && run test-multi 120 $t/cuda_multi --test-threads=1
echo "elapsed $SECONDS s"
