#!/usr/bin/env bash
# v38 call 5: after a review, integer sums compile without the ordered look-back and the call to
# it is behind `#if TALLY_LOOKBACK_ORDERED`; the left-fold test also runs with a history of 256
# tiles (tiles of the first wave start again), for a custom a + b (6 blocks resident), and
# checks that the fixed groups give other bits. cuda_scan on one GPU, compute-sanitizer over the
# kept plans on the other.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o5; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call5.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
gpus=$(nvidia-smi -L | wc -l)
bash scripts/unpack-xz.sh .gpu/b5/*.xz
t=.gpu/b5
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY|RACECHECK SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
sanitize() {
  export CUDA_VISIBLE_DEVICES=$((gpus > 1 ? 1 : 0))
  for tool in racecheck memcheck; do
    TALLY_SMALL=1 run sanitizer-scan-$tool 100 compute-sanitizer --tool $tool $t/cuda_scan gpu_kept_plans
  done
}
if [ "$gpus" -gt 1 ]; then sanitize > $o/sanitize-summary.txt 2>&1 & san=$!; else san=; fi
export CUDA_VISIBLE_DEVICES=0
run test-fold 120 $t/cuda_scan gpu_deterministic_plain_sums_fold_tiles_left_to_right --nocapture
run test-scan 200 $t/cuda_scan --test-threads=2
[ -z "$san" ] && sanitize > $o/sanitize-summary.txt 2>&1
[ -n "$san" ] && wait $san
cat $o/sanitize-summary.txt
echo "elapsed $SECONDS s"
