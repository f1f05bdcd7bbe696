#!/usr/bin/env bash
# Session call 3 (v28): bin3 = bin2 with each thread's part of a run tile swizzled instead of
# padded (the hypothesis from call 2's profile: padded parts split cp.async's row copies, 24 L2
# sectors for every 16 of a warp's row, and the L2 hit rate of 40%). Tests of bin3, benches of
# bin1 (v27), bin2 and bin3 alternating twice, ncu of bin3's reduce-by-key and encode (sectors
# per load), compute-sanitizer over bin3's run tests.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o; rm -rf $o; mkdir -p $o
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $o/info.txt
bash scripts/unpack-xz.sh .gpu/bin1/tally.xz .gpu/bin2/tally.xz .gpu/bin3/tally.xz .gpu/tests3/*.xz
t() { echo "== $1 $(date +%T)"; }
t tests
for b in cuda_runs cuda_properties_runs; do
  TALLY_REQUIRE_GPU=1 timeout 300 .gpu/tests3/$b > $o/tests-$b.txt 2>&1; echo "rc $?" >> $o/tests-$b.txt
  echo "$b: $(grep -E "^test result|^rc|panicked|FAILED" $o/tests-$b.txt | head -5 | tr '\n' ' ')"
done
t bench
for r in 1 2; do
  for b in bin1 bin2 bin3; do
    for what in reduce-by-key rle unique; do
      timeout 60 .gpu/$b/tally bench $what --backend cuda --log2-sizes 20,24,28 --reps 20 > $o/$what-$b-r$r.txt 2>&1
    done
    echo "-- $b round $r"; cat $o/{reduce-by-key,rle,unique}-$b-r$r.txt | grep -v "^#\|^case"
  done
done
t ncu
K="Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Block Limit Shared|Block Limit Reg|Dynamic Shared|L2 Hit Rate"
prof() {  # name, command...
  local name=$1; shift
  timeout 200 ncu --set full --kernel-name tally_runs --launch-skip 2 --launch-count 1 -o $o/$name "$@" > $o/$name-run.txt 2>&1
  ncu --import $o/$name.ncu-rep > $o/$name.txt 2>&1
  ncu --import $o/$name.ncu-rep --page source --csv --print-source sass > $o/$name-sass.csv 2>&1 || true
  echo "-- $name"; grep -E "$K" $o/$name.txt; grep -A1 "global loads from L2" $o/$name.txt | grep -o "only [0-9.]* of" || echo "loads: no excess reported"
}
prof rbk-tally3 .gpu/bin3/tally bench reduce-by-key --backend cuda --log2-sizes 28 --reps 3 --cases "rbk i32/8 f32"
prof rle-tally3 .gpu/bin3/tally bench rle --backend cuda --log2-sizes 28 --reps 3
prof rle-tally1 .gpu/bin1/tally bench rle --backend cuda --log2-sizes 28 --reps 3
t sanitizers
for tool in memcheck racecheck synccheck; do
  ( TALLY_REQUIRE_GPU=1 TALLY_SMALL=1 timeout 240 compute-sanitizer --tool $tool --error-exitcode 99 .gpu/tests3/cuda_runs --test-threads=1 --skip more_than > "$o/san-$tool.txt" 2>&1; echo "rc $?" >> "$o/san-$tool.txt" ) &
done
wait
for tool in memcheck racecheck synccheck; do echo "$tool: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^test result" $o/san-$tool.txt | tr '\n' ' ') $(tail -1 $o/san-$tool.txt)"; done
t end
tar czf $OUT/call3.tgz --exclude="*.ncu-rep" -C /tmp o
