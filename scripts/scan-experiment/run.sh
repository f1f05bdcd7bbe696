#!/usr/bin/env bash
# Builds and times scan.cu variants with nvcc on a GPU host (kernel only, f32 inclusive sum of
# 2^28, median of 30): the kernel as it is, and patched copies that leave one stage out
# (NOLB: no look-back, each tile's prefix taken as the identity: wrong results, the time of
# everything else; BIDX: tiles numbered by blockIdx.x instead of the atomic counter).
# From the repository root: bash scripts/scan-experiment/run.sh. docs/PERF.md (v11) has the
# figures.
K=crates/tally/src/kernels
E=$(cd "$(dirname "$0")" && pwd)
mk() {  # name, block, vecs, minblocks, sed-expr
  local name=$1 bt=$2 v=$3 mb=$4 expr=$5
  mkdir -p /tmp/sx/$name; cp $K/*.cuh $E/codes.cuh /tmp/sx/$name/
  sed -e "$expr" $K/scan.cu > /tmp/sx/$name/scan_variant.cu
  nvcc -O3 -std=c++17 -arch=sm_90 -I/tmp/sx/$name -DVARIANT_NAME="\"$name\"" -DTALLY_ELEM=float -DTALLY_OUT=float -DTALLY_OUT_FLOAT=1 -DTALLY_OUT_SIGNED=0 -DTALLY_SCAN=TALLY_SCAN_SUM -DTALLY_KEY_BYTES=0 -DTALLY_BLOCK_THREADS=$bt -DTALLY_VECS=$v -DTALLY_MIN_BLOCKS=$mb -Xptxas -v -o /tmp/sx/$name/h $E/scan_harness.cu 2>&1 | grep -E "registers|error" | grep tally_scan -A0 | head -2
  /tmp/sx/$name/h 0; /tmp/sx/$name/h 1
}
NOLB='s/const Acc prefix = lookback_prefix(st, tile, agg, p.deterministic);/const Acc prefix = identity(); if (lane_id() == 0) lookback_publish(st.level[0], tile, agg, LOOKBACK_INCL);/'
BIDX='s/const u32 tile = lookback_next_tile(p.states, .shared_tile);/const u32 tile = blockIdx.x;/'
mk 128x8 128 8 6 's/x/x/'
mk 256x4 256 4 3 's/x/x/'
mk 128x8-nolookback 128 8 6 "$NOLB"
mk 128x8-blockidx 128 8 6 "$BIDX"
