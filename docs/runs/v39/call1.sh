#!/usr/bin/env bash
# v39 call 1: the reductions' f32 min/max on the hardware's min/max (min and max no longer
# compiled as minmax) and the guarded last round of loads, against the v38 kernels built into
# the same binary (TALLY_EXPERIMENT_* defines); the reduce knobs (loads in flight, blocks per
# multiprocessor); CUB's DeviceReduce from the same GPU; ncu of tally's and CUB's sums and
# minima at 2^24; where a Python call of tally.sum spends its time at 2^10-2^28. Beside it on
# the second GPU: the reduce tests and compute-sanitizer over the new paths.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o1; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call1.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
gpus=$(nvidia-smi -L | wc -l)
bash scripts/unpack-xz.sh .gpu/b1/*.xz
t=.gpu/b1 B=.gpu/b1/tally
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY|RACECHECK SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
checks() {
  export CUDA_VISIBLE_DEVICES=$((gpus > 1 ? 1 : 0))
  run test-reduce 200 $t/cuda_reduce --test-threads=2
  for tool in memcheck racecheck synccheck; do
    TALLY_SMALL=1 run sanitizer-reduce-$tool 110 compute-sanitizer --tool $tool $t/cuda_reduce \
      gpu_f32_extrema gpu_nan_placement gpu_f32_ops gpu_i32_ops gpu_misaligned gpu_poisoned
  done
}
if [ "$gpus" -gt 1 ]; then checks > $o/checks-summary.txt 2>&1 & san=$!; else san=; fi
export CUDA_VISIBLE_DEVICES=0
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_reduce scripts/peers/cub_reduce.cu > $o/nvcc.txt 2>&1
OPS=sum,min,max,minmax,argmin,argmax
ab() { # label nvrtc-options
  echo "== $1"
  TALLY_NVRTC_OPTIONS="$2" timeout 60 $B bench reduce --backend cuda --log2-sizes 20,24,28 --dtypes f32 --ops $OPS --reps 30 2>&1 | grep -v '^#'
}
{
  echo "== default, every op"
  timeout 120 $B bench reduce --backend cuda --log2-sizes 20,24,28 --reps 30 2>&1
  ab "new (both)" ""
  ab "v38 (neither)" "-DTALLY_EXPERIMENT_F32_HW=0 -DTALLY_EXPERIMENT_GUARDED=0"
  ab "guarded round only" "-DTALLY_EXPERIMENT_F32_HW=0"
} > $o/bench-reduce.txt 2>&1
echo "elapsed $SECONDS s"
grep -E "^== |268435456|16777216" $o/bench-reduce.txt | grep -E "^==|f32 +(sum|min|max|minmax|argmin) " | head -80
/tmp/cub_reduce > $o/cub-reduce.txt 2>&1; echo "rc $?" >> $o/cub-reduce.txt
cat $o/cub-reduce.txt
N="ncu --section WarpStateStats --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --page raw"
timeout 120 $N --kernel-name tally_reduce --launch-skip 3 --launch-count 1 $B bench reduce --backend cuda --log2-sizes 24 --dtypes f32 --ops sum --reps 5 > $o/ncu-tally-sum-24.txt 2>&1
timeout 120 $N --kernel-name tally_reduce --launch-skip 3 --launch-count 1 $B bench reduce --backend cuda --log2-sizes 24 --dtypes f32 --ops min --reps 5 > $o/ncu-tally-min-24.txt 2>&1
timeout 120 $N --kernel-name regex:DeviceReduce --launch-skip 4 --launch-count 2 /tmp/cub_reduce sum-f32 24 4 > $o/ncu-cub-sum-24.txt 2>&1
timeout 120 $N --kernel-name regex:DeviceReduce --launch-skip 4 --launch-count 2 /tmp/cub_reduce min-f32 24 4 > $o/ncu-cub-min-24.txt 2>&1
for f in $o/ncu-*.txt; do echo "$f: $(grep -E "gpu__time_duration.sum|dram__throughput.avg.pct_of_peak_sustained_elapsed|launch__grid_size |launch__registers_per_thread " $f | awk '{print $1, $(NF)}' | tr '\n' ' ')"; done
site=/tmp/py; rm -rf $site
python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/wheel/tally-*.whl > $o/pip.txt 2>&1
PYTHONPATH=$site timeout 120 python3 scripts/profile/python_gap.py --reps 50 > $o/python-gap.txt 2>&1; echo "rc $?" >> $o/python-gap.txt
cat $o/python-gap.txt
timeout 30 $B bench reduce --backend cuda --log2-sizes 10,24,28 --dtypes f32 --ops sum --reps 30 > $o/bench-sum-e2e.txt 2>&1
cat $o/bench-sum-e2e.txt
if [ $SECONDS -lt 420 ]; then
for vecs in 2 4 8; do
  for blocks in 4 6 8; do
    echo "== vecs $vecs blocks $blocks"
    TALLY_REDUCE_VECS=$vecs TALLY_REDUCE_BLOCKS_PER_SM=$blocks timeout 60 $B bench reduce --backend cuda \
      --log2-sizes 24,28 --dtypes f32 --ops sum,min,argmin --reps 30 2>&1 | grep -v '^#'
  done
done > $o/knobs.txt 2>&1
awk '/^==/{h=$3"x"$5; next} /f32/{printf "%s %s %s %s\n", h, $2, $3, $4}' $o/knobs.txt
fi
echo "elapsed $SECONDS s"
if [ $SECONDS -lt 480 ]; then
  { ab "f32 hw min/max only" "-DTALLY_EXPERIMENT_GUARDED=0"; ab "new again" ""; } >> $o/bench-reduce.txt 2>&1
fi
[ -z "$san" ] && checks > $o/checks-summary.txt 2>&1
[ -n "$san" ] && wait $san
cat $o/checks-summary.txt
echo "elapsed $SECONDS s"
