#!/usr/bin/env bash
# Scan tiles staged in shared memory (cp.async) and larger tiles, against v11's kernel
# (docs/PERF.md, v13): builds scan.cu with nvcc in several shapes, times each (kernel only,
# median of 30) and checks every output element against an integer reference. On a GPU host:
#   bash scripts/scan-experiment/run-staged.sh NEW_KERNELS_DIR [BASE_KERNELS_DIR]
NEW=${1:-crates/tally/src/kernels}; BASE=$2
E=$(cd "$(dirname "$0")" && pwd)
mk() {  # name, kernels dir, block, vecs, minblocks, stage, elem, out, out_float, out_signed
  local name=$1 K=$2 d=/tmp/sxs/$1
  mkdir -p $d; cp $K/*.cuh $E/codes.cuh $d/; cp $K/scan.cu $d/scan_variant.cu
  nvcc -O3 -std=c++17 -arch=sm_90 -I$d -DVARIANT_NAME="\"$name\"" -DTALLY_ELEM="$7" -DTALLY_OUT="$8" -DTALLY_OUT_FLOAT=$9 -DTALLY_OUT_SIGNED=${10} -DTALLY_SCAN=TALLY_SCAN_SUM -DTALLY_KEY_BYTES=0 -DTALLY_BLOCK_THREADS=$3 -DTALLY_VECS=$4 -DTALLY_MIN_BLOCKS=$5 -DTALLY_SCAN_STAGE=$6 -o $d/h $E/pipeline_harness.cu > $d/build.log 2>&1 || { echo "$name: build failed"; tail -5 $d/build.log; }
}
f32() { mk "$@" float float 1 0 & }
i64() { mk "$@" int "long long" 0 1 & }
[ -n "$BASE" ] && f32 base-128x8 $BASE 128 8 6 0
[ -n "$BASE" ] && i64 base-i64-128x8 $BASE 128 8 4 0
f32 reg-128x8 $NEW 128 8 6 0
f32 reg-128x16-mb3 $NEW 128 16 3 0
f32 reg-128x16-mb4 $NEW 128 16 4 0
f32 reg-256x8-mb3 $NEW 256 8 3 0
f32 stage-128x8-mb8 $NEW 128 8 8 1
f32 stage-128x8-mb12 $NEW 128 8 12 1
f32 stage-128x16-mb6 $NEW 128 16 6 1
f32 stage-128x12-mb8 $NEW 128 12 8 1
f32 stage-256x8-mb3 $NEW 256 8 3 1
f32 stage-64x16-mb12 $NEW 64 16 12 1
f32 stage-128x4-mb16 $NEW 128 4 16 1
i64 stage-i64-128x8-mb8 $NEW 128 8 8 1
i64 stage-i64-128x8-mb6 $NEW 128 8 6 1
i64 reg-i64-128x16-mb2 $NEW 128 16 2 0
wait
r() { [ -x /tmp/sxs/$1/h ] && /tmp/sxs/$1/h "${@:2}"; }
N=$((1 << 28))
for v in base-128x8 reg-128x8 reg-128x16-mb3 reg-128x16-mb4 reg-256x8-mb3 stage-128x8-mb8 stage-128x8-mb12 stage-128x16-mb6 stage-128x12-mb8 stage-256x8-mb3 stage-64x16-mb12 stage-128x4-mb16; do r $v 0 $N 0; r $v 1 $N 0; done
for v in base-i64-128x8 stage-i64-128x8-mb8 stage-i64-128x8-mb6 reg-i64-128x16-mb2; do r $v 0 $N 0; done
for v in base-128x8 stage-128x8-mb8 stage-128x16-mb6 reg-128x16-mb4; do for n in $((1 << 24)) $((1 << 20)); do r $v 0 $n 0; r $v 1 $n 0; done; done
# Partial last tiles and small inputs (the slow path), both look-backs.
for v in stage-128x8-mb8 stage-128x12-mb8 reg-128x16-mb4; do for n in $((N - 997)) 4097 4095 1 100000; do r $v 0 $n 0; r $v 1 $n 0; done; done
