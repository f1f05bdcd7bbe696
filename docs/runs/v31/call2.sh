#!/usr/bin/env bash
# v31 call 2. First, alone on the host: the fill of pinned buffers from a file in the page cache
# into cached and into write-combined page-locked memory (scripts/profile/stream_fill.cpp), then
# tally's streaming before (28f04e1: write-combined buffers, 4 MiB pieces) and after (cached
# buffers, 1 MiB pieces), the same commands in the same call: `tally hist` of a 16 GiB file in a
# fresh process, `bench stream` from a file and from host memory. Then the tests the change
# touches, and compute-sanitizer over the 16-bit wrap on one block and racecheck of four
# partition tests with fewer launches (TALLY_RACECHECK=1). Seven runs at once.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call2.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
start=$(date +%s)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
bash scripts/unpack-xz.sh .gpu/bin5/tally.xz .gpu/bin5/tally-old.xz
NEW=.gpu/bin5/tally OLD=.gpu/bin5/tally-old
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; free -g | head -2; uname -r; } > $o/info.txt 2>&1
cat $o/info.txt
F=/tmp/stream-16g.bin
python3 - "$F" <<'PY' > $o/make-file.txt 2>&1
import numpy as np, sys, time
t = time.time()
block = np.random.default_rng(1).integers(0, 2**63, size=(64 << 20) // 8, dtype=np.uint64)
with open(sys.argv[1], "wb") as f:
    for k in range(256):
        block[0] = k * 0x9E3779B97F4A7C15 % 2**64
        f.write(block.tobytes())
print(f"wrote 16 GiB in {time.time() - t:.1f} s")
PY
cat $F > /dev/null
g++ -O2 -std=c++17 -pthread -o /tmp/sf scripts/profile/stream_fill.cpp -ldl > $o/build-sf.txt 2>&1 || cp .gpu/bin5/stream_fill /tmp/sf
timeout 120 /tmp/sf $F > $o/stream-fill.txt 2>&1; echo "rc $?" >> $o/stream-fill.txt
cat $o/stream-fill.txt
# The CLI on the same file, a fresh process each (context creation included): new, old, new, old.
for round in 1 2; do
  for which in new old; do
    T=$NEW; [ $which = old ] && T=$OLD
    for dt in u8 i32; do
      { time timeout 60 $T hist $F --dtype $dt --bins 256 --range 0,256 --backend cuda --json > $o/hist-$which-$dt-$round.json; } \
        2> $o/hist-$which-$dt-$round.time
    done
  done
done
for f in $o/hist-*.json; do echo "$(basename $f) $(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["seconds"], j["samples"], sum(j["counts"][0]) if isinstance(j["counts"][0], list) else sum(j["counts"]))' $f) wall $(grep real ${f%.json}.time)"; done | tee $o/hist-summary.txt
rm -f $F
for which in new old; do
  T=$NEW; [ $which = old ] && T=$OLD
  timeout 100 $T bench stream --source file --dir /tmp --size-gib 8 --buffers 2 --reps 3 > $o/bench-stream-file-8g-$which.txt 2>&1
  timeout 60 $T bench stream --source host --size-gib 4 --buffers 2 --reps 3 > $o/bench-stream-host-4g-$which.txt 2>&1
done
tail -n +1 $o/bench-stream-*.txt
echo "stream part took $(( $(date +%s) - start )) s"

export TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 TALLY_SKIP_HUGE=1
H=.gpu/tests5/cuda_histogram
P=.gpu/tests5/cuda_partition
S=.gpu/tests5/cuda_stream
runs=(
  "test - $S"
  "test - $H within_one"
  "racecheck - $H cuda_16_bit_counters_wrap_within_one_block --exact"
  "racecheck - $H cuda_16_bit_outlier_counters_wrap_within_one_block --exact"
  "racecheck - $H cuda_16_bit_channel_counters_wrap_within_one_block --exact"
  "racecheck - $H cuda_16_bit_cluster_counters_wrap_within_one_cluster --exact"
  "memcheck - $H within_one"
  "synccheck - $H within_one"
  "racecheck 1 $P partition_around_chunks_and_the_switch_point --exact"
  "racecheck 1 $P partition_smaller_chunks --exact"
  "racecheck 1 $P partition_tuned_shapes_and_ranking --exact"
  "racecheck 1 $P partition_pairs_every_layout_and_binning --exact"
  "test - $P"
)
end=$((start + 575))
i=0
for r in "${runs[@]}"; do
  set -- $r; tool=$1; race=$2; bin=$3; shift 3
  while [ "$(jobs -rp | wc -l)" -ge 7 ]; do wait -n; done
  left=$((end - $(date +%s)))
  if [ $left -lt 30 ]; then echo "not started (time): $r" >> $o/not-started.txt; continue; fi
  ( s=$(date +%s)
    if [ "$race" != - ]; then export TALLY_RACECHECK=1; fi
    if [ $tool = test ]; then
      unset TALLY_SMALL TALLY_SKIP_HUGE
      timeout $left $bin --test-threads=1 "$@" > $o/san-$i.txt 2>&1
    else
      timeout $left compute-sanitizer --tool $tool --error-exitcode 99 $bin --test-threads=1 "$@" > $o/san-$i.txt 2>&1
    fi
    echo "rc $? secs $(( $(date +%s) - s )) :: $r" >> $o/san-$i.txt ) &
  i=$((i + 1))
done
wait
for f in $(ls $o/san-*.txt | sort -V); do
  echo "$(tail -1 $f) | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1) | $(grep -E '^test result' $f | tail -1 | cut -c1-60)"
done | tee $o/san-summary.txt
cat $o/not-started.txt 2>/dev/null
