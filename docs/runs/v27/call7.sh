#!/usr/bin/env bash
# Session call 7 (v27, bin11: the committed policy, widening scans numbered by block and the
# f32 sum by key at 512 x 6 x 2 with one window): its scan tests and compute-sanitizer over them;
# bench scan of bin11 against bin9 (v26's policy; the same kernels otherwise) alternating twice;
# select and the run primitives of bin11 (unchanged policy: a check); CUB and torch in the same call.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin9/tally.xz .gpu/bin11/tally.xz .gpu/tests11/*.xz
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_primitives .gpu/peers/cub_primitives.cu > $o/cub-build.txt 2>&1 ) &
t() { echo "== $1 $(date +%T)"; }
sc=.gpu/tests11/cuda_scan
t tests
TALLY_REQUIRE_GPU=1 timeout 300 $sc > $o/tests-cuda_scan.txt 2>&1; echo "rc $?" >> $o/tests-cuda_scan.txt
grep -E "^test result|^rc|panicked|FAILED" $o/tests-cuda_scan.txt | head
for r in 1 2; do
  for b in bin9 bin11; do
    timeout 120 .gpu/$b/tally bench scan --backend cuda --log2-sizes 20,24,28 --reps 20 > $o/scan-$b-r$r.txt 2>&1
    echo "-- $b round $r"; grep -v "^#\|^case" $o/scan-$b-r$r.txt | grep -v " 1048576 "
  done
done
t others
timeout 90 .gpu/bin11/tally bench select --backend cuda --log2-sizes 24,28 --reps 20 --cases "select 1%,select 50%,select 99%" > $o/select.txt 2>&1
for what in rle unique reduce-by-key; do
  timeout 60 .gpu/bin11/tally bench $what --backend cuda --log2-sizes 24,28 --reps 20 > $o/$what.txt 2>&1
done
cat $o/{select,rle,unique,reduce-by-key}.txt | grep -v "^#\|^case"
wait
t peers
timeout 150 /tmp/cub_primitives > $o/cub.txt 2>&1; echo "rc $?" >> $o/cub.txt
grep -E "DeviceScan|ByKey|Select|Unique|RunLength|^rc" $o/cub.txt | grep -E "n= *(16777216|268435456)|^rc"
timeout 150 python3 .gpu/peers/torch_primitives.py > $o/torch.txt 2>&1; echo "rc $?" >> $o/torch.txt
grep -E "cumsum|^rc" $o/torch.txt | grep -E "n= *(16777216|268435456)|^rc"
t sanitizers
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 400 compute-sanitizer --tool $tool --error-exitcode 99 $sc --test-threads=1 --skip more_than > "$o/san-$tool.txt" 2>&1; echo "rc $?" >> "$o/san-$tool.txt" ) &
done
wait
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^test result" $o/san-$tool.txt | tr '\n' ' ') $(tail -1 $o/san-$tool.txt)"; done
t end
tar czf $OUT/call7.tgz -C /tmp o
