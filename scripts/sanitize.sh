#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck, synccheck) over the kernel tests of the bundle in .gpu/,
# every run in parallel with the others, each bounded by SANITIZE_SECONDS. TALLY_SMALL=1 and
# TALLY_SKIP_HUGE=1 keep every kernel and strategy but at small sizes; racecheck runs also set
# TALLY_RACECHECK=1 (fewer launches of each kernel variant: its cost grows with launches).
# Left to runs of their own (racecheck ran past this script's bound; PERF v30, v31): the wrap on
# one cluster (cuda_16_bit_cluster_counters_wrap_within_one_cluster, 275 s alone), the
# large-bin switch points (cuda_large_bins_around_*: 36-61 s for the block copies, past 560 s
# for the clusters) and cuda_16_bit_counters_spill_exactly (past 540 s). Logs in $1 (default
# ./gpu-out); the last lines are the summary: one line per run, its exit and error summary.
set -u
out=${1:-gpu-out}; mkdir -p "$out"
export TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 TALLY_SMALL=1 TALLY_CACHE_DIR=${TALLY_CACHE_DIR:-/tmp/tally-cache}
secs=${SANITIZE_SECONDS:-240}
bin() { ls .gpu/tests/$1-* | head -n 1; }
# tool binary filter...: the tests each run covers.
runs=(
  "memcheck cuda_reduce"
  "memcheck cuda_scan --skip gpu_more_than"
  "memcheck cuda_weighted"
  "memcheck cuda_lab"
  "memcheck cuda_external"
  "memcheck cuda_select --skip gpu_more_than"
  "memcheck cuda_runs --skip gpu_more_than"
  "memcheck cuda_histogram cuda_matches_reference cuda_skewed cuda_bins cuda_16_bit cuda_passes"
  "memcheck cuda_histogram cuda_large_bins_around"
  "racecheck cuda_reduce gpu_f32_ops gpu_exact gpu_poisoned gpu_custom"
  "racecheck cuda_scan gpu_in_place gpu_both gpu_custom"
  "racecheck cuda_histogram cuda_matches_reference_i32 cuda_bins_at"
  "racecheck cuda_histogram cuda_16_bit_counters_wrap_within_one_block cuda_16_bit_outlier_counters_wrap cuda_16_bit_channel_counters_wrap"
  "racecheck cuda_weighted cuda_weighted_fixed_point cuda_2d_weighted"
  "racecheck cuda_select gpu_f32_select gpu_u8_select gpu_f64_select gpu_poisoned"
  "synccheck cuda_reduce gpu_f32_ops gpu_exact"
  "synccheck cuda_scan gpu_in_place gpu_both"
  "synccheck cuda_histogram cuda_matches_reference_i32 cuda_16_bit"
  "synccheck cuda_select gpu_f32_select gpu_u8_select gpu_poisoned"
  "racecheck cuda_runs gpu_i32_keys gpu_u8_keys gpu_f32_values gpu_poisoned"
  "synccheck cuda_runs gpu_i32_keys gpu_f64_values gpu_poisoned"
  "synccheck cuda_weighted cuda_weighted_fixed_point cuda_2d_weighted"
  "racecheck cuda_lab cuda_lab_shared cuda_lab_float cuda_lab_integer cuda_lab_global_counts cuda_read_bandwidth"
  "synccheck cuda_lab cuda_lab_shared cuda_lab_float cuda_lab_integer cuda_lab_global_counts cuda_read_bandwidth"
  "racecheck cuda_external"
  "synccheck cuda_external"
  "memcheck cuda_partition"
  "memcheck cuda_stream"
  "memcheck cuda_weighted_exact"
  "memcheck cuda_half"
  "racecheck cuda_stream gpu_streamed_histograms gpu_streamed_weighted"
  "racecheck cuda_weighted_exact cuda_exact_adversarial cuda_exact_2d"
  "racecheck cuda_half gpu_f16_every_primitive gpu_exact_sums"
  "racecheck cuda_partition partition_around partition_every_sample_type partition_in_several"
  "synccheck cuda_partition partition_around partition_every_sample_type partition_in_several"
)
# At most SANITIZE_JOBS runs at once: all 28 together on one GPU ran past a 200 s bound (v12).
jobs_at_once=${SANITIZE_JOBS:-10}
i=0
for r in "${runs[@]}"; do
  set -- $r; tool=$1; b=$2; shift 2
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_at_once" ]; do wait -n; done
  race=0; [ "$tool" = racecheck ] && race=1
  ( TALLY_RACECHECK=$race timeout "$secs" compute-sanitizer --tool "$tool" --error-exitcode 99 "$(bin "$b")" --test-threads=1 "$@" \
      > "$out/sanitize-$i.log" 2>&1; echo "exit $?" >> "$out/sanitize-$i.log" ) &
  i=$((i + 1))
done
wait
i=0
for r in "${runs[@]}"; do
  log="$out/sanitize-$i.log"
  printf '%-72s %s | %s | %s\n' "$r" "$(tail -n 1 "$log")" "$(grep -m1 'ERROR SUMMARY\|RACECHECK SUMMARY' "$log" | tr -s ' ')" "$(grep -m1 'test result' "$log" | cut -c1-60)"
  i=$((i + 1))
done | tee "$out/sanitize-summary.txt"
cat "$out"/sanitize-*.log > "$out/sanitize.log"
