#!/usr/bin/env bash
# Session call 8: 8-bit samples' block-shared copy striped over the lanes (bin41) against bin40
# alternating, CUB's u8 HistogramEven in the same call (run-peers.sh); the histogram and property
# tests, compute-sanitizer over the u8 tests.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
t u8-ab
for round in 1 2; do
  for b in bin41 bin40; do
    echo "# $b"; .gpu/$b/tally bench hist --dtypes u8 --bins 256 --distributions uniform,hot90,hot100,zipf --strategies auto,block-shared --reps 20 2>&1
  done
done > $o/bench-u8-ab.txt
grep -E "^# bin|u8" $o/bench-u8-ab.txt
.gpu/bin41/tally bench hist --dtypes u8,i32,f32 --bins 16,100,256 --distributions uniform,hot90 --strategies auto --reps 20 > $o/bench-small-bins.txt 2>&1
cat $o/bench-small-bins.txt
t peers
timeout 300 bash .gpu/peers/run-peers.sh > $o/peers.txt 2>&1
grep -E "u8|device" $o/peers.txt
t tests
B=.gpu/tests42
for n in cuda_histogram cuda_properties; do
  ( TALLY_REQUIRE_GPU=1 timeout 420 $B/$n-* > $o/test-$n.txt 2>&1; echo "rc $?" >> $o/test-$n.txt ) &
done
san() { local tool=$1 bin=$2 name=$3; shift 3
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 TALLY_SKIP_HUGE=1 timeout 420 compute-sanitizer --tool $tool --error-exitcode 99 $B/$bin-* --test-threads=1 "$@" > $o/san-$name-$tool.txt 2>&1; echo "rc $?" >> $o/san-$name-$tool.txt ) & }
san memcheck cuda_histogram hist cuda_matches_reference_u8 cuda_skewed
san racecheck cuda_histogram hist cuda_matches_reference_u8
san synccheck cuda_histogram hist cuda_matches_reference_u8
wait
grep -H -E "^test result|^rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED|failed" $o/test-*.txt $o/san-*.txt | sed 's@/tmp/o/@@' | head -30
tar czf "${OUT:-gpu-out}/call8.tgz" -C $o .
t done
