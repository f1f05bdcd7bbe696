#!/usr/bin/env bash
# v30 call 4: compute-sanitizer over the histogram tests that call 2's twelve parallel runs did
# not finish: racecheck of every strategy at one size per spec (TALLY_TEST_SIZES=1025: its
# cost is per launch), the skewed, 16-bit and pass tests at TALLY_SMALL sizes, the large-bin
# switch points; memcheck and synccheck over cuda_histogram whole. Six runs at once.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call4.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
export TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 TALLY_SKIP_HUGE=1
H=.gpu/tests4/cuda_histogram
runs=(
  "racecheck 1025 cuda_matches_reference_i32 --exact"
  "racecheck 1025 cuda_matches_reference_u8 --exact"
  "racecheck 1025 cuda_matches_reference_f32 --exact"
  "racecheck - cuda_skewed_distributions_all_strategies --exact"
  "racecheck - cuda_passes_count_outliers_once --exact"
  "racecheck - cuda_16_bit_counters_spill_exactly --exact"
  "memcheck - --skip cuda_out_of_memory"
  "synccheck -"
  "racecheck - cuda_large_bins_around_every_switch_over_point --exact"
)
i=0
for r in "${runs[@]}"; do
  set -- $r; tool=$1; sizes=$2; shift 2
  while [ "$(jobs -rp | wc -l)" -ge 6 ]; do wait -n; done
  ( s=$(date +%s)
    if [ "$sizes" != - ]; then export TALLY_TEST_SIZES=$sizes; fi
    timeout 540 compute-sanitizer --tool $tool --error-exitcode 99 $H --test-threads=1 "$@" > $o/san-$i.txt 2>&1
    echo "rc $? secs $(( $(date +%s) - s )) :: $r" >> $o/san-$i.txt ) &
  i=$((i + 1))
done
wait
for f in $(ls $o/san-*.txt | sort -V); do
  echo "$(tail -1 $f) | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1) | $(grep -E '^test result' $f | tail -1 | cut -c1-60)"
done
