#!/usr/bin/env bash
# v38 call 3: the committed shape. Plain sums and custom scans look back in order; scans by key
# and reduce-by-key by fixed groups; min/max (4-byte, 16 rows at 4 blocks) compiled without the
# ordered look-back. The scans and reduce-by-key twice, CUB and torch from the same GPU; beside
# it on the second GPU the tests (with the new left-fold test), the properties and
# compute-sanitizer over the kept plans and the float reduce-by-key.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o3; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call3.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
gpus=$(nvidia-smi -L | wc -l)
bash scripts/unpack-xz.sh .gpu/b3/*.xz
t=.gpu/b3 B=.gpu/b3/tally
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout $limit "$@" > $o/$name.txt 2>&1; echo "rc $?" >> $o/$name.txt
  echo "$name: $(grep -E "test result|rc |ERROR SUMMARY|RACECHECK SUMMARY" $o/$name.txt | tr '\n' ' ')"
}
checks() {
  export CUDA_VISIBLE_DEVICES=$((gpus > 1 ? 1 : 0))
  for tool in memcheck racecheck synccheck; do
    TALLY_SMALL=1 run sanitizer-scan-$tool 150 compute-sanitizer --tool $tool $t/cuda_scan gpu_kept_plans
    TALLY_SMALL=1 run sanitizer-rbk-$tool 150 compute-sanitizer --tool $tool $t/cuda_runs gpu_float_sums_repeat
  done
  run test-scan 400 $t/cuda_scan --test-threads=2
  run test-runs 300 $t/cuda_runs --test-threads=2
  run test-properties 300 $t/cuda_properties
  run test-properties-runs 200 $t/cuda_properties_runs
}
if [ "$gpus" -gt 1 ]; then checks > $o/checks-summary.txt 2>&1 & san=$!; else san=; fi
export CUDA_VISIBLE_DEVICES=0
for round in 1 2; do
  echo "== round $round"
  timeout 120 $B bench scan --backend cuda --log2-sizes 20,24,28 --reps 20 2>&1
  timeout 60 $B bench reduce-by-key --backend cuda --reps 20 2>&1
done > $o/bench.txt 2>&1
grep -E "^== |^f32|^i32|^f64|^rbk|rror" $o/bench.txt | grep -v '^#'
timeout 200 bash .gpu/peers/run-peers-primitives.sh > $o/peers.txt 2>&1; echo "rc $?" >> $o/peers.txt
grep -E "DeviceScan|ReduceByKey|cumsum|^rc " $o/peers.txt | grep -v -E "n= +(1024|65536) "
[ -z "$san" ] && checks > $o/checks-summary.txt 2>&1
[ -n "$san" ] && wait $san
cat $o/checks-summary.txt
echo "elapsed $SECONDS s"
