#!/usr/bin/env bash
# v31 call 7: scripts/profile/stream_fill.cpp as committed (buffers poisoned before each timed
# run, whole chunks checked after), on an 8 GiB file, with the in-place pinning (`register`).
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call7.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
F=/tmp/stream-8g.bin
python3 -c "
import numpy as np
b = np.random.default_rng(3).integers(0, 2**63, size=(64 << 20) // 8, dtype=np.uint64)
with open('$F', 'wb') as f:
    for k in range(128):
        b[0] = k; f.write(b.tobytes())
"
cat $F > /dev/null
g++ -O2 -std=c++17 -pthread -o /tmp/sf scripts/profile/stream_fill.cpp -ldl > $o/build-sf.txt 2>&1; echo "build rc $?" >> $o/build-sf.txt
timeout 200 /tmp/sf $F register > $o/stream-fill.txt 2>&1; echo "rc $?" >> $o/stream-fill.txt
cat $o/build-sf.txt $o/stream-fill.txt
