#!/usr/bin/env bash
# v32 call 6 (two GPUs), the build to be committed (the release bundle and its wheel): the small
# calls with CUB's small histogram beside them (GPU 0, nothing else running); then ncu on GPU 0
# of the rows issue 14's table misses on the H200 (65,536 bins uniform; u8 uniform; weighted f32
# uniform; the partition at 1M bins uniform) while GPU 1 runs the test binaries this session's
# changes touch; then cuda_multi and the Python package's GPU tests on both GPUs (two required),
# and the other test binaries on GPU 0 until the call's deadline.
set -u
cd "$(dirname "$0")/../.."
start=$(date +%s); deadline=$((start + 540))
o=/tmp/o6; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call6.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)/lib
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$nccl NCCL_NVLS_ENABLE=0 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_small_hist scripts/peers/cub_small_hist.cu > $o/build-cub-small.txt 2>&1 ) &
bash scripts/unpack-xz.sh .gpu/bin/tally.xz .gpu/tests/*.xz
B=.gpu/bin/tally
site=/tmp/tally-site; rm -rf $site
python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/wheels/tally-*.whl > $o/py-install.txt 2>&1
t small
$B bench hist --backend cuda --size 65536 --dtypes i32,u8,f32 --bins 256 --distributions uniform --reps 3 > /dev/null 2>&1
CUDA_VISIBLE_DEVICES=0 timeout 60 $B bench hist --backend cuda --size 1048576 --dtypes i32,u8,f32 --bins 256 --distributions uniform --strategies auto --reps 300 > $o/small.txt 2>&1
wait
CUDA_VISIBLE_DEVICES=0 timeout 60 /tmp/cub_small_hist > $o/cub-small.txt 2>&1; echo "rc $?" >> $o/cub-small.txt
cat $o/small.txt $o/cub-small.txt
bin() { ls .gpu/tests/$1-* | grep -v '\.xz$'; }
lane() {  # GPU, test names...
  local gpu=$1; shift
  for name in "$@"; do
    if [ $(date +%s) -ge $deadline ]; then echo "not run (deadline)" > $o/test-$name.txt; continue; fi
    CUDA_VISIBLE_DEVICES=$gpu TALLY_REQUIRE_GPU=1 timeout $((deadline - $(date +%s))) $(bin $name) > $o/test-$name.txt 2>&1
    echo "rc $?" >> $o/test-$name.txt
  done
}
t tests-and-ncu
( lane 1 cuda_histogram cuda_reduce cuda_select cuda_runs cuda_stream cuda_external cuda_properties_select cuda_properties_runs cli cli_reduce cli_runs cli_stream ) &
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats"
prof() {  # name, kernel regex, launches, command...
  local name=$1 kern=$2 count=$3; shift 3
  CUDA_VISIBLE_DEVICES=0 timeout 120 ncu $S --kernel-name regex:"$kern" --launch-skip 3 --launch-count $count "$@" > $o/ncu-$name.txt 2>&1
  echo "-- $name: $(grep -E ' Duration|DRAM Throughput|Compute \(SM\) Throughput' $o/ncu-$name.txt | head -4 | tr -s ' ' | tr '\n' ';')"
}
prof i32-65536 '^tally_histogram$' 1 $B bench hist --backend cuda --dtypes i32 --bins 65536 --distributions uniform --strategies auto --reps 2
prof u8-256 '^tally_histogram$' 1 $B bench hist --backend cuda --dtypes u8 --bins 256 --distributions uniform --strategies auto --reps 2
prof weighted '^tally_histogram_general$' 1 $B bench weighted --backend cuda --distributions uniform --strategies auto --accumulations halves --reps 2
prof partition-1m '^tally_partition' 3 $B bench hist --backend cuda --dtypes i32 --bins 1048576 --distributions uniform --strategies auto --reps 2
t multi-and-python
TALLY_REQUIRE_GPU=2 timeout 120 $(bin cuda_multi) > $o/test-cuda_multi.txt 2>&1; echo "rc $?" >> $o/test-cuda_multi.txt
tests=$(realpath crates/tally-python/tests)
(cd /tmp && PYTHONPATH=$site TALLY_REQUIRE_GPU=2 timeout $((deadline - $(date +%s))) python3 -m pytest -p no:cacheprovider -q -x "$tests/test_gpu.py" > $o/py-test-gpu.txt 2>&1; echo "rc $?" >> $o/py-test-gpu.txt)
t rest
lane 0 cuda_half cuda_weighted cuda_image cuda_partition cuda_scan cuda_weighted_exact cuda_lab cuda_properties cli_half cli_weighted lab_cli
wait
t results
for f in $o/test-*.txt $o/py-test-gpu.txt; do echo "$(basename $f): $(grep -E '^test result|passed|failed' $f | tail -1 | cut -c1-70) | $(tail -1 $f)"; done | tee $o/summary.txt
grep -lE "FAILED|panicked" $o/test-*.txt
t done
