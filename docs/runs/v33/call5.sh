#!/usr/bin/env bash
# v33 call 5: the final build (kept set plans launch through one shared helper,
# DeviceSet::launch_kept_plans; two processes run kept plans and refuse a shorter shard on one
# rank): cuda_multi with two GPUs required, cuda_select, bench multi once.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o5; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call5.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)/lib
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$nccl NCCL_NVLS_ENABLE=0 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/b5/*.xz
TALLY_REQUIRE_GPU=2 timeout 150 .gpu/b5/cuda_multi --test-threads=1 > $o/tests-multi.txt 2>&1; echo "rc $?" >> $o/tests-multi.txt
grep -E "^test |test result|rc " $o/tests-multi.txt
CUDA_VISIBLE_DEVICES=1 TALLY_REQUIRE_GPU=1 timeout 200 .gpu/b5/cuda_select > $o/tests-select.txt 2>&1; echo "rc $?" >> $o/tests-select.txt
grep -E "test result|rc " $o/tests-select.txt
timeout 100 .gpu/b5/tally bench multi --devices all --reps 9 > $o/bench-multi.txt 2>&1
grep -v "^$" $o/bench-multi.txt
