#!/usr/bin/env bash
# v35 call 5 (one GPU): the widening 4-byte sums of up to 2^18 items and the f32 sums by 4-byte
# keys of up to 2^22 in their smaller tiles (b4): cuda_scan whole, compute-sanitizer over its
# kept-plan tests at small sizes; then b3 (before) and b4 interleaved, two rounds, at 2^16-2^24.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o5; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call5.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b4/*.xz .gpu/b3/tally.xz
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY|RACECHECK SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
t=.gpu/b4
run test-scan 300 $t/cuda_scan --test-threads=4
for tool in memcheck racecheck synccheck; do
  TALLY_SMALL=1 run sanitizer-$tool 120 compute-sanitizer --tool $tool $t/cuda_scan gpu_kept_plans
done
sizes=16,18,20,22,24
for r in 1 2; do
  for b in b3 b4; do
    echo "== $b round $r"
    timeout 60 .gpu/$b/tally bench scan --backend cuda --log2-sizes $sizes --reps 100 --cases "f32 sum fast,i32->i64 sum,f32 by key/8,f32 by key/8 fast" 2>&1
  done
done > $o/bench.txt 2>&1
grep -E "^== |sum |by key" $o/bench.txt
