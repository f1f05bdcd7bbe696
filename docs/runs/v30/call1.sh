#!/usr/bin/env bash
# v30 call 1: the u8 byte-pair prototype (scripts/profile/u8_pairs.cu: one shared atomic per two
# bytes) with tally's u8 kernel and CUB in the same call; then the GPU tests of the histogram
# binaries and the Python package on b29f08f (the v29 follow-ups that no GPU had run).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call1.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin4/tally.xz
B=.gpu/bin4/tally
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/u8p scripts/profile/u8_pairs.cu > $o/build-u8p.txt 2>&1; echo "build rc $?" >> $o/build-u8p.txt
timeout 200 /tmp/u8p > $o/u8-pairs.txt 2>&1; echo "rc $?" >> $o/u8-pairs.txt
cat $o/build-u8p.txt $o/u8-pairs.txt
timeout 100 $B bench hist --backend cuda --dtypes u8 --bins 256 --distributions uniform,hot90,zipf --strategies auto --reps 20 > $o/bench-u8.txt 2>&1
grep -E "u8|read" $o/bench-u8.txt
# Tests, side by side (the GPU is shared; nothing timed runs beside them).
export TALLY_REQUIRE_GPU=1
for t in .gpu/tests4/*; do
  ( timeout 420 $t --test-threads=2 > $o/test-${t##*/}.txt 2>&1; echo "rc $?" >> $o/test-${t##*/}.txt ) &
done
(
  site=/tmp/tally-site; rm -rf $site
  python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/wheels/tally-*.whl > $o/py-install.txt 2>&1
  tests=$(realpath crates/tally-python/tests)
  cd /tmp && PYTHONPATH=$site timeout 420 python3 -m pytest -p no:cacheprovider -q "$tests/test_gpu.py" > $o/py-test_gpu.txt 2>&1; echo "rc $?" >> $o/py-test_gpu.txt
) &
wait
for f in $o/test-*.txt $o/py-test_gpu.txt; do echo "== ${f##*/}: $(grep -E '^test result|passed|failed' $f | tail -1) $(tail -1 $f)"; done
