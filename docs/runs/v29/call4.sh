#!/usr/bin/env bash
# v29 call 4: bin3 (thread 0 alone fences before the ticket) against bin2 (every thread fenced)
# and bin0 (v28) alternating, small and large inputs; racecheck over the new histogram test;
# cuda_stream (streamed chunks launch unposted) alone.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call4.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin0/tally.xz .gpu/bin2/tally.xz .gpu/bin3/tally.xz
export TALLY_REQUIRE_GPU=1
( TALLY_SMALL=1 TALLY_SKIP_HUGE=1 timeout 200 compute-sanitizer --tool racecheck --error-exitcode 99 .gpu/tests3/cuda_histogram --test-threads=1 cuda_plans_post cuda_matches_reference_i32 cuda_matches_reference_u8 > $o/san-racecheck.txt 2>&1; echo "rc $?" >> $o/san-racecheck.txt ) &
( TALLY_SMALL=1 TALLY_SKIP_HUGE=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 99 .gpu/tests3/cuda_histogram --test-threads=1 cuda_plans_post > $o/san-memcheck.txt 2>&1; echo "rc $?" >> $o/san-memcheck.txt ) &
wait
timeout 150 .gpu/tests3/cuda_stream --test-threads=2 > $o/test-cuda_stream.txt 2>&1; echo "rc $?" >> $o/test-cuda_stream.txt
timeout 60 .gpu/tests3/cuda_histogram --test-threads=1 cuda_plans_post > $o/test-cuda_histogram-post.txt 2>&1; echo "rc $?" >> $o/test-cuda_histogram-post.txt
for b in bin0 bin2 bin3; do
  .gpu/$b/tally bench hist --backend cuda --size 65536 --dtypes i32,u8 --bins 256 --distributions uniform --strategies auto --reps 3 > /dev/null 2>&1
done
for r in 1 2; do
  for b in bin3 bin2 bin0; do
    echo "# round $r $b"
    timeout 60 .gpu/$b/tally bench hist --backend cuda --size 1048576 --dtypes i32,u8 --bins 256 --distributions uniform --strategies auto --reps 300 2>&1
    timeout 60 .gpu/$b/tally bench hist --backend cuda --size 65536 --dtypes i32 --bins 256 --distributions uniform --strategies auto --reps 300 2>&1
    timeout 60 .gpu/$b/tally bench hist --backend cuda --size 16777216 --dtypes i32 --bins 256 --distributions uniform --strategies auto --reps 100 2>&1
    timeout 90 .gpu/$b/tally bench hist --backend cuda --dtypes i32,u8 --bins 256 --distributions uniform --strategies auto --reps 20 2>&1
  done
done > $o/small.txt 2>&1
grep -E "^#|^(i32|u8|f32) " $o/small.txt
for f in $o/test-*.txt; do echo "== $f: $(grep -E '^test result' $f | tail -1) $(tail -1 $f)"; done
for f in $o/san-*.txt; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^rc|test result|^test " $f | tail -8; done
