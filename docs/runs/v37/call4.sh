#!/usr/bin/env bash
# v37 call 4: the committed library (b3) on the two-H200 host again. GPU 0: the look-back's
# knobs on the H200 (tiles numbered by block index, the waiting lanes' sleep; NVRTC defines
# through TALLY_NVRTC_OPTIONS, the default first and last) over select, the f32 scans, unique,
# encode and reduce-by-key at 2^28. Then both GPUs: tally bench multi twice (call 3's 0.85x from
# host memory), and the Python device set (wheel of the same library).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o4; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call4.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $o/info.txt
gpus=$(nvidia-smi -L | wc -l)
nccl=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])')/lib
[ -x .gpu/b3/tally ] || bash scripts/unpack-xz.sh .gpu/b3/*.xz
B=.gpu/b3/tally
export CUDA_VISIBLE_DEVICES=0
knob() {
  echo "== $*"
  env "$@" timeout 40 $B bench select --backend cuda --log2-sizes 28 --reps 10 --cases "select 1%,select 50%,select 99%" 2>&1
  env "$@" timeout 40 $B bench scan --backend cuda --log2-sizes 28 --reps 10 --cases "f32 sum det,f32 sum fast,f32 by key/8" 2>&1
  env "$@" timeout 30 $B bench unique --backend cuda --reps 10 2>&1
  env "$@" timeout 30 $B bench rle --backend cuda --reps 10 2>&1
  env "$@" timeout 40 $B bench reduce-by-key --backend cuda --reps 10 2>&1
}
{
  knob X=0
  knob TALLY_NVRTC_OPTIONS=-DTALLY_TILES_BY_BLOCK=1
  knob TALLY_NVRTC_OPTIONS="-DTALLY_LOOKBACK_SLEEP_AFTER=0 -DTALLY_LOOKBACK_SLEEP_NS=64"
  knob TALLY_NVRTC_OPTIONS=-DTALLY_LOOKBACK_SLEEP_AFTER=1000000
  knob X=1
} > $o/knobs.txt 2>&1
grep -E "^== |select|sum|by key|unique|rle|rbk" $o/knobs.txt | grep -v '^#' | awk '{print $1, $2, $3, $4, $5, $6}'
unset CUDA_VISIBLE_DEVICES
if [ "$gpus" -gt 1 ]; then
  for r in 1 2; do
    LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH NCCL_NVLS_ENABLE=0 timeout 150 $B bench multi --devices all --reps 7 > $o/bench-multi-$r.txt 2>&1
    echo "rc $?" >> $o/bench-multi-$r.txt
    grep -E "hist256|sum|scan|hist16M" $o/bench-multi-$r.txt
  done
  site=/tmp/py; rm -rf $site
  python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/wheel/tally-*.whl > $o/pip.txt 2>&1
  ( cd /tmp && PYTHONPATH=$site LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH NCCL_NVLS_ENABLE=0 timeout 150 python3 -m tally.bench --log2 --devices all --reps 10 > $o/python-bench-devices.txt 2>&1; echo "rc $?" >> $o/python-bench-devices.txt )
  tail -8 $o/python-bench-devices.txt
fi
echo "elapsed $SECONDS s"
