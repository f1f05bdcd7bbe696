#!/usr/bin/env bash
# Session call 6: the committed build (bin40 = 32f75b0's kernels) measured whole, with CUB and
# PyTorch in the same call: exact and plain reductions, the histogram sweep (u8, i32, f32, f16),
# weighted and 2-D histograms, then the histogram peers.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
T=.gpu/bin40/tally
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
t reduce
$T bench reduce --backend cuda --log2-sizes 24,28 --dtypes f32,f64,f16 --ops sum,exact-sum --reps 30 > $o/bench-reduce.txt 2>&1
cat $o/bench-reduce.txt
t hist
$T bench hist --dtypes u8,i32,f32,f16 --bins 256,4096,16384 --distributions uniform,hot90,zipf --strategies auto,block-shared --reps 20 > $o/bench-hist.txt 2>&1
grep -E "#|auto" $o/bench-hist.txt
t weighted-2d
$T bench weighted --distributions uniform,hot90 --accumulations halves,native64,float --strategies auto --reps 20 > $o/bench-weighted.txt 2>&1
$T bench hist2d --reps 10 > $o/bench-hist2d.txt 2>&1
cat $o/bench-weighted.txt $o/bench-hist2d.txt
t peers
timeout 400 bash .gpu/peers/run-peers.sh > $o/peers.txt 2>&1
cat $o/peers.txt | head -80
tar czf "${OUT:-gpu-out}/call6.tgz" -C $o .
t done
