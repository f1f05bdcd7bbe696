#!/usr/bin/env bash
# v33 call 2: the in-order partition's reversal, pairs a thread in flight 1 / 4 / 8 / 16
# (TALLY_REVERSE_PAIRS through TALLY_NVRTC_OPTIONS; the grid now fills every multiprocessor),
# alternating, beside the reversed-rest partition (the same first kernel); cuda_select on this
# build; bench multi again.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o2; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call2.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)/lib
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$nccl NCCL_NVLS_ENABLE=0 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b2/*.xz
B=.gpu/b2/tally
ngpu=$(nvidia-smi -L | wc -l)
t tests
( CUDA_VISIBLE_DEVICES=$((ngpu - 1)) TALLY_REQUIRE_GPU=1 timeout 200 .gpu/b2/cuda_select > $o/tests-select.txt 2>&1; echo "rc $?" >> $o/tests-select.txt ) &
[ $ngpu = 1 ] && wait
t pairs
for r in 1 2; do
  for p in 1 4 8 16; do
    echo "# round $r pairs $p"
    CUDA_VISIBLE_DEVICES=0 TALLY_NVRTC_OPTIONS="-DTALLY_REVERSE_PAIRS=$p" timeout 60 $B bench select --backend cuda --log2-sizes 28 --reps 20 --cases "partition 50%,partition rev 50%" 2>&1
  done
done > $o/bench-pairs.txt
grep -E "^#|partition" $o/bench-pairs.txt
wait
echo "tests-select: $(tail -1 $o/tests-select.txt) | $(grep -E '^test result' $o/tests-select.txt | tail -1 | cut -c1-70)"
grep -E "FAILED|panicked" $o/tests-select.txt | head
if [ $ngpu -ge 2 ]; then
  t bench-multi
  timeout 100 $B bench multi --devices all --reps 9 > $o/bench-multi.txt 2>&1
  grep -v "^$" $o/bench-multi.txt
fi
t done
