#!/usr/bin/env bash
# v31 call 3: compute-sanitizer over the histogram tests v30 and calls 1-2 left: racecheck of the
# large-bin switch points (fewer launches, TALLY_RACECHECK=1), of the image, weighted, exact
# weighted, 16-bit float and streamed histograms; memcheck and synccheck of the weighted tests
# (their last kernel change was not sanitized), the streamed ones (cached pinned buffers now),
# the partition, images, exact weighted and 16-bit floats. Seven runs at once, all bounded by
# the call; runs that could not start in time are listed.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call3.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
start=$(date +%s)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
export TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 TALLY_SKIP_HUGE=1
D=.gpu/tests5
runs=(
  "racecheck $D/cuda_histogram cuda_large_bins_around_every_switch_over_point --exact"
  "racecheck $D/cuda_weighted"
  "racecheck $D/cuda_image"
  "racecheck $D/cuda_weighted_exact"
  "racecheck $D/cuda_half gpu_f16_every_histogram_strategy gpu_bf16_every_histogram_strategy"
  "racecheck $D/cuda_stream gpu_streamed_histograms"
  "memcheck $D/cuda_weighted"
  "synccheck $D/cuda_weighted"
  "memcheck $D/cuda_stream"
  "memcheck $D/cuda_partition"
  "synccheck $D/cuda_partition"
  "memcheck $D/cuda_image"
  "synccheck $D/cuda_image"
  "memcheck $D/cuda_weighted_exact"
  "synccheck $D/cuda_weighted_exact"
  "memcheck $D/cuda_half"
  "synccheck $D/cuda_half"
  "synccheck $D/cuda_stream"
)
end=$((start + 575))
i=0
for r in "${runs[@]}"; do
  set -- $r; tool=$1; bin=$2; shift 2
  while [ "$(jobs -rp | wc -l)" -ge 7 ]; do wait -n; done
  left=$((end - $(date +%s)))
  if [ $left -lt 60 ]; then echo "not started (time): $r" >> $o/not-started.txt; continue; fi
  ( s=$(date +%s)
    if [ $tool = racecheck ]; then export TALLY_RACECHECK=1; fi
    timeout $left compute-sanitizer --tool $tool --error-exitcode 99 $bin --test-threads=1 "$@" > $o/san-$i.txt 2>&1
    echo "rc $? secs $(( $(date +%s) - s )) :: $r" >> $o/san-$i.txt ) &
  i=$((i + 1))
done
wait
for f in $(ls $o/san-*.txt | sort -V); do
  echo "$(tail -1 $f) | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1) | $(grep -E '^test result' $f | tail -1 | cut -c1-60)"
done | tee $o/san-summary.txt
cat $o/not-started.txt 2>/dev/null
