#!/usr/bin/env bash
# Session call 3: the committed build (bin3): reductions post their words from one warp (call 2's
# one-thread post cost the exact sum 23 us), encode and reduce-by-key's fast look-back one
# window a round. Tests; bench reduce of bin1 (no post), bin2 (one-thread post), bin3,
# alternating; the run primitives of bin3 and bin2; CUB and torch in the same call (kernels,
# and torch's `.item()` end to end).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin*/tally.xz .gpu/tests3/*.xz
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_primitives .gpu/peers/cub_primitives.cu > $o/cub-build.txt 2>&1 ) &
T=.gpu/tests3
for t in cuda_reduce cuda_runs; do
  TALLY_REQUIRE_GPU=1 timeout 200 $T/$t > $o/tests-$t.txt 2>&1; echo "rc $?" >> $o/tests-$t.txt
  echo "$t: $(grep -E '^test result' $o/tests-$t.txt | tail -1) $(tail -1 $o/tests-$t.txt)"
done
grep -E "panicked|FAILED" $o/tests-*.txt | head -20
for round in 1 2; do
  for b in bin1 bin2 bin3; do
    timeout 60 .gpu/$b/tally bench reduce --backend cuda --log2-sizes 10,16,20,24,28 --dtypes f32,f64 --ops sum,exact-sum,argmin --reps 50 > $o/bench-reduce-$b-r$round.txt 2>&1
    echo "== $b round $round"; grep -v "^#" $o/bench-reduce-$b-r$round.txt
  done
done
for round in 1 2; do
  for b in bin3 bin2; do
    for what in rle reduce-by-key unique; do
      timeout 60 .gpu/$b/tally bench $what --backend cuda --log2-sizes 20,24,28 --reps 20 > $o/bench-$what-$b-r$round.txt 2>&1
      echo "== $what $b round $round"; grep -v "^#" $o/bench-$what-$b-r$round.txt | tail -n +2
    done
  done
done
wait
timeout 150 /tmp/cub_primitives > $o/cub.txt 2>&1; echo "rc $?" >> $o/cub.txt
grep -E "n= *268435456|n= *1048576 |n= *1024 |^rc" $o/cub.txt
timeout 150 python3 .gpu/peers/torch_primitives.py > $o/torch.txt 2>&1; echo "rc $?" >> $o/torch.txt
grep -E "torch.sum|argmin|unique|^rc" $o/torch.txt
timeout 100 python3 scripts/peers/torch_small_e2e.py > $o/torch-e2e.txt 2>&1; echo "rc $?" >> $o/torch-e2e.txt
cat $o/torch-e2e.txt
tar czf "${OUT:-gpu-out}/call3.tgz" -C $o .
