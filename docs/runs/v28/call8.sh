#!/usr/bin/env bash
# Session call 8 (v28): the Python package's benchmark at 2^28 against PyTorch and CuPy, and
# against the Rust bench of the same cases (the committed build: wheel of its source and its
# CLI, bin5), for issue 16's "within 2% of the Rust library" at 2^28. Its GPU tests passed in
# call 5.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin5/tally.xz
site=/tmp/tally-site; rm -rf $site
python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/wheels/tally-*.whl > $o/py-install.txt 2>&1
echo "== bench $(date +%T)"
(cd /tmp && PYTHONPATH=$site PYTHONUNBUFFERED=1 timeout 480 python3 -m tally.bench --log2 28 --rust "$OLDPWD/.gpu/bin5/tally" > $o/py-bench.txt 2>&1; echo "rc $?" >> $o/py-bench.txt)
grep -v '^  {' $o/py-bench.txt | tail -45
echo "== end $(date +%T)"
tar czf $OUT/call8.tgz -C /tmp o
