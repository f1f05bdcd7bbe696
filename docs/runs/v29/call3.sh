#!/usr/bin/env bash
# v29 call 3: bin2 (two sets of counters zeroed at the kernel's end; one-launch plans post their
# outliers) against bin0 (v28, 109f5c5) alternating: small inputs end to end with CUB's in the
# same call, and f32 block-shared against warp-private from 256 to 2048 bins (auto's rule).
# Then bin2's histogram tests (TALLY_REQUIRE_GPU=1) with compute-sanitizer beside them.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call3.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_small_hist scripts/peers/cub_small_hist.cu > $o/build-cub_small_hist.txt 2>&1 ) &
for b in bin0 bin2; do
  .gpu/$b/tally bench hist --backend cuda --size 65536 --dtypes i32,u8,f32 --bins 256 --distributions uniform --strategies auto,warp-private --reps 3 > /dev/null 2>&1
done
for r in 1 2; do
  for b in bin2 bin0; do
    echo "# round $r $b"
    timeout 60 .gpu/$b/tally bench hist --backend cuda --size 1048576 --dtypes i32,u8,f32 --bins 256 --distributions uniform --strategies auto --reps 300 2>&1
    timeout 60 .gpu/$b/tally bench hist --backend cuda --size 65536 --dtypes i32 --bins 256,4096 --distributions uniform --strategies auto --reps 300 2>&1
    timeout 60 .gpu/$b/tally bench hist --backend cuda --size 16777216 --dtypes i32 --bins 256 --distributions uniform --strategies auto --reps 100 2>&1
  done
done > $o/small.txt 2>&1
grep -E "^#|^(i32|u8|f32) " $o/small.txt
wait
timeout 60 /tmp/cub_small_hist > $o/cub-small.txt 2>&1; cat $o/cub-small.txt
for r in 1 2; do
  for b in bin2 bin0; do
    echo "# round $r $b"
    timeout 150 .gpu/$b/tally bench hist --backend cuda --dtypes f32 --bins 256,512,1024,2048 --distributions uniform,hot90 --strategies block-shared,warp-private --reps 20 2>&1
  done
done > $o/f32-rule.txt 2>&1
grep -E "^#|^f32 " $o/f32-rule.txt
timeout 120 .gpu/bin2/tally bench hist --backend cuda --dtypes f16,bf16,f64,i16,u16 --bins 256 --distributions uniform --strategies auto,block-shared,warp-private --reps 20 > $o/other-types.txt 2>&1
grep -E "^(f16|bf16|f64|i16|u16) " $o/other-types.txt
T=.gpu/tests2
export TALLY_REQUIRE_GPU=1
( timeout 380 $T/cuda_histogram --test-threads=2 > $o/test-cuda_histogram.txt 2>&1; echo "rc $?" >> $o/test-cuda_histogram.txt ) &
(
  for t in cuda_stream cuda_partition cuda_external cuda_properties; do
    timeout 200 $T/$t --test-threads=2 > $o/test-$t.txt 2>&1; echo "rc $?" >> $o/test-$t.txt
  done
) &
for tool in memcheck racecheck synccheck; do
  ( TALLY_SMALL=1 TALLY_SKIP_HUGE=1 timeout 380 compute-sanitizer --tool $tool --error-exitcode 99 $T/cuda_histogram --test-threads=1 > $o/san-$tool.txt 2>&1; echo "rc $?" >> $o/san-$tool.txt ) &
done
wait
for f in $o/test-*.txt; do echo "== $f: $(grep -E '^test result' $f | tail -1) $(tail -1 $f)"; grep -E "FAILED|panicked" $f | head -5; done
for f in $o/san-*.txt; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^rc|test result|^test .*ok$" $f | tail -8; done
