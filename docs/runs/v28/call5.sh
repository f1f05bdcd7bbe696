#!/usr/bin/env bash
# Session call 5 (v28, bin5 = the build to be committed: swizzled run tiles, compacted float
# reduce-by-key, memsets only for checked sums): its run and scan tests; the Python package's
# GPU tests (wheel of the same source) and compute-sanitizer over the run tests, side by side; benches of bin5
# against bin1 (v27) alternating twice, with CUB and torch in the same call; the run primitives
# with tiles numbered by block index (an NVRTC define) on the new layout.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin1/tally.xz .gpu/bin5/tally.xz .gpu/tests5/*.xz
t() { echo "== $1 $(date +%T)"; }
t tests
for b in cuda_runs cuda_properties_runs cuda_scan; do
  TALLY_REQUIRE_GPU=1 timeout 300 .gpu/tests5/$b > $o/tests-$b.txt 2>&1; echo "rc $?" >> $o/tests-$b.txt
  echo "$b: $(grep -E "^test result|^rc|panicked|FAILED" $o/tests-$b.txt | head -5 | tr '\n' ' ')"
done
t sanitizers-and-python
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 200 compute-sanitizer --tool $tool --error-exitcode 99 .gpu/tests5/cuda_runs --test-threads=1 --skip more_than > "$o/san-$tool.txt" 2>&1; echo "rc $?" >> "$o/san-$tool.txt" ) &
done
site=/tmp/tally-site; rm -rf $site
python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/wheels/tally-*.whl > $o/py-install.txt 2>&1
tests=$(realpath crates/tally-python/tests)
(cd /tmp && PYTHONPATH=$site TALLY_REQUIRE_GPU=1 timeout 240 python3 -m pytest -p no:cacheprovider -q "$tests/test_gpu.py" > $o/py-test-gpu.txt 2>&1; echo "rc $?" >> $o/py-test-gpu.txt)
tail -3 $o/py-test-gpu.txt
wait
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^test result" $o/san-$tool.txt | tr '\n' ' ') $(tail -1 $o/san-$tool.txt)"; done
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_primitives .gpu/peers/cub_primitives.cu > $o/cub-build.txt 2>&1 ) &
t bench
for r in 1 2; do
  for b in bin1 bin5; do
    for what in reduce-by-key rle unique; do
      timeout 60 .gpu/$b/tally bench $what --backend cuda --log2-sizes 20,24,28 --reps 20 > $o/$what-$b-r$r.txt 2>&1
    done
    timeout 60 .gpu/$b/tally bench scan --backend cuda --log2-sizes 20,24,28 --reps 20 --cases "f32 sum,i32->i64 sum" > $o/scan-$b-r$r.txt 2>&1
    echo "-- $b round $r"; cat $o/{reduce-by-key,rle,unique,scan}-$b-r$r.txt | grep -v "^#\|^case"
  done
done
t tiles-by-block
for what in reduce-by-key rle; do
  TALLY_NVRTC_OPTIONS=-DTALLY_TILES_BY_BLOCK=1 timeout 60 .gpu/bin5/tally bench $what --backend cuda --log2-sizes 24,28 --reps 20 > $o/$what-bin5-by-block.txt 2>&1
  grep -v "^#\|^case" $o/$what-bin5-by-block.txt
done
wait
t peers
timeout 150 /tmp/cub_primitives > $o/cub.txt 2>&1; echo "rc $?" >> $o/cub.txt
grep -E "DeviceScan|ByKey|Unique|RunLength|^rc" $o/cub.txt | grep -E "n= *(1048576|16777216|268435456)|^rc"
timeout 150 python3 .gpu/peers/torch_primitives.py > $o/torch.txt 2>&1; echo "rc $?" >> $o/torch.txt
grep -E "cumsum|unique|^rc" $o/torch.txt | grep -E "n= *(268435456)|^rc"
t end
tar czf $OUT/call5.tgz -C /tmp o
