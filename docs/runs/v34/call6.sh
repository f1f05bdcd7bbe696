#!/usr/bin/env bash
# v34 call 6 (one GPU): checked scans keep their overflow flag in the kept tile states' header
# (b6n): the kept-plan tests of the three look-back primitives and cuda_scan whole, memcheck
# over the new overflow test; v33's build (b6) against b6n on the scans at 2^16-2^24, i32 into
# i64 (checked) among them, interleaved, two rounds.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o6; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call6.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b6/tally.xz .gpu/b6n/*.xz
t=.gpu/b6n
for x in cuda_select cuda_runs; do
  timeout 100 $t/$x kept_plans > $o/test-$x-kept.txt 2>&1; echo "rc $?" >> $o/test-$x-kept.txt
  grep -E "test result|rc " $o/test-$x-kept.txt
done
timeout 200 $t/cuda_scan --test-threads=2 > $o/test-cuda_scan.txt 2>&1; echo "rc $?" >> $o/test-cuda_scan.txt
grep -E "test result|rc |FAILED|panicked" $o/test-cuda_scan.txt
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 99 $t/cuda_scan kept_checked > $o/san-scan-memcheck.txt 2>&1; echo "rc $?" >> $o/san-scan-memcheck.txt
grep -E "ERROR SUMMARY|test result|rc " $o/san-scan-memcheck.txt
for r in 1 2; do
  for b in b6 b6n; do
    echo "== $b round $r"
    timeout 60 .gpu/$b/tally bench scan --backend cuda --log2-sizes 16,20,24 --reps 100 --cases "f32 sum det,f32 sum fast,i32->i64 sum,i32->i64 by key/8" 2>&1
  done
done > $o/bench.txt 2>&1
grep -E "^== |sum|by key" $o/bench.txt
