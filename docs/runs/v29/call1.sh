#!/usr/bin/env bash
# v29 call 1: issue 14's table in one call with CUB and PyTorch beside it (bin1 = the build with
# two sets of counters for small histogram plans), and the small-input calls with and without
# the second set (TALLY_SPARE_COUNTERS=0: two memsets and the kernel, as before) alternating.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
# Whatever ran comes back, even if the call's time runs out.
trap 'tar czf "${OUT:-gpu-out}/call1.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
(
  for p in cub_large_bins cub_hist_float cub_small_hist; do
    nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/$p scripts/peers/$p.cu > $o/build-$p.txt 2>&1
  done
  nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_peer .gpu/peers/cub_peer.cu > $o/build-cub_peer.txt 2>&1
) &
B=.gpu/bin1/tally
# Compile every kernel the small runs use once, outside any timing.
$B bench hist --backend cuda --size 65536 --dtypes i32,u8,f32 --bins 256 --distributions uniform --strategies auto,block-shared,global-atomic --reps 3 > /dev/null 2>&1
for r in 1 2; do
  for spare in 1048576 0; do
    echo "# round $r, TALLY_SPARE_COUNTERS=$spare"
    TALLY_SPARE_COUNTERS=$spare timeout 100 $B bench hist --backend cuda --size 1048576 --dtypes i32,u8,f32 --bins 256 --distributions uniform --strategies auto,block-shared,global-atomic --reps 300 2>&1
    TALLY_SPARE_COUNTERS=$spare timeout 60 $B bench hist --backend cuda --size 65536 --dtypes i32 --bins 256 --distributions uniform --strategies auto --reps 300 2>&1
    TALLY_SPARE_COUNTERS=$spare timeout 60 $B bench hist --backend cuda --size 16777216 --dtypes i32 --bins 256 --distributions uniform --strategies auto --reps 100 2>&1
  done
done > $o/small.txt
cat $o/small.txt | grep -E "^#|i32|u8|f32"
wait
/tmp/cub_small_hist > $o/cub-small.txt 2>&1; cat $o/cub-small.txt
# The table (2^28 samples).
{
  timeout 120 $B bench hist --backend cuda --dtypes i32 --bins 256,4096,16384 --distributions uniform,hot90,zipf --reps 20
  timeout 120 $B bench hist --backend cuda --dtypes i32 --bins 65536 --distributions uniform,zipf --strategies auto,block-shared-16,global-l2,partition,cluster-shared-16,global-atomic --reps 10
  timeout 150 $B bench hist --backend cuda --dtypes i32 --bins 1048576,16777216 --distributions uniform,zipf --strategies auto,partition,global-l2 --reps 10
  timeout 120 $B bench hist --backend cuda --dtypes u8 --bins 256 --distributions uniform,hot90,zipf --strategies auto,global-atomic,block-shared,warp-private,warp-aggregated,block-shared-16 --reps 20
  timeout 150 $B bench hist --backend cuda --dtypes f32 --bins 256,4096,16384 --distributions uniform,hot90,hot100,zipf --reps 20
} > $o/bench-hist.txt 2>&1
timeout 120 $B bench weighted --backend cuda --distributions uniform,hot90 --strategies auto,global-atomic,block-shared,global-l2 --accumulations halves,native64 --reps 10 > $o/bench-weighted.txt 2>&1
timeout 120 $B bench hist2d --backend cuda --reps 10 > $o/bench-hist2d.txt 2>&1
cat $o/bench-hist.txt $o/bench-weighted.txt $o/bench-hist2d.txt | grep -v "^\s*$"
# Peers: CUB HistogramEven (i32 and u8 at 256 bins, f32 at 256-16384, 1M and 16M bins with the
# naive kernel), torch.histc / bincount.
timeout 120 /tmp/cub_peer > $o/cub-peer.txt 2>&1; echo "rc $?" >> $o/cub-peer.txt
timeout 120 /tmp/cub_hist_float > $o/cub-float.txt 2>&1; echo "rc $?" >> $o/cub-float.txt
timeout 150 /tmp/cub_large_bins > $o/cub-large.txt 2>&1; echo "rc $?" >> $o/cub-large.txt
timeout 150 python3 scripts/peers/torch_large_bins.py > $o/torch-large.txt 2>&1; echo "rc $?" >> $o/torch-large.txt
PYTHONUNBUFFERED=1 timeout 150 python3 .gpu/peers/torch_peer.py > $o/torch-peer.txt 2>&1; echo "rc $?" >> $o/torch-peer.txt
cat $o/cub-peer.txt $o/cub-float.txt $o/cub-large.txt $o/torch-large.txt $o/torch-peer.txt
