#!/usr/bin/env bash
# v30 call 3: the u8 pair prototype with the next tile's loads in flight (pairs_prefetch), all
# distributions, CUB beside; ncu of the prefetching kernel on uniform bytes.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call3.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -o /tmp/u8p scripts/profile/u8_pairs.cu > $o/build-u8p.txt 2>&1; echo "build rc $?" >> $o/build-u8p.txt
timeout 200 /tmp/u8p > $o/u8-pairs.txt 2>&1; echo "rc $?" >> $o/u8-pairs.txt
cat $o/build-u8p.txt $o/u8-pairs.txt
# uniform launch order: atoms x11, pairs x22 (checked, unchecked), pairs_prefetch 1024x2, x3, x4 ...
timeout 100 ncu --set full -k regex:'^pairs_prefetch$' --launch-skip 25 --launch-count 1 -o $o/ncu-pf16 /tmp/u8p uniform > $o/ncu-pf16.log 2>&1
ncu --import $o/ncu-pf16.ncu-rep --page details > $o/ncu-pf16.txt 2>&1
ncu --import $o/ncu-pf16.ncu-rep --page source --csv --print-source sass > $o/ncu-pf16-sass.csv 2>/dev/null
python3 scripts/ncu/sass-summary.py $o/ncu-pf16-sass.csv 1.5 > $o/ncu-pf16-sass-summary.txt 2>&1
grep -E "^\s+Duration|L1/TEX Cache Throughput|DRAM Throughput|Achieved Occupancy|Issue Slots Busy|Warp Cycles Per Issued|Registers Per" $o/ncu-pf16.txt | head -12
head -20 $o/ncu-pf16-sass-summary.txt
