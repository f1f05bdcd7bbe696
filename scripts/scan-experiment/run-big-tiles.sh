#!/usr/bin/env bash
NEW=$1; BASE=$2
E=$(cd "$(dirname "$0")" && pwd)
mk() {
  local name=$1 K=$2 d=/tmp/sxb/$1
  mkdir -p $d; cp $K/*.cuh $E/codes.cuh $d/; cp $K/scan.cu $d/scan_variant.cu
  nvcc -O3 -std=c++17 -arch=sm_90 -I$d -DVARIANT_NAME="\"$name\"" -DTALLY_ELEM="$7" -DTALLY_OUT="$8" -DTALLY_OUT_FLOAT=$9 -DTALLY_OUT_SIGNED=${10} -DTALLY_SCAN=TALLY_SCAN_SUM -DTALLY_KEY_BYTES=0 -DTALLY_BLOCK_THREADS=$3 -DTALLY_VECS=$4 -DTALLY_MIN_BLOCKS=$5 -DTALLY_SCAN_STAGE=$6 -o $d/h $E/pipeline_harness.cu > $d/build.log 2>&1 || { echo "$name: build failed"; tail -5 $d/build.log; }
}
f32() { mk "$@" float float 1 0 & }
i64() { mk "$@" int "long long" 0 1 & }
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
r() { [ -x /tmp/sxb/$1/h ] && /tmp/sxb/$1/h "${@:2}"; }
N=$((1 << 28))
for v in base-128x8 reg-128x16-mb4 reg-128x24-mb3 reg-128x32-mb2 reg-256x16-mb2 reg-256x12-mb2 reg-64x32-mb4 stage-128x16-mb6 stage-64x32-mb6; do r $v 0 $N 0; r $v 1 $N 0; done
for v in stage-i64-128x16-mb6 reg-i64-128x16-mb3 stage-i64-128x8-mb8; do r $v 0 $N 0; done
for v in reg-128x24-mb3 reg-256x16-mb2 reg-128x32-mb2; do for n in $((1 << 24)) $((1 << 20)) $((N - 997)) 4097 1; do r $v 0 $n 0; r $v 1 $n 0; done; done
