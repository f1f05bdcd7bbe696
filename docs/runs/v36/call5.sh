#!/usr/bin/env bash
# v36 call 5 (b2): 90% of the samples in one bin, global-l2 against the partition from 1M to 16M
# bins (call 4: the partition 1.735 ms against global-l2's 2.104 at 16M, global-l2 ahead at 1M):
# where `auto` should switch. Also Zipf and uniform at the same bins, `auto`.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o5; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call5.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1 CUDA_VISIBLE_DEVICES=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
[ -x .gpu/b2/tally ] || bash scripts/unpack-xz.sh .gpu/b2/tally.xz
B=.gpu/b2/tally
$B info > $o/info-tally.txt 2>&1
grep -i "pass\|l2" $o/info-tally.txt | head -5
for round in 1 2; do
  timeout 200 $B bench hist --backend cuda --dtypes i32 --bins 2097152,4194304,6000000,7000000,9000000,12000000,16777216 --distributions hot90 --strategies global-l2,partition --reps 10 > $o/hot90-$round.txt 2>&1
  grep -h "hot90" $o/hot90-$round.txt | awk '{print $3, $4, $6, $11}'
done
