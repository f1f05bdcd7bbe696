#!/usr/bin/env bash
# v35 call 3 (one GPU): the same-width 4-byte sums of up to 2^20 items in 128 x 16 tiles (b2):
# cuda_scan whole, compute-sanitizer over its kept-plan tests at small sizes (the new shape),
# then b1 (before) and b2 interleaved, two rounds, at 2^16-2^24, CUB's InclusiveSum beside.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o3; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call3.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b2/*.xz
[ -x .gpu/b1/tally ] || bash scripts/unpack-xz.sh .gpu/b1/tally.xz
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_lookback scripts/peers/cub_lookback_sizes.cu > $o/cub-build.txt 2>&1 ) &
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY|RACECHECK SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
t=.gpu/b2
run test-scan 300 $t/cuda_scan --test-threads=4
for tool in memcheck racecheck synccheck; do
  TALLY_SMALL=1 run sanitizer-$tool 120 compute-sanitizer --tool $tool $t/cuda_scan gpu_kept_plans
done
wait
sizes=16,18,20,22,24
for r in 1 2; do
  for b in b1 b2; do
    echo "== $b round $r"
    timeout 60 .gpu/$b/tally bench scan --backend cuda --log2-sizes $sizes --reps 100 --cases "f32 sum det,f32 sum fast" 2>&1
  done
done > $o/bench.txt 2>&1
grep -E "^== |sum det|sum fast" $o/bench.txt
timeout 90 /tmp/cub_lookback > $o/cub.txt 2>&1; echo "rc $?" >> $o/cub.txt; grep -iE "inclusivesum|rc " $o/cub.txt | head -20
