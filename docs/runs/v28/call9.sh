#!/usr/bin/env bash
# Session call 9 (v28): the tidy commit's run tests (RunsPlan keeps whether it checks sums;
# runs.cu's alias and line wraps) with TALLY_REQUIRE_GPU=1, and compute-sanitizer over them.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/tests8/*.xz
for b in cuda_runs cuda_properties_runs; do
  TALLY_REQUIRE_GPU=1 timeout 200 .gpu/tests8/$b > $o/tests-$b.txt 2>&1; echo "rc $?" >> $o/tests-$b.txt
  echo "$b: $(grep -E "^test result|^rc|panicked|FAILED" $o/tests-$b.txt | head -5 | tr '\n' ' ')"
done
for tool in memcheck racecheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 200 compute-sanitizer --tool $tool --error-exitcode 99 .gpu/tests8/cuda_runs --test-threads=1 --skip more_than > "$o/san-$tool.txt" 2>&1; echo "rc $?" >> "$o/san-$tool.txt" ) &
done
wait
for tool in memcheck racecheck; do echo "$tool: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^test result" $o/san-$tool.txt | tr '\n' ' ') $(tail -1 $o/san-$tool.txt)"; done
tar czf $OUT/call9.tgz -C /tmp o
