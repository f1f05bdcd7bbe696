#!/usr/bin/env bash
# Persistent, pipelined scan blocks against one block per tile (docs/PERF.md, v13): builds
# scan.cu with nvcc in several shapes, times each (kernel only, median of 30) and checks every
# output element against an integer reference. Usage on a GPU host:
#   bash scripts/scan-experiment/run-pipelined.sh NEW_KERNELS_DIR [BASE_KERNELS_DIR]
# where a kernels dir holds scan.cu and the .cuh headers (crates/tally/src/kernels).
NEW=${1:-crates/tally/src/kernels}; BASE=$2
E=$(cd "$(dirname "$0")" && pwd)
mk() {  # name, kernels dir, block, vecs, minblocks, elem, out, out_float, out_signed, sed-expr
  local name=$1 K=$2 bt=$3 v=$4 mb=$5 el=$6 o=$7 of=$8 os=$9 expr=${10} d=/tmp/sxp/$1
  mkdir -p $d; cp $K/*.cuh $E/codes.cuh $d/
  sed -e "$expr" $K/scan.cu > $d/scan_variant.cu
  nvcc -O3 -std=c++17 -arch=sm_90 -I$d -DVARIANT_NAME="\"$name\"" -DTALLY_ELEM="$el" -DTALLY_OUT="$o" -DTALLY_OUT_FLOAT=$of -DTALLY_OUT_SIGNED=$os -DTALLY_SCAN=TALLY_SCAN_SUM -DTALLY_KEY_BYTES=0 -DTALLY_BLOCK_THREADS=$bt -DTALLY_VECS=$v -DTALLY_MIN_BLOCKS=$mb -o $d/h $E/pipeline_harness.cu > $d/build.log 2>&1 || { echo "$name: build failed"; tail -5 $d/build.log; }
}
F32="float float 1 0"; I64="int long\ long 1 1"
NOLB='s/const Acc prefix = lookback_prefix(st, tile, agg, p.deterministic);/const Acc prefix = identity(); if (lane_id() == 0) lookback_publish(st.level[0], tile, agg, LOOKBACK_INCL);/'
[ -n "$BASE" ] && mk base-128x8 $BASE 128 8 6 float float 1 0 's/x/x/' &
[ -n "$BASE" ] && mk base-i64-128x8 $BASE 128 8 4 int "long long" 0 1 's/x/x/' &
mk pipe-128x8-mb6 $NEW 128 8 6 float float 1 0 's/x/x/' &
mk pipe-128x8-mb4 $NEW 128 8 4 float float 1 0 's/x/x/' &
mk pipe-128x8-mb3 $NEW 128 8 3 float float 1 0 's/x/x/' &
mk pipe-128x4-mb8 $NEW 128 4 8 float float 1 0 's/x/x/' &
mk pipe-256x4-mb3 $NEW 256 4 3 float float 1 0 's/x/x/' &
mk pipe-256x2-mb4 $NEW 256 2 4 float float 1 0 's/x/x/' &
mk pipe-128x8-nolb $NEW 128 8 6 float float 1 0 "$NOLB" &
mk pipe-i64-128x8-mb4 $NEW 128 8 4 int "long long" 0 1 's/x/x/' &
mk pipe-i64-128x4-mb6 $NEW 128 4 6 int "long long" 0 1 's/x/x/' &
wait
r() { [ -x /tmp/sxp/$1/h ] && /tmp/sxp/$1/h "${@:2}"; }
N=$((1 << 28))
r base-128x8 0 $N 0; r base-128x8 1 $N 0
for v in pipe-128x8-mb6 pipe-128x8-mb4 pipe-128x8-mb3 pipe-128x4-mb8 pipe-256x4-mb3 pipe-256x2-mb4; do r $v 0 $N 1; r $v 1 $N 1; done
r pipe-128x8-mb6 0 $N 2; r pipe-128x8-mb6 0 $N 0
r pipe-128x8-nolb 0 $N 1
r base-i64-128x8 0 $N 0
r pipe-i64-128x8-mb4 0 $N 1; r pipe-i64-128x4-mb6 0 $N 1
# Partial last tiles and small inputs (the slow path), both look-backs.
for n in $((N - 997)) 4097 4095 1 100000; do r pipe-128x8-mb6 0 $n 1; r pipe-128x8-mb6 1 $n 1; done
r pipe-128x8-mb6 0 $((1 << 24)) 1; r pipe-128x8-mb6 1 $((1 << 24)) 1; r base-128x8 0 $((1 << 24)) 0; r base-128x8 1 $((1 << 24)) 0
r pipe-128x8-mb6 0 $((1 << 20)) 1; r base-128x8 0 $((1 << 20)) 0
