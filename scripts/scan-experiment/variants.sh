# Sourced by run-staged.sh and run-big-tiles.sh: `f32 NAME KERNELS_DIR THREADS ROWS MIN_BLOCKS
# STAGE` (and `i64 ...` for i32 into i64 sums) builds scan.cu with nvcc into $OUTDIR/NAME/h
# (pipeline_harness.cu), in the background.
E=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mk() {  # name, kernels dir, block, vecs, minblocks, stage, elem, out, out_float, out_signed
  local name=$1 K=$2 d=$OUTDIR/$1
  mkdir -p $d; cp $K/*.cuh $E/codes.cuh $d/; cp $K/scan.cu $d/scan_variant.cu
  nvcc -O3 -std=c++17 -arch=sm_90 -I$d -DVARIANT_NAME="\"$name\"" -DTALLY_ELEM="$7" -DTALLY_OUT="$8" -DTALLY_OUT_FLOAT=$9 -DTALLY_OUT_SIGNED=${10} -DTALLY_SCAN=TALLY_SCAN_SUM -DTALLY_KEY_BYTES=0 -DTALLY_BLOCK_THREADS=$3 -DTALLY_VECS=$4 -DTALLY_MIN_BLOCKS=$5 -DTALLY_SCAN_STAGE=$6 -o $d/h $E/pipeline_harness.cu > $d/build.log 2>&1 || { echo "$name: build failed"; tail -5 $d/build.log; }
}
f32() { mk "$@" float float 1 0 & }
i64() { mk "$@" int "long long" 0 1 & }
r() { [ -x $OUTDIR/$1/h ] && $OUTDIR/$1/h "${@:2}"; }
