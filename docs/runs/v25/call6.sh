#!/usr/bin/env bash
# Session call 6: call 5's benches again, alone on the GPU (in call 5 they ran beside
# compute-sanitizer, which shared the card): the final figures of bin51.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
B=.gpu/bin51/tally
timeout 100 $B bench hist --backend cuda --dtypes i32 --bins 1048576,16777216 --distributions uniform,zipf,hot90 --strategies auto --reps 10 > $o/bench-hist.txt 2>&1
cat $o/bench-hist.txt
timeout 100 $B bench hist2d --backend cuda --reps 10 --strategies auto,global-l2 > $o/bench-hist2d.txt 2>&1
cat $o/bench-hist2d.txt
tar czf "${OUT:-gpu-out}/call6.tgz" -C $o .
