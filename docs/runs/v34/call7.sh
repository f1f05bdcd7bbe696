#!/usr/bin/env bash
# v34 call 7 (one GPU, the machine of call 6 still warm): the kept-plan tests of select and the
# run primitives again, on their binaries of call 6's build (call 6 had carried older ones).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
bash scripts/unpack-xz.sh .gpu/b6n/*.xz; mkdir -p $OUT
for x in cuda_select cuda_runs; do
  timeout 100 .gpu/b6n/$x kept_plans > $OUT/test-$x-kept.txt 2>&1; echo "rc $?" >> $OUT/test-$x-kept.txt
  grep -E "test result|rc " $OUT/test-$x-kept.txt
done
