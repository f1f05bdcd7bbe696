#!/usr/bin/env bash
# Where a scan tile's time goes (docs/PERF.md, v40): builds scan.cu's f32 sum (128 x 24 rows, 3
# blocks a multiprocessor, as the library's policy) with nvcc outside tally, three ways: as it
# is; without the look-back (each tile's prefix taken as the identity: wrong results, the time
# of everything else); and traced (a patched copy: per tile its SM, and clock64 and globaltimer
# read by thread 0 once the tile's number is known (after the counter's round trip), after its
# rows, before and after its look-back and when its own work ends; and the look-back's rounds
# and the warp's polls), then summarises the trace (trace_summary.py). From the repository root on a GPU
# host: bash scripts/scan-experiment/run-trace.sh OUT_DIR; WINDOWS=n sets the look-back's
# windows of 32 predecessors a round (the library's 4 by default).
set -u
OUT=${1:-/tmp/scan-trace}; mkdir -p $OUT
rm -rf /tmp/sxt
K=crates/tally/src/kernels; E=$(cd "$(dirname "$0")" && pwd)
mk() {  # name, extra nvcc flags, patch mode (none, nolb, trace)
  local name=$1 flags=$2 mode=$3 d=/tmp/sxt/$1
  mkdir -p $d; cp $K/*.cuh $E/codes.cuh $d/; cp $K/scan.cu $d/scan_variant.cu
  python3 - $d $mode <<'PY'
import sys
d, mode = sys.argv[1], sys.argv[2]
def patch(path, pairs):
    s = open(path).read()
    for old, new in pairs:
        assert old in s, (path, old)
        s = s.replace(old, new, 1)
    open(path, 'w').write(s)
if mode == 'nolb':
    patch(d + '/scan_variant.cu', [(
        "const Acc prefix = lookback_prefix(st, tile, carried ? merge(carry, agg) : agg, p.deterministic);",
        "const Acc prefix = identity(); if (lane_id() == 0) lookback_publish(st.level[0], tile, agg, LOOKBACK_INCL);")])
if mode == 'trace':
    patch(d + '/lookback.cuh', [
        ('#include "block.cuh"\n', '#include "block.cuh"\n#define TRACE_WORDS 12\n__device__ unsigned long long* tally_trace_buf;\n'
         '__shared__ unsigned tally_trace_polls;\n__shared__ unsigned tally_trace_rounds;\n__shared__ unsigned tally_trace_spins[32];\n'
         'TALLY_DEVICE unsigned long long trace_gtime() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }\n'),
        # The warp's polls: its lanes loop until each has its slots, so a round takes as many
        # polls as its slowest lane. Each lane records its count; once the round's lanes have
        # met again (every lane of warp 0 reads a round), lane 0 adds the largest. (Call 9
        # took the maximum over __activemask() right after the loop, where the lanes need not
        # have rejoined: lane 0's count in effect.)
        ("for (int spins = 0; want; ++spins) {",
         "for (int spins = 0; want; ++spins) { tally_trace_spins[lane_id()] = spins + 1;"),
        ("  lookback_wait_all<L, W>(slots, idx, want, value, status);\n}",
         "  lookback_wait_all<L, W>(slots, idx, want, value, status);\n  __syncwarp();\n"
         "  if (lane_id() == 0) { unsigned m = 0; for (int l = 0; l < 32; ++l) m = max(m, tally_trace_spins[l]); tally_trace_polls += m; }\n"
         "  __syncwarp();\n  tally_trace_spins[lane_id()] = 0;\n  __syncwarp();\n}"),
        ("    lookback_read_round<L>(tiles, end, value, status);\n    bool found = false;",
         "    if (lane_id() == 0) ++tally_trace_rounds;\n    lookback_read_round<L>(tiles, end, value, status);\n    bool found = false;"),
        ("    lookback_read_round<L>(tiles, end, value, status);\n    int from_window = -1, from_lane = 0;",
         "    if (lane_id() == 0) ++tally_trace_rounds;\n    lookback_read_round<L>(tiles, end, value, status);\n    int from_window = -1, from_lane = 0;"),
    ])
    mark = lambda k: ("{ unsigned long long* tr = tally_trace_buf + (unsigned long long)tile * TRACE_WORDS; "
                      "tr[%d] = clock64(); tr[%d] = trace_gtime(); }" % (k, 6 + k))
    patch(d + '/scan_variant.cu', [
        ("    if (lane_id() == 31) totals[k * WARPS + w] = row_incl[k];\n  }\n  __syncthreads();\n",
         "    if (lane_id() == 31) totals[k * WARPS + w] = row_incl[k];\n  }\n  __syncthreads();\n  if (threadIdx.x == 0) " + mark(1) + "\n"),
        ("      const Acc prefix = lookback_prefix(st, tile, carried ? merge(carry, agg) : agg, p.deterministic);",
         "      if (threadIdx.x == 0) { tally_trace_polls = 0; tally_trace_rounds = 0; " + mark(2) + " }\n"
         "      const Acc prefix = lookback_prefix(st, tile, carried ? merge(carry, agg) : agg, p.deterministic);\n"
         "      if (threadIdx.x == 0) { " + mark(3) + " tally_trace_buf[(unsigned long long)tile * TRACE_WORDS + 5] = "
         "tally_trace_polls | (unsigned long long)tally_trace_rounds << 32; }"),
        ("  const u32 tile = lookback_next_tile(p.states, &shared_tile);\n",
         "  const u32 tile = lookback_next_tile(p.states, &shared_tile);\n"
         "  if (threadIdx.x < 32) tally_trace_spins[threadIdx.x] = 0;\n"
         "  if (threadIdx.x == 0) { unsigned sm; asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(sm)); "
         "tally_trace_buf[(unsigned long long)tile * TRACE_WORDS + 11] = sm; " + mark(0) + " }\n"),
        ("  else scan_tile<false>(p, tile, st, totals, &tile_prefix, stage, row_out);\n}",
         "  else scan_tile<false>(p, tile, st, totals, &tile_prefix, stage, row_out);\n  if (threadIdx.x == 0) " + mark(4) + "\n}"),
    ])
PY
  nvcc -O3 -std=c++17 -arch=sm_90 -I$d $flags -DVARIANT_NAME="\"$name\"" -DTALLY_ELEM=float -DTALLY_OUT=float \
    -DTALLY_OUT_FLOAT=1 -DTALLY_OUT_SIGNED=0 -DTALLY_SCAN=TALLY_SCAN_SUM -DTALLY_KEY_BYTES=0 -DTALLY_BLOCK_THREADS=128 \
    -DTALLY_VECS=24 -DTALLY_MIN_BLOCKS=3 -DTALLY_SCAN_STAGE=0 -DTALLY_LOOKBACK_WINDOWS=${WINDOWS:-4} -DTALLY_SPLIT_LOOKBACK=0 \
    -DTALLY_TILES_BY_BLOCK=0 -DTALLY_LOOKBACK_ORDERED=1 -o $d/h $E/trace_harness.cu > $d/build.log 2>&1 \
    || { echo "$name: build failed"; tail -8 $d/build.log; }
}
mk plain "" none & mk nolookback "" nolb & mk traced "-DTALLY_SCAN_TRACE" trace & wait
for det in 0 1; do
  /tmp/sxt/plain/h $det; /tmp/sxt/nolookback/h $det; /tmp/sxt/traced/h $det $((1 << 28)) $OUT/trace-det$det.bin
done 2>&1 | tee $OUT/times.txt
for det in 0 1; do python3 $E/trace_summary.py $OUT/trace-det$det.bin 12 > $OUT/summary-det$det.txt 2>&1; cat $OUT/summary-det$det.txt; done
