#!/usr/bin/env bash
# ptxas's registers and spills of the scan-by-key specialisations PERF v27 discusses (sm_90,
# NVRTC 13.0); run from the checkout with libnvrtc on LD_LIBRARY_PATH.
p() { echo "## $1"; shift; python3 scripts/ptxas/nvrtc-ptxas.py scan.cu -D"ll=long long" -D"ull=unsigned long long" "$@" | grep -E "registers|spill"; }
F32="-DTALLY_ELEM=float -DTALLY_OUT=float -DTALLY_OUT_FLOAT=1 -DTALLY_OUT_SIGNED=0"
I32="-DTALLY_ELEM=int -DTALLY_OUT=int -DTALLY_OUT_FLOAT=0 -DTALLY_OUT_SIGNED=1"
F64="-DTALLY_ELEM=double -DTALLY_OUT=double -DTALLY_OUT_FLOAT=1 -DTALLY_OUT_SIGNED=0"
I64="-DTALLY_ELEM=ll -DTALLY_OUT=ll -DTALLY_OUT_FLOAT=0 -DTALLY_OUT_SIGNED=1"
shape() { echo "-DTALLY_KEY_BYTES=4 -DTALLY_BLOCK_THREADS=$1 -DTALLY_VECS=$2 -DTALLY_MIN_BLOCKS=$3 -DTALLY_LOOKBACK_WINDOWS=$4 -DTALLY_SPLIT_LOOKBACK=$5"; }
for s in "256 4 3 2" "256 8 3 1" "512 6 2 1" "512 6 2 2"; do
  p "f32 sum by key, $s" $F32 -DTALLY_SCAN=TALLY_SCAN_SUM $(shape $s 1)
done
U32="-DTALLY_ELEM=unsigned -DTALLY_OUT=unsigned -DTALLY_OUT_FLOAT=0 -DTALLY_OUT_SIGNED=0"
for s in "512 6 2 1" "256 4 3 2"; do
  for op in MIN MAX; do p "f32 $op by key, $s" $F32 -DTALLY_SCAN=TALLY_SCAN_$op $(shape $s 1); done
  p "i32 sum into i32 by key, $s" $I32 -DTALLY_SCAN=TALLY_SCAN_SUM $(shape $s 1)
  p "u32 sum into u32 by key, $s" $U32 -DTALLY_SCAN=TALLY_SCAN_SUM $(shape $s 1)
done
for s in "256 8 2 2" "512 4 2 2"; do
  p "f64 sum by key, $s" $F64 -DTALLY_SCAN=TALLY_SCAN_SUM $(shape $s 0)
  p "i64 sum by key, $s" $I64 -DTALLY_SCAN=TALLY_SCAN_SUM $(shape $s 0)
done
