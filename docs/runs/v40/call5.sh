#!/usr/bin/env bash
# v40 call 5: the committed build (v39's scan kernels; calls 1-4's changes not kept): the scan
# tests with TALLY_REQUIRE_GPU=1, among them the new u32 sum of 2^31 + 4099 elements; and the
# rows of the f32 sums' tiles at 2^24 (1,366 tiles of 12,288 on 396 resident blocks: 3.45
# rounds of blocks), where a shape whose tiles fill whole rounds might finish sooner.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o5; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call5.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
gpus=$(nvidia-smi -L | wc -l)
bash scripts/unpack-xz.sh .gpu/b5/*.xz
t=.gpu/b5 B=$(realpath .gpu/b5/tally)
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY|RACECHECK SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
checks() {
  export CUDA_VISIBLE_DEVICES=$((gpus > 1 ? 1 : 0))
  run test-scan 300 $t/cuda_scan --test-threads=2
}
if [ "$gpus" -gt 1 ]; then checks > $o/checks-summary.txt 2>&1 & san=$!; else san=; fi
export CUDA_VISIBLE_DEVICES=0
shape() {
  echo "== $*"
  env "$@" timeout 60 $B bench scan --backend cuda --log2-sizes 24 --reps 30 --cases "f32 sum" 2>&1
}
{
  for round in 1 2; do
    shape X=1
    shape TALLY_SCAN_VECS=21
    shape TALLY_SCAN_VECS=20
    shape TALLY_SCAN_VECS=16
    shape TALLY_SCAN_VECS=16 TALLY_SCAN_MIN_BLOCKS=4
  done
} > $o/shapes-24.txt 2>&1
grep -E "^== |f32 sum" $o/shapes-24.txt
[ -z "$san" ] && checks > $o/checks-summary.txt 2>&1
[ -n "$san" ] && wait $san
cat $o/checks-summary.txt
echo "elapsed $SECONDS s"
