#!/usr/bin/env bash
# v34 call 10 (two GPUs): cuda_multi on the build whose status gathers share one helper (gather_with)
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o10; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call10.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache NCCL_NVLS_ENABLE=0
nccl=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])')/lib
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$nccl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b10/cuda_multi.xz
TALLY_REQUIRE_GPU=2 timeout 200 .gpu/b10/cuda_multi two_processes --nocapture > $o/tests-multi-two-processes.txt 2>&1; echo "rc $?" >> $o/tests-multi-two-processes.txt
tail -5 $o/tests-multi-two-processes.txt
grep -E "OUTCOMES|panicked" $o/tests-multi-two-processes.txt | head
TALLY_REQUIRE_GPU=2 timeout 250 .gpu/b10/cuda_multi --test-threads=1 > $o/tests-multi.txt 2>&1; echo "rc $?" >> $o/tests-multi.txt
grep -E "^test |test result|rc " $o/tests-multi.txt
