#!/usr/bin/env bash
# Builds tally's Python wheel (release, abi3: one wheel for every CPython from 3.9 on) into
# DIR (default: dist/). maturin comes from PyPI into a venv of its own; the Rust build reuses
# $CARGO_TARGET_DIR. The extension loads libcuda and libnvrtc at run time, so the wheel links
# nothing but glibc and installs on any Linux with a glibc as new as this machine's.
#
#   scripts/build-wheel.sh .gpu/wheels
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-dist}")
venv="${TALLY_MATURIN_VENV:-${TMPDIR:-/tmp}/tally-maturin}"
if ! "$venv/bin/maturin" --version >/dev/null 2>&1; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.5,<2"
fi
mkdir -p "$out"
"$venv/bin/maturin" build --release --locked -m crates/tally-python/Cargo.toml --out "$out" \
  --interpreter python3 --compatibility "${TALLY_WHEEL_COMPATIBILITY:-linux}"
ls -l "$out"/tally-*.whl
