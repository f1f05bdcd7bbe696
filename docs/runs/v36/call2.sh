#!/usr/bin/env bash
# v36 call 2 (the same build, b1; call 1's sweep and Python files did not come back: a call
# returns few files, so this one packs them): the scatter's shapes, the warp scan against the
# block scan once more, and the Python DeviceSet against one GPU.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o2; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call2.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache TALLY_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b1/tally.xz
nccl=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])')/lib
B=.gpu/b1/tally
site=/tmp/py
python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/b1/tally-*.whl > $o/pip.txt 2>&1
( cd /tmp && PYTHONPATH=$site LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH timeout 200 python3 -m tally.bench --log2 --devices all --reps 10 > $o/python-bench-devices.txt 2>&1; echo "rc $?" >> $o/python-bench-devices.txt )
tail -8 $o/python-bench-devices.txt
export CUDA_VISIBLE_DEVICES=0
big="--backend cuda --dtypes i32 --bins 1048576,16777216 --distributions uniform,zipf --reps 10"
timeout 150 $B bench hist $big --strategies partition > $o/bench-new-2.txt 2>&1
TALLY_NVRTC_OPTIONS=-DTALLY_PARTITION_WARP_SCAN_CHUNKS=0 timeout 150 $B bench hist $big --strategies partition > $o/bench-blockscan-3.txt 2>&1
for shape in 512,8,2 512,16,3 256,16,4 256,32,2 1024,16,1; do
  IFS=, read th it bl <<< "$shape"
  TALLY_PARTITION_THREADS=$th TALLY_PARTITION_ITEMS=$it TALLY_PARTITION_BLOCKS_PER_SM=$bl \
    timeout 150 $B bench hist $big --strategies partition > $o/sweep-$th-$it-$bl.txt 2>&1
  echo "$shape $SECONDS s"
done
grep -h "partition " $o/bench-new-2.txt $o/bench-blockscan-3.txt $o/sweep-*.txt | awk '{print $2, $3, $6}'
