#!/usr/bin/env bash
# Session call 6: reduce-by-key of i32 values into i64 sums (bin5) at other tile shapes, through
# the tuning variables: the default 128 threads x 8 rows stages about 78 KiB a tile (keys,
# values, places and the 8-byte run values by slot), so 2 blocks fit a multiprocessor.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin5/tally.xz
B=.gpu/bin5/tally
shape() { local name=$1; shift; env "$@" timeout 60 $B bench reduce-by-key --backend cuda --log2-sizes 24,28 --reps 20 --cases i64 > $o/rbk-$name.txt 2>&1; echo "== $name"; grep -v "^#" $o/rbk-$name.txt | tail -n +2; }
for round in 1 2; do
  shape default-r$round
  shape 128x4x4-r$round TALLY_COMPACT_VECS=4
  shape 128x4x5-r$round TALLY_COMPACT_VECS=4 TALLY_COMPACT_MIN_BLOCKS=5
  shape 256x2x4-r$round TALLY_COMPACT_THREADS=256 TALLY_COMPACT_VECS=2
  shape 128x6x3-r$round TALLY_COMPACT_VECS=6 TALLY_COMPACT_MIN_BLOCKS=3
  shape 128x8x2-r$round TALLY_COMPACT_MIN_BLOCKS=2
done
tar czf "${OUT:-gpu-out}/call6.tgz" -C $o .
