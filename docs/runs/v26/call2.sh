#!/usr/bin/env bash
# Session call 2: reductions post their result words to mapped host memory (issue 11): the CUDA
# tests of every changed path, then bench reduce of the previous build (bin1) and this one
# (bin2) alternating. Then the look-back experiments of issue 13 (NVRTC defines in one build):
# encode and unique with the fast look-back (default), the fixed one, and fewer windows;
# reduce-by-key with i32 sums into i64 (fast) and f32 (fixed); select with the fixed one.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin1/tally.xz .gpu/bin2/tally.xz .gpu/tests2/*.xz
T=.gpu/tests2
for t in cuda_reduce cuda_runs cuda_select cuda_stream cuda_multi; do
  TALLY_REQUIRE_GPU=1 timeout 240 $T/$t > $o/tests-$t.txt 2>&1; echo "rc $?" >> $o/tests-$t.txt
  echo "$t: $(grep -E '^test result' $o/tests-$t.txt | tail -1) $(tail -1 $o/tests-$t.txt)"
done
grep -E "panicked|FAILED" $o/tests-*.txt | head -20
for round in 1 2; do
  for b in bin1 bin2; do
    timeout 60 .gpu/$b/tally bench reduce --backend cuda --log2-sizes 10,16,20,24,28 --dtypes f32,f64 --ops sum,exact-sum,argmin --reps 50 > $o/bench-reduce-$b-r$round.txt 2>&1
    echo "== $b round $round"; grep -v "^#" $o/bench-reduce-$b-r$round.txt
  done
done
B=.gpu/bin2/tally
run() { local name=$1; shift; env "$@" timeout 60 $B bench $BENCH --backend cuda --log2-sizes 28 --reps 20 > $o/x-$name.txt 2>&1; echo "== $name"; grep -v "^#" $o/x-$name.txt | tail -n +2; }
for round in 1 2; do
  BENCH=rle; run rle-fast-r$round TALLY_NVRTC_OPTIONS=-DTALLY_RUNS_LOOKBACK=0
  run rle-fixed-r$round TALLY_NVRTC_OPTIONS=-DTALLY_RUNS_LOOKBACK=1
  run rle-w2-r$round TALLY_NVRTC_OPTIONS=-DTALLY_RUNS_WINDOWS=2
  run rle-w1-r$round TALLY_NVRTC_OPTIONS=-DTALLY_RUNS_WINDOWS=1
  BENCH=unique; run unique-fast-r$round TALLY_NVRTC_OPTIONS=-DTALLY_RUNS_LOOKBACK=0
  run unique-fixed-r$round TALLY_NVRTC_OPTIONS=-DTALLY_RUNS_LOOKBACK=1
  run unique-w2-r$round TALLY_NVRTC_OPTIONS=-DTALLY_RUNS_WINDOWS=2
  BENCH=select; run select-fast-r$round TALLY_NVRTC_OPTIONS=-DTALLY_SELECT_FIXED_LOOKBACK=0
  run select-fixed-r$round TALLY_NVRTC_OPTIONS=-DTALLY_SELECT_FIXED_LOOKBACK=1
done
tar czf "${OUT:-gpu-out}/call2.tgz" -C $o .
