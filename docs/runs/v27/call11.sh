#!/usr/bin/env bash
# Session call 11 (v27, tests14: the scan tests of the tidy commit 6b41358, no change of
# behaviour intended). The tests, memcheck over all of them, racecheck and synccheck over the
# exact f32-by-key test.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/tests14/*.xz
sc=.gpu/tests14/cuda_scan
t() { echo "== $1 $(date +%T)"; }
t tests
TALLY_REQUIRE_GPU=1 timeout 300 $sc > $o/tests-cuda_scan.txt 2>&1; echo "rc $?" >> $o/tests-cuda_scan.txt
grep -E "^test result|^rc|panicked|FAILED|super_groups" $o/tests-cuda_scan.txt | head
t sanitizers
( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 400 compute-sanitizer --tool memcheck --error-exitcode 99 $sc --test-threads=1 --skip more_than > "$o/san-memcheck.txt" 2>&1; echo "rc $?" >> "$o/san-memcheck.txt" ) &
for tool in racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 timeout 400 compute-sanitizer --tool $tool --error-exitcode 99 $sc --test-threads=1 exact_across_super_groups > "$o/san-$tool.txt" 2>&1; echo "rc $?" >> "$o/san-$tool.txt" ) &
done
wait
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^test result" $o/san-$tool.txt | tr '\n' ' ') $(tail -1 $o/san-$tool.txt)"; done
t end
tar czf $OUT/call11.tgz -C /tmp o
