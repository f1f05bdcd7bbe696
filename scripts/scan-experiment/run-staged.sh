#!/usr/bin/env bash
# Scan tiles staged in shared memory (cp.async) and larger tiles, against v11's kernel
# (docs/PERF.md, v13): builds scan.cu with nvcc in several shapes, times each (kernel only,
# median of 30) and checks every output element against an integer reference. On a GPU host:
#   bash scripts/scan-experiment/run-staged.sh NEW_KERNELS_DIR [BASE_KERNELS_DIR]
NEW=${1:-crates/tally/src/kernels}; BASE=$2
E=$(cd "$(dirname "$0")" && pwd)
OUTDIR=/tmp/sxs; . "$E/variants.sh"
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
N=$((1 << 28))
for v in base-128x8 reg-128x8 reg-128x16-mb3 reg-128x16-mb4 reg-256x8-mb3 stage-128x8-mb8 stage-128x8-mb12 stage-128x16-mb6 stage-128x12-mb8 stage-256x8-mb3 stage-64x16-mb12 stage-128x4-mb16; do r $v 0 $N 0; r $v 1 $N 0; done
for v in base-i64-128x8 stage-i64-128x8-mb8 stage-i64-128x8-mb6 reg-i64-128x16-mb2; do r $v 0 $N 0; done
for v in base-128x8 stage-128x8-mb8 stage-128x16-mb6 reg-128x16-mb4; do for n in $((1 << 24)) $((1 << 20)); do r $v 0 $n 0; r $v 1 $n 0; done; done
# Partial last tiles and small inputs (the slow path), both look-backs.
for v in stage-128x8-mb8 stage-128x12-mb8 reg-128x16-mb4; do for n in $((N - 997)) 4097 4095 1 100000; do r $v 0 $n 0; r $v 1 $n 0; done; done
