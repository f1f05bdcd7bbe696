#!/usr/bin/env bash
# v31 call 5: issue 17's case with call 2's CLI (1 MiB pieces, cached pinned buffers): 256-bin
# histograms and an f32 sum of a 32 GiB file in the page cache, against the pinned upload of the
# same run.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call5.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
bash scripts/unpack-xz.sh .gpu/bin5/tally.xz
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; free -g | head -2; df -h /tmp | tail -1; } | tee $o/info.txt
timeout 420 .gpu/bin5/tally bench stream --source file --dir /tmp --size-gib 32 --buffers 2 --reps 3 > $o/bench-stream-file-32g.txt 2>&1
echo "rc $?" >> $o/bench-stream-file-32g.txt
cat $o/bench-stream-file-32g.txt
