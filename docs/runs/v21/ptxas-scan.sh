#!/usr/bin/env bash
# ptxas's registers and spills of scan.cu specialisations (sm_90, NVRTC 13.0) at the shapes
# PERF v21 discusses; run from the checkout with libnvrtc on LD_LIBRARY_PATH.
p() { echo "## $1"; shift; python3 scripts/ptxas/nvrtc-ptxas.py scan.cu -D"ll=long long" -D"ull=unsigned long long" "$@"; }
F32="-DTALLY_ELEM=float -DTALLY_OUT=float -DTALLY_OUT_FLOAT=1 -DTALLY_OUT_SIGNED=0 -DTALLY_SCAN=TALLY_SCAN_SUM"
I64="-DTALLY_ELEM=int -DTALLY_OUT=ll -DTALLY_OUT_FLOAT=0 -DTALLY_OUT_SIGNED=1 -DTALLY_SCAN=TALLY_SCAN_SUM"
F64="-DTALLY_ELEM=double -DTALLY_OUT=double -DTALLY_OUT_FLOAT=1 -DTALLY_OUT_SIGNED=0 -DTALLY_SCAN=TALLY_SCAN_SUM"
K="-DTALLY_KEY_BYTES=4 -DTALLY_BLOCK_THREADS=256"
for w in 2 4; do for mb in 3 4; do p "f32 by key, 256 x 4, $mb blocks, $w windows" $F32 $K -DTALLY_VECS=4 -DTALLY_MIN_BLOCKS=$mb -DTALLY_KEYED_WINDOWS=$w; done; done
for w in 2 4; do for mb in 2 3 4; do p "i32 into i64 by key, 256 x 4, $mb blocks, $w windows" $I64 $K -DTALLY_VECS=4 -DTALLY_MIN_BLOCKS=$mb -DTALLY_KEYED_WINDOWS=$w; done; done
for v in 4 8; do for w in 2 4; do p "f64 by key, 256 x $v, 2 blocks, $w windows" $F64 $K -DTALLY_VECS=$v -DTALLY_MIN_BLOCKS=2 -DTALLY_KEYED_WINDOWS=$w; done; done
p "i64 max by u64 key, 256 x 8, 2 blocks (default windows)" -DTALLY_ELEM=ll -DTALLY_OUT=ll -DTALLY_OUT_FLOAT=0 -DTALLY_OUT_SIGNED=1 -DTALLY_SCAN=TALLY_SCAN_MAX -DTALLY_KEY_BYTES=8 -DTALLY_BLOCK_THREADS=256 -DTALLY_VECS=8 -DTALLY_MIN_BLOCKS=2
p "u64 sum by u32 key, 256 x 8, 2 blocks (default windows)" -DTALLY_ELEM=ull -DTALLY_OUT=ull -DTALLY_OUT_FLOAT=0 -DTALLY_OUT_SIGNED=0 -DTALLY_SCAN=TALLY_SCAN_SUM $K -DTALLY_VECS=8 -DTALLY_MIN_BLOCKS=2
p "i32 max by u64 key, 256 x 4, 3 blocks (default windows)" -DTALLY_ELEM=int -DTALLY_OUT=int -DTALLY_OUT_FLOAT=0 -DTALLY_OUT_SIGNED=1 -DTALLY_SCAN=TALLY_SCAN_MAX -DTALLY_KEY_BYTES=8 -DTALLY_BLOCK_THREADS=256 -DTALLY_VECS=4 -DTALLY_MIN_BLOCKS=3
p "f32 sum (plain), 128 x 24, 3 blocks" $F32 -DTALLY_KEY_BYTES=0 -DTALLY_BLOCK_THREADS=128 -DTALLY_VECS=24 -DTALLY_MIN_BLOCKS=3
p "i32 into i64 (plain, staged), 128 x 16, 4 blocks" $I64 -DTALLY_KEY_BYTES=0 -DTALLY_BLOCK_THREADS=128 -DTALLY_VECS=16 -DTALLY_MIN_BLOCKS=4 -DTALLY_SCAN_STAGE=1
