#!/usr/bin/env bash
# v32 call 9 (two GPUs): cuda_multi after the second review (a set whose tuning holds the
# counters' post back all-reduces them; the host-combine choice follows the tuning).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o9; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call9.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)/lib
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$nccl NCCL_NVLS_ENABLE=0 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
TALLY_REQUIRE_GPU=2 timeout 100 .gpu/t9/cuda_multi > $o/test-cuda_multi.txt 2>&1; echo "rc $?" >> $o/test-cuda_multi.txt
grep -E "^test |test result|rc " $o/test-cuda_multi.txt
