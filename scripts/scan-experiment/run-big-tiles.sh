#!/usr/bin/env bash
# Larger scan tiles in registers and staged, against v11's kernel (docs/PERF.md, v13). On a GPU host:
#   bash scripts/scan-experiment/run-big-tiles.sh NEW_KERNELS_DIR BASE_KERNELS_DIR
NEW=$1; BASE=$2
E=$(cd "$(dirname "$0")" && pwd)
OUTDIR=/tmp/sxb; . "$E/variants.sh"
f32 base-128x8 $BASE 128 8 6 0
f32 reg-128x16-mb4 $NEW 128 16 4 0
f32 reg-128x24-mb3 $NEW 128 24 3 0
f32 reg-128x32-mb2 $NEW 128 32 2 0
f32 reg-256x16-mb2 $NEW 256 16 2 0
f32 reg-256x12-mb2 $NEW 256 12 2 0
f32 reg-64x32-mb4 $NEW 64 32 4 0
f32 stage-128x16-mb6 $NEW 128 16 6 1
f32 stage-64x32-mb6 $NEW 64 32 6 1
i64 stage-i64-128x16-mb6 $NEW 128 16 6 1
i64 reg-i64-128x16-mb3 $NEW 128 16 3 0
i64 stage-i64-128x8-mb8 $NEW 128 8 8 1
wait
N=$((1 << 28))
for v in base-128x8 reg-128x16-mb4 reg-128x24-mb3 reg-128x32-mb2 reg-256x16-mb2 reg-256x12-mb2 reg-64x32-mb4 stage-128x16-mb6 stage-64x32-mb6; do r $v 0 $N 0; r $v 1 $N 0; done
for v in stage-i64-128x16-mb6 reg-i64-128x16-mb3 stage-i64-128x8-mb8; do r $v 0 $N 0; done
for v in reg-128x24-mb3 reg-256x16-mb2 reg-128x32-mb2; do for n in $((1 << 24)) $((1 << 20)) $((N - 997)) 4097 1; do r $v 0 $n 0; r $v 1 $n 0; done; done
