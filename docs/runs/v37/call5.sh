#!/usr/bin/env bash
# v37 call 5: the committed library (b3) on the H200 host, one GPU: issue 16's Python bench
# against the Rust CLI of the same library (2^28, `--rust`), and issue 17's streaming from host
# memory against the pinned upload.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o5; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call5.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache CUDA_VISIBLE_DEVICES=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
[ -x .gpu/b3/tally ] || bash scripts/unpack-xz.sh .gpu/b3/*.xz
B=$(realpath .gpu/b3/tally)
timeout 60 $B bench stream --source host --size-gib 4 --buffers 2 --reps 3 > $o/bench-stream-host-4g.txt 2>&1
echo "rc $?" >> $o/bench-stream-host-4g.txt
grep -v '^$' $o/bench-stream-host-4g.txt | tail -6
site=/tmp/py; rm -rf $site
python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/wheel/tally-*.whl > $o/pip.txt 2>&1
( cd /tmp && PYTHONPATH=$site timeout 170 python3 -m tally.bench --log2 28 --reps 10 --rust $B > $o/python-bench.txt 2>&1; echo "rc $?" >> $o/python-bench.txt )
tail -40 $o/python-bench.txt
echo "elapsed $SECONDS s"
