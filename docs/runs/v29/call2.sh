#!/usr/bin/env bash
# v29 call 2: ncu of the u8 256-bin uniform row (the table's miss), then bin1's histogram test
# binaries (TALLY_REQUIRE_GPU=1) and compute-sanitizer memcheck, racecheck and synccheck over
# cuda_histogram (TALLY_SMALL=1, TALLY_SKIP_HUGE=1).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call2.tgz" --exclude="*.ncu-rep" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
B=.gpu/bin1/tally
$B bench hist --backend cuda --dtypes u8,i32 --bins 256 --distributions uniform,hot90 --strategies block-shared --reps 3 > /dev/null 2>&1
for d in uniform hot90; do
  timeout 150 ncu --set full --import-source yes --kernel-name regex:'^tally_histogram$' --launch-skip 3 --launch-count 1 -o $o/u8-$d \
    $B bench hist --backend cuda --dtypes u8 --bins 256 --distributions $d --strategies block-shared --reps 3 > $o/u8-$d-run.txt 2>&1
  ncu --import $o/u8-$d.ncu-rep --page details > $o/u8-$d.txt 2>&1
  ncu --import $o/u8-$d.ncu-rep --page source --csv --print-source sass > $o/u8-$d-sass.csv 2>&1
  python3 scripts/ncu/sass-summary.py $o/u8-$d-sass.csv 1.5 > $o/u8-$d-sass-summary.txt 2>&1
  xz -T2 -6 $o/u8-$d-sass.csv
done
# i32 at 256 bins, uniform (read-bound: 100% of read on this device), for the pipes' contrast.
timeout 120 ncu --set full --kernel-name regex:'^tally_histogram$' --launch-skip 3 --launch-count 1 -o $o/i32-uniform \
  $B bench hist --backend cuda --dtypes i32 --bins 256 --distributions uniform --strategies block-shared --reps 3 > $o/i32-uniform-run.txt 2>&1
ncu --import $o/i32-uniform.ncu-rep --page details > $o/i32-uniform.txt 2>&1
grep -E "Duration|Throughput|Pipe|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Issue Slots|Executed Ipc" $o/u8-uniform.txt $o/u8-hot90.txt $o/i32-uniform.txt
head -30 $o/u8-uniform-sass-summary.txt
# The v23 prototype of per-thread byte counters (6x slower than the atomics, never profiled).
nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -o /tmp/u8c scripts/profile/u8_columns.cu > $o/u8c-build.txt 2>&1
timeout 60 /tmp/u8c > $o/u8c.txt 2>&1; cat $o/u8c.txt
timeout 120 ncu --set full --import-source yes --kernel-name columns --launch-skip 2 --launch-count 1 -o $o/u8c /tmp/u8c > $o/u8c-ncu-run.txt 2>&1
ncu --import $o/u8c.ncu-rep --page details > $o/u8c-details.txt 2>&1
ncu --import $o/u8c.ncu-rep --page source --csv --print-source sass > $o/u8c-sass.csv 2>&1
python3 scripts/ncu/sass-summary.py $o/u8c-sass.csv 1.5 > $o/u8c-sass-summary.txt 2>&1; xz -T2 -6 $o/u8c-sass.csv
grep -E "Duration|Pipe|Warp Cycles Per Issued|Registers Per|Achieved Occupancy" $o/u8c-details.txt; head -30 $o/u8c-sass-summary.txt
T=.gpu/tests1
export TALLY_REQUIRE_GPU=1
for t in cuda_histogram cuda_partition cuda_half cuda_stream cuda_external cuda_properties; do
  timeout 300 $T/$t --test-threads=2 > $o/test-$t.txt 2>&1; echo "rc $?" >> $o/test-$t.txt
  echo "== $t: $(grep -E '^test result' $o/test-$t.txt | tail -1) $(tail -1 $o/test-$t.txt)"
done
export TALLY_SMALL=1 TALLY_SKIP_HUGE=1
for tool in memcheck racecheck synccheck; do
  ( timeout 280 compute-sanitizer --tool $tool --error-exitcode 99 $T/cuda_histogram --test-threads=1 > $o/san-$tool.txt 2>&1; echo "rc $?" >> $o/san-$tool.txt ) &
done
wait
for f in $o/san-*.txt; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^rc|test result" $f | tail -6; done
