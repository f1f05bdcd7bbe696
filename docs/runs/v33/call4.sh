#!/usr/bin/env bash
# v33 call 4: the build after the review (the reversal's chunk held to 32 KiB of shared memory;
# set plans check every rank's lengths; new and widened tests): cuda_multi (two GPUs), cuda_select,
# sanitizers over the partition tests (racecheck over the many-round reversal too); the
# partition and bench multi once more.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o4; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call4.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)/lib
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$nccl NCCL_NVLS_ENABLE=0 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b4/*.xz
B=.gpu/b4/tally
ngpu=$(nvidia-smi -L | wc -l)
t tests
if [ $ngpu -ge 2 ]; then
  TALLY_REQUIRE_GPU=2 timeout 150 .gpu/b4/cuda_multi --test-threads=1 > $o/tests-multi.txt 2>&1; echo "rc $?" >> $o/tests-multi.txt
else
  TALLY_REQUIRE_GPU=1 timeout 150 .gpu/b4/cuda_multi --test-threads=1 > $o/tests-multi.txt 2>&1; echo "rc $?" >> $o/tests-multi.txt
fi
last=$((ngpu - 1))
( CUDA_VISIBLE_DEVICES=$last TALLY_REQUIRE_GPU=1 timeout 200 .gpu/b4/cuda_select > $o/tests-select.txt 2>&1; echo "rc $?" >> $o/tests-select.txt ) &
[ $ngpu = 1 ] && wait
( for tool in memcheck synccheck racecheck; do
    CUDA_VISIBLE_DEVICES=0 TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 100 compute-sanitizer --tool $tool --error-exitcode 99 \
      .gpu/b4/cuda_select --test-threads=1 gpu_in_order gpu_poisoned > $o/san-select-$tool.txt 2>&1; echo "rc $?" >> $o/san-select-$tool.txt
  done ) &
wait
for f in $o/tests-*.txt $o/san-*.txt; do
  echo "$(basename $f): $(tail -1 $f) | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1) | $(grep -E '^test result' $f | tail -1 | cut -c1-70)"
done | tee $o/summary.txt
grep -E "FAILED|panicked" $o/tests-*.txt | head -20
t select
CUDA_VISIBLE_DEVICES=0 timeout 60 $B bench select --backend cuda --log2-sizes 28 --reps 20 --cases "partition 50%,partition rev 50%,select 50%" > $o/bench-select.txt 2>&1
cat $o/bench-select.txt
if [ $ngpu -ge 2 ]; then
  t bench-multi
  timeout 100 $B bench multi --devices all --reps 9 > $o/bench-multi.txt 2>&1
  grep -v "^$" $o/bench-multi.txt
fi
t done
