#!/usr/bin/env bash
# On a GPU host with Python, PyTorch (CUDA), CuPy, numpy and pytest (no Rust, no network):
# installs tally's wheel into a private directory, runs the GPU tests (which must not skip),
# the CPU tests, and the benchmark against PyTorch and CuPy; with TALLY (the tally CLI of the
# same build) the benchmark also sets the Rust bench of the same cases beside it. Logs go to
# $OUT (default gpu-out/python); TALLY_BENCH_ARGS adds arguments to the benchmark (such as
# "--log2 20 28").
#
#   scripts/gpu-python.sh .gpu/wheels/tally-*.whl [.gpu/bin/tally]
set -uo pipefail
cd "$(dirname "$0")/.."
wheel=${1:?usage: scripts/gpu-python.sh WHEEL [TALLY]}
rust=${2:-}
out=${OUT:-gpu-out}/python
site=${TALLY_SITE:-/tmp/tally-site}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TALLY_CACHE_DIR=${TALLY_CACHE_DIR:-/tmp/tally-cache}
rm -rf "$site"
python3 -m pip install --quiet --no-index --no-deps --target "$site" "$wheel" 2>&1 | tee "$out/install.log"
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
# NVRTC: from the CUDA toolkit (the path above), or from the nvidia-cuda-nvrtc wheel that
# PyTorch brings, which `import tally` loads by itself.
status=0
python3 -c 'import tally, sys; print("tally", tally.__version__, "from", tally.__file__); print(tally.device_info())' \
  2>&1 | tee "$out/info.log" || status=1
# From a directory without a tally/ package, so that the installed one is imported.
tests=$(realpath crates/tally-python/tests)
(cd "$out" && TALLY_REQUIRE_GPU=1 python3 -m pytest -p no:cacheprovider -q "$tests/test_gpu.py") 2>&1 \
  | tee "$out/test_gpu.log"; [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
(cd "$out" && python3 -m pytest -p no:cacheprovider -q "$tests"/test_cpu*.py) 2>&1 \
  | tee "$out/test_cpu.log"; [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
python3 -m tally.bench ${TALLY_BENCH_ARGS:-} ${rust:+--rust "$(realpath "$rust")"} 2>&1 | tee "$out/bench.log"; [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "gpu-python: status $status (logs in $out)"
exit $status
