#!/usr/bin/env bash
# v36 call 6: the build committed (b3: the skew rule by global-l2's passes): cuda_partition and
# cuda_histogram whole; `auto` on 90%-in-one-bin data around one pass of global-l2, and at 1M and
# 16M bins every distribution, against the strategies by name.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o6; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call6.tgz" -C $o .' EXIT
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
  run test-partition 300 $t/cuda_partition --test-threads=2
  run test-histogram 300 $t/cuda_histogram --test-threads=2
  TALLY_SMALL=1 run sanitizer-large-bins-racecheck 200 compute-sanitizer --tool racecheck $t/cuda_partition partition_large_bins
}
if [ "$gpus" -gt 1 ]; then checks > $o/checks-summary.txt 2>&1 & san=$!; else checks > $o/checks-summary.txt 2>&1; san=; fi
export CUDA_VISIBLE_DEVICES=0
timeout 200 $B bench hist --backend cuda --dtypes i32 --bins 6000000,7000000,16777216 --distributions hot90 --strategies auto,global-l2,partition --reps 10 > $o/bench-hot90.txt 2>&1
timeout 200 $B bench hist --backend cuda --dtypes i32 --bins 1048576,16777216 --distributions uniform,zipf,hot90 --strategies auto --reps 10 > $o/bench-auto.txt 2>&1
grep -h "hot90\|uniform\|zipf" $o/bench-hot90.txt $o/bench-auto.txt | awk '{print $2, $3, $4, $5, $6, $11}'
[ -n "$san" ] && wait $san
cat $o/checks-summary.txt
echo "elapsed $SECONDS s"
