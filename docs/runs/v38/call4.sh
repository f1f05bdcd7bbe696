#!/usr/bin/env bash
# v38 call 4: the reductions on the H200 with the committed build (b3), not measured there since
# v32: tally bench reduce at 2^20/2^24/2^28 (f32, f64, i32; every op), and CUB, torch and CuPy
# from the same GPU in the same call.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o4; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call4.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b3/tally.xz
B=.gpu/b3/tally
export CUDA_VISIBLE_DEVICES=0
timeout 150 $B bench reduce --backend cuda --log2-sizes 20,24,28 --reps 30 > $o/bench-reduce.txt 2>&1; echo "rc $?" >> $o/bench-reduce.txt
grep -v '^#' $o/bench-reduce.txt | grep -E "268435456|1048576 |rc " | head -40
timeout 200 bash .gpu/peers/run-peers-primitives.sh > $o/peers.txt 2>&1; echo "rc $?" >> $o/peers.txt
grep -E "DeviceReduce::(Sum|Min|ArgMin)|torch\.(sum|argmin|aminmax)|cupy.sum|^rc " $o/peers.txt | grep -v -E "n= +(1024|65536) "
echo "elapsed $SECONDS s"
