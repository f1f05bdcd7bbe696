#!/usr/bin/env bash
# v32 call 2 (two GPUs), after call 1: a read-back's copy now runs in its stream's context (a
# device set's reads failed with CUDA_ERROR_INVALID_VALUE whenever another device's context was
# current), and a post's loads go out eight a lane before its stores. The multi-GPU, histogram
# and reduction tests; memcheck/racecheck/synccheck of the posting tests; bench multi (its
# all-reduce row is the previous combine, in the same run); the host-input rows by size; the
# small calls of the committed build (bin5, tally-wc), this one, and this one with its counters
# not posted (TALLY_POSTED_COUNTS=0), alternating; a second bench multi last.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call2.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)/lib
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$nccl NCCL_NVLS_ENABLE=0 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin6/tally.xz .gpu/bin5/tally-wc.xz
NEW=.gpu/bin6/tally OLD=.gpu/bin5/tally-wc
t tests
( TALLY_REQUIRE_GPU=2 timeout 200 .gpu/tests6/cuda_multi --test-threads=1 > $o/tests-multi.txt 2>&1; echo "rc $?" >> $o/tests-multi.txt ) &
( CUDA_VISIBLE_DEVICES=1 TALLY_REQUIRE_GPU=1 timeout 200 .gpu/tests6/cuda_histogram > $o/tests-histogram.txt 2>&1; echo "rc $?" >> $o/tests-histogram.txt
  CUDA_VISIBLE_DEVICES=1 TALLY_REQUIRE_GPU=1 timeout 100 .gpu/tests6/cuda_reduce > $o/tests-reduce.txt 2>&1; echo "rc $?" >> $o/tests-reduce.txt ) &
for tool in memcheck racecheck synccheck; do
  filter=post; [ $tool = racecheck ] && filter=post_their_counters
  ( CUDA_VISIBLE_DEVICES=1 TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 TALLY_RACECHECK=1 timeout 200 compute-sanitizer --tool $tool --error-exitcode 99 \
      .gpu/tests6/cuda_histogram --test-threads=1 $filter > $o/san-post-$tool.txt 2>&1; echo "rc $?" >> $o/san-post-$tool.txt ) &
done
( CUDA_VISIBLE_DEVICES=0 TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 99 \
    .gpu/tests6/cuda_reduce --test-threads=1 > $o/san-reduce-memcheck.txt 2>&1; echo "rc $?" >> $o/san-reduce-memcheck.txt ) &
wait
for f in $o/tests-*.txt $o/san-*.txt; do
  echo "$(basename $f): $(tail -1 $f) | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1) | $(grep -E '^test result' $f | tail -1 | cut -c1-60)"
done | tee $o/summary.txt
grep -E "FAILED|panicked" $o/tests-*.txt | head -20
t bench-multi
multi() { timeout 150 $NEW bench multi --devices all --reps 7 > $o/bench-multi-$1.txt 2>&1; echo "rc $?" >> $o/bench-multi-$1.txt; grep -v "^#" $o/bench-multi-$1.txt; }
multi 1
t host-sizes
for size in 26 28; do
  echo "log2 $size $(timeout 60 $NEW bench multi --devices all --log2-size $size --reps 7 2>&1 | grep -E 'hist256 i32 (resident|all-reduce|from host)' | tr '\n' '|')"
done > $o/host-sizes.txt 2>&1
cat $o/host-sizes.txt
t small-calls
# Every kernel compiled once outside the timing, by each build (same cache directory).
for B in $OLD $NEW; do
  $B bench hist --backend cuda --size 65536 --dtypes i32,u8,f32 --bins 256 --distributions uniform --reps 3 > /dev/null 2>&1
  $B bench reduce --backend cuda --log2-sizes 10 --dtypes f32,f64 --ops sum,exact-sum --reps 3 > /dev/null 2>&1
done
for r in 1 2; do
  for v in old new new-unposted; do
    B=$NEW; env=""; [ $v = old ] && B=$OLD; [ $v = new-unposted ] && env="TALLY_POSTED_COUNTS=0"
    echo "# round $r $v"
    env $env CUDA_VISIBLE_DEVICES=0 timeout 60 $B bench hist --backend cuda --size 1048576 --dtypes i32,u8,f32 --bins 256 --distributions uniform --strategies auto --reps 300 2>&1
    env $env CUDA_VISIBLE_DEVICES=0 timeout 60 $B bench hist --backend cuda --size 65536 --dtypes i32 --bins 256 --distributions uniform --strategies auto --reps 300 2>&1
    [ $v = new-unposted ] || env CUDA_VISIBLE_DEVICES=0 timeout 60 $B bench reduce --backend cuda --log2-sizes 10,20 --dtypes f32,f64 --ops sum,exact-sum --reps 200 2>&1
  done
done > $o/small.txt
grep -E "^#|i32|u8|f32|f64" $o/small.txt
t bench-multi-2
multi 2
t done
