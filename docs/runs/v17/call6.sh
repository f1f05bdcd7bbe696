#!/usr/bin/env bash
# Call 6 (two GPUs): pinned staging buffers kept between calls: host input by size, streamed or
# whole; bench multi; the stream and multi tests; memcheck over the stream tests.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
rm -rf .gpu/tests .gpu/bin; tar xJf .gpu/bundle6.tar.xz -C .gpu
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)/lib
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$nccl NCCL_NVLS_ENABLE=0 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
( CUDA_VISIBLE_DEVICES=1 TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 .gpu/tests/cuda_stream-* > "$out/sanitize-stream-memcheck.txt" 2>&1; echo "rc $?" >> "$out/sanitize-stream-memcheck.txt" ) &
TALLY_REQUIRE_GPU=1 CUDA_VISIBLE_DEVICES=0 timeout 150 .gpu/tests/cuda_stream-* > "$out/tests-stream.txt" 2>&1; echo "rc $?" >> "$out/tests-stream.txt"
wait
t bench-multi; timeout 120 .gpu/bin/tally bench multi --devices all > "$out/bench-multi.txt" 2>&1; echo "rc $?" >> "$out/bench-multi.txt"; tail -8 "$out/bench-multi.txt"
t threshold
for size in 24 26 28 30; do
  for thr in default 0; do
    [ $size = 30 ] && [ $thr = 0 ] && thr=99999999999
    if [ $thr = default ]; then env=""; else env="TALLY_STREAM_THRESHOLD=$thr"; fi
    echo "log2 $size threshold $thr $(env $env timeout 60 .gpu/bin/tally bench multi --devices all --log2-size $size --reps 7 2>&1 | grep -E 'from host')"
  done
done > "$out/host-threshold.txt" 2>&1
cat "$out/host-threshold.txt"
t multi-tests
TALLY_REQUIRE_GPU=2 timeout 120 .gpu/tests/cuda_multi-* --test-threads=1 > "$out/tests-multi.txt" 2>&1; echo "rc $?" >> "$out/tests-multi.txt"
grep -E "test result|ERROR SUMMARY|rc |FAILED|panicked" "$out"/tests-*.txt "$out"/sanitize-*.txt
t done
