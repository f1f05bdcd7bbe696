#!/usr/bin/env bash
# Session call 3 (v27): bin10 = bin9 with the policy numbering widening scans' tiles by block
# index. Its scan tests; bench scan of bin10 against bin9 (the counter everywhere) alternating;
# shapes of the f32 scan by key and reduce-by-key's f32 sums (knobs only); CUB and torch in the
# same call; compute-sanitizer over the scan tests last.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin9/tally.xz .gpu/bin10/tally.xz .gpu/tests10/*.xz
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_primitives .gpu/peers/cub_primitives.cu > $o/cub-build.txt 2>&1 ) &
t() { echo "== $1 $(date +%T)"; }
sc=.gpu/tests10/cuda_scan
t tests
TALLY_REQUIRE_GPU=1 timeout 300 $sc > $o/tests-cuda_scan.txt 2>&1; echo "rc $?" >> $o/tests-cuda_scan.txt
grep -E "^test result|^rc|panicked|FAILED" $o/tests-cuda_scan.txt | head
for r in 1 2; do
  for b in bin9 bin10; do
    timeout 90 .gpu/$b/tally bench scan --backend cuda --log2-sizes 20,24,28 --reps 20 --cases "sum,i64" > $o/scan-$b-r$r.txt 2>&1
    echo "-- $b round $r"; grep -v "^#\|^case" $o/scan-$b-r$r.txt
  done
done
t by-key-shapes
for s in 256:4:4 256:4:5 256:8:2 256:8:3 128:8:4 128:8:6 128:16:3 512:4:2 256:6:3; do
  IFS=: read th v b <<< "$s"
  TALLY_SCAN_BLOCK_THREADS=$th TALLY_SCAN_VECS=$v TALLY_SCAN_MIN_BLOCKS=$b timeout 60 .gpu/bin10/tally bench scan --backend cuda --log2-sizes 24,28 --reps 20 --cases "f32 by key/8" > $o/bykey-$th-$v-$b.txt 2>&1
  echo "threads $th rows $v blocks $b"; grep -E "^f32" $o/bykey-$th-$v-$b.txt
done
t rbk-shapes
for s in 128:8:4 128:4:8 128:4:6 128:8:5 256:4:4 256:8:2 64:8:8 128:16:2; do
  IFS=: read th v b <<< "$s"
  TALLY_COMPACT_THREADS=$th TALLY_COMPACT_VECS=$v TALLY_COMPACT_MIN_BLOCKS=$b timeout 60 .gpu/bin10/tally bench reduce-by-key --backend cuda --log2-sizes 24,28 --reps 20 --cases "rbk i32/8 f32" > $o/rbk-$th-$v-$b.txt 2>&1
  echo "threads $th rows $v blocks $b"; grep -E "^rbk|rror" $o/rbk-$th-$v-$b.txt
done
wait
t peers
timeout 150 /tmp/cub_primitives > $o/cub.txt 2>&1; echo "rc $?" >> $o/cub.txt
grep -E "DeviceScan|ByKey|^rc" $o/cub.txt | grep -E "n= *(16777216|268435456)|^rc"
timeout 150 python3 .gpu/peers/torch_primitives.py > $o/torch.txt 2>&1; echo "rc $?" >> $o/torch.txt
grep -E "cumsum|^rc" $o/torch.txt
t sanitizers
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 400 compute-sanitizer --tool $tool --error-exitcode 99 $sc --test-threads=1 --skip more_than > "$o/san-$tool.txt" 2>&1; echo "rc $?" >> "$o/san-$tool.txt" ) &
done
wait
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^test result" $o/san-$tool.txt | tr '\n' ' ') $(tail -1 $o/san-$tool.txt)"; done
t end
tar czf $OUT/call3.tgz -C /tmp o
