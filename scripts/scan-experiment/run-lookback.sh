#!/usr/bin/env bash
# The look-back's waiting policy, measured apart: scan.cu (f32 inclusive sum of 2^28, 128 x 8,
# kernel only, median of 30) with patched copies of lookback.cuh that change how a waiting lane
# polls (when it starts to sleep, for how long) and how many predecessors the fast look-back
# reads per round. The hypothesis: 792 resident blocks polling up to 128 slots each take L2
# bandwidth from the tiles still loading. Each variant prints the fast (det=0) and the fixed
# (det=1) look-back. From the repository root on a GPU host:
#   bash scripts/scan-experiment/run-lookback.sh
K=crates/tally/src/kernels
E=$(cd "$(dirname "$0")" && pwd)
SPIN='if (want \&\& spins > 4) __nanosleep(32);'
mk() {  # name, sed expression on lookback.cuh
  local name=$1 expr=$2 d=/tmp/sxl/$1
  mkdir -p $d; cp $K/*.cuh $E/codes.cuh $d/
  sed -e "$expr" $K/lookback.cuh > $d/lookback.cuh
  cp $K/scan.cu $d/scan_variant.cu
  nvcc -O3 -std=c++17 -arch=sm_90 -I$d -DVARIANT_NAME="\"$name\"" -DTALLY_ELEM=float -DTALLY_OUT=float -DTALLY_OUT_FLOAT=1 -DTALLY_OUT_SIGNED=0 -DTALLY_SCAN=TALLY_SCAN_SUM -DTALLY_KEY_BYTES=0 -DTALLY_BLOCK_THREADS=128 -DTALLY_VECS=8 -DTALLY_MIN_BLOCKS=6 -o $d/h $E/scan_harness.cu > $d/build.log 2>&1 || { echo "$name: build failed"; cat $d/build.log; }
}
names=()
variant() { names+=("$1"); mk "$1" "$2" & }
variant base 's/x/x/'
variant sleep32-at0 "s/$SPIN/if (want) __nanosleep(32);/"
variant sleep128-at0 "s/$SPIN/if (want) __nanosleep(128);/"
variant sleep512-at0 "s/$SPIN/if (want) __nanosleep(512);/"
variant backoff "s/$SPIN/if (want) __nanosleep(32u << (spins < 5 ? spins : 5));/"
variant nosleep "s/$SPIN//"
variant windows2 's/constexpr int LOOKBACK_WINDOWS = 4;/constexpr int LOOKBACK_WINDOWS = 2;/'
variant windows1 's/constexpr int LOOKBACK_WINDOWS = 4;/constexpr int LOOKBACK_WINDOWS = 1;/'
variant windows1-sleep128 "s/constexpr int LOOKBACK_WINDOWS = 4;/constexpr int LOOKBACK_WINDOWS = 1;/; s/$SPIN/if (want) __nanosleep(128);/"
wait
for name in "${names[@]}"; do
  grep -q "__nanosleep\|LOOKBACK_WINDOWS" /tmp/sxl/$name/lookback.cuh || true
  diff -q $K/lookback.cuh /tmp/sxl/$name/lookback.cuh > /dev/null && [ $name != base ] && echo "$name: the patch did not apply"
  [ -x /tmp/sxl/$name/h ] && { /tmp/sxl/$name/h 0; /tmp/sxl/$name/h 1; }
done
