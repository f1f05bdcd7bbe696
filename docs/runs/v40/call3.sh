#!/usr/bin/env bash
# v40 call 3: call 2's ncu put 40% of the f32 sum's warp samples (v39's kernel, a tile a
# block) at the barrier where warps 1-3 wait for warp 0's look-back, whose polls wait on L2
# loads: more bytes a multiprocessor per look-back. Tiles staged in dynamic shared memory
# (cp.async, not held in registers) at 64 KiB (128 x 32, 256 x 16, 512 x 8 rows, 3 blocks) and
# 48 KiB at 4 blocks, against the tile in registers and the late-take pipeline, alternating in
# one binary; the widening sum (staged, now in dynamic shared memory) against call 1.
# Beside it: the scan tests, compute-sanitizer over the kept plans (widening, staged) and the
# pipelined tiles.
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
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY|RACECHECK SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
checks() {
  export CUDA_VISIBLE_DEVICES=$((gpus > 1 ? 1 : 0))
  for tool in memcheck racecheck synccheck; do
    [ "$gpus" -gt 1 ] || [ $SECONDS -lt 420 ] || { echo "sanitizers ($tool): skipped at ${SECONDS} s"; continue; }
    TALLY_SMALL=1 run sanitizer-kept-$tool 200 compute-sanitizer --tool $tool $t/cuda_scan gpu_kept_plans
  done
  [ "$gpus" -gt 1 ] || [ $SECONDS -lt 400 ] || { echo "test-scan: skipped at ${SECONDS} s"; return; }
  run test-scan 300 $t/cuda_scan --test-threads=2
}
if [ "$gpus" -gt 1 ]; then checks > $o/checks-summary.txt 2>&1 & san=$!; else san=; fi
export CUDA_VISIBLE_DEVICES=0
shape() {
  echo "== $*"
  env "$@" timeout 60 $B bench scan --backend cuda --log2-sizes 24,28 --reps 20 --cases "f32 sum fast" 2>&1
}
S="TALLY_SCAN_PIPELINE=0 TALLY_SCAN_STAGED=1"
{
  for round in 1 2; do
    shape TALLY_SCAN_PIPELINE=0
    shape $S TALLY_SCAN_VECS=32 TALLY_SCAN_MIN_BLOCKS=3
    shape $S TALLY_SCAN_BLOCK_THREADS=256 TALLY_SCAN_VECS=16 TALLY_SCAN_MIN_BLOCKS=3
    shape $S TALLY_SCAN_BLOCK_THREADS=512 TALLY_SCAN_VECS=8 TALLY_SCAN_MIN_BLOCKS=3
    shape $S TALLY_SCAN_VECS=24 TALLY_SCAN_MIN_BLOCKS=4
    shape $S TALLY_SCAN_VECS=24 TALLY_SCAN_MIN_BLOCKS=3
    shape TALLY_SCAN_BLOCK_THREADS=256 TALLY_SCAN_VECS=8 TALLY_SCAN_MIN_BLOCKS=3
  done
} > $o/shapes.txt 2>&1
grep -E "^== |f32 sum" $o/shapes.txt
for round in 1 2; do
  timeout 100 $B bench scan --backend cuda --log2-sizes 20,24,28 --reps 20 --cases "i32->i64 sum" 2>&1
done > $o/bench-wide.txt 2>&1
grep -E "i32" $o/bench-wide.txt
[ -z "$san" ] && checks > $o/checks-summary.txt 2>&1
[ -n "$san" ] && wait $san
cat $o/checks-summary.txt
echo "elapsed $SECONDS s"
