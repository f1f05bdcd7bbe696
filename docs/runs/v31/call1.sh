#!/usr/bin/env bash
# v31 call 1. First, alone on the host (its memory bandwidth is what is measured): where a file
# in the page cache reaches the device fastest (scripts/profile/stream_fill.cpp: parallel pread
# into pinned buffers, tally's two-slot pipeline, the file's own pages pinned in place), then
# tally's streamed 256-bin histogram of a 16 GiB file from the CLI (a fresh process, timed) and
# `tally bench stream --source file`. Then compute-sanitizer over what v30 left: the 16-bit wrap
# on one block (TALLY_HIST_GRID's test), racecheck of the other sample types at one size, six
# partition tests. Seven runs at once, all ending before the call's bound.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call1.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
start=$(date +%s)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
bash scripts/unpack-xz.sh .gpu/bin5/tally.xz
T=.gpu/bin5/tally
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; free -g; lscpu | grep -E 'Model name|Socket|NUMA node\(s\)'; df -h /tmp | tail -1; uname -r; } > $o/info.txt 2>&1
cat $o/info.txt
# A 16 GiB file of random 64 MiB blocks, each starting with its index (the checks' words).
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
timeout 200 /tmp/sf $F > $o/stream-fill.txt 2>&1; echo "rc $?" >> $o/stream-fill.txt
cat $o/stream-fill.txt
# The CLI on the same file, a fresh process each (context creation included), u8 and i32.
for dt in u8 i32; do
  { time timeout 60 $T hist $F --dtype $dt --bins 256 --range 0,256 --backend cuda --json > $o/hist-16g-$dt.json; } \
    2> $o/hist-16g-$dt.time; echo "rc $?" >> $o/hist-16g-$dt.time
done
rm -f $F
timeout 200 $T bench stream --source file --dir /tmp --size-gib 16 --buffers 2 --reps 3 > $o/bench-stream-file-16g.txt 2>&1
echo "rc $?" >> $o/bench-stream-file-16g.txt
cat $o/bench-stream-file-16g.txt $o/hist-16g-*.time
echo "stream part took $(( $(date +%s) - start )) s"

export TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 TALLY_SKIP_HUGE=1
H=.gpu/tests5/cuda_histogram
P=.gpu/tests5/cuda_partition
$H --test-threads=1 cuda_16_bit_counters > $o/test-16bit.txt 2>&1; echo "rc $?" >> $o/test-16bit.txt
tail -3 $o/test-16bit.txt
runs=(
  "racecheck - $H cuda_16_bit_counters_wrap_within_one_block --exact"
  "memcheck - $H cuda_16_bit_counters_wrap_within_one_block --exact"
  "synccheck - $H cuda_16_bit_counters_wrap_within_one_block --exact"
  "racecheck 1025 $H cuda_matches_reference_f64 --exact"
  "racecheck 1025 $H cuda_matches_reference_i64 --exact"
  "racecheck 1025 $H cuda_matches_reference_u16 --exact"
  "racecheck 1025 $H cuda_matches_reference_u32 --exact"
  "racecheck - $P partition_around_chunks_and_the_switch_point --exact"
  "racecheck - $P partition_every_sample_type --exact"
  "racecheck - $P partition_in_several_slices --exact"
  "racecheck - $P partition_smaller_chunks --exact"
  "racecheck - $P partition_tuned_shapes_and_ranking --exact"
  "racecheck - $P partition_pairs_every_layout_and_binning --exact"
)
end=$((start + 570))
i=0
for r in "${runs[@]}"; do
  set -- $r; tool=$1; sizes=$2; bin=$3; shift 3
  while [ "$(jobs -rp | wc -l)" -ge 7 ]; do wait -n; done
  left=$((end - $(date +%s)))
  if [ $left -lt 30 ]; then echo "not started (time): $r" >> $o/not-started.txt; continue; fi
  ( s=$(date +%s)
    if [ "$sizes" != - ]; then export TALLY_TEST_SIZES=$sizes; fi
    timeout $left compute-sanitizer --tool $tool --error-exitcode 99 $bin --test-threads=1 "$@" > $o/san-$i.txt 2>&1
    echo "rc $? secs $(( $(date +%s) - s )) :: $r" >> $o/san-$i.txt ) &
  i=$((i + 1))
done
wait
for f in $(ls $o/san-*.txt | sort -V); do
  echo "$(tail -1 $f) | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1) | $(grep -E '^test result' $f | tail -1 | cut -c1-60)"
done | tee $o/san-summary.txt
cat $o/not-started.txt 2>/dev/null
