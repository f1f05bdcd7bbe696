#!/usr/bin/env bash
# One GPU-host session, everything that belongs together: device facts, the test binaries
# (TALLY_REQUIRE_GPU=1), the benchmark sweep, the CUB/PyTorch peers in the same run, and
# compute-sanitizer over the kernel tests. Expects release binaries in .gpu/: bin/tally, the test
# binaries in tests/, run-tests.sh and the peer harnesses in peers/.
# Logs go to $OUT (or ./gpu-out); the last lines printed are the summary.
#   usage: bash scripts/gpu-session.sh [stages...]
#   stages: info startup tests bench bench-NAME weighted hist2d compare peers peers-weighted cub-large sanitize lab
#   compare: the previous build (.gpu/old/tally) and this one, alternately, on the same cases
#   (COMPARE_HIST_ARGS, COMPARE_WEIGHTED_ARGS, COMPARE_HIST2D_ARGS); a table of both and the ratio.
set -u
out=${OUT:-gpu-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TALLY_CACHE_DIR=${TALLY_CACHE_DIR:-/tmp/tally-cache}
stages=${*:-info startup tests bench peers sanitize}
summary=()
for stage in $stages; do
  start=$(date +%s)
  case $stage in
    info)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv 2>&1 | tee -a "$out/info.txt"
      .gpu/bin/tally info 2>&1 | tee -a "$out/info.txt"; rc=${PIPESTATUS[0]} ;;
    tests)
      # TESTS_ARGS: extra test-binary arguments, e.g. "--skip every_kernel_variant" (CI compiles those).
      bash .gpu/run-tests.sh ${TESTS_ARGS:-} > "$out/tests.log" 2>&1; rc=$?
      grep -E "^test .*(FAILED|panicked)|test result|passed, .* failed|^== " "$out/tests.log" | tail -30 ;;
    bench|bench-*)
      # bench-NAME runs the sweep again under $NAME_OPTS (NVRTC options) and $NAME_ENV (VAR=value
      # words) with $NAME_ARGS, for A/B runs.
      tag=${stage#bench}; tag=${tag#-}; name=bench${tag:+-$tag}
      opts_var=${tag^^}_OPTS; args_var=${tag^^}_ARGS; env_var=${tag^^}_ENV
      echo "== $name: ${!env_var:-} tally bench hist ${!args_var:-${BENCH_ARGS:-}}" | tee -a "$out/bench.txt"
      env ${!env_var:-} TALLY_NVRTC_OPTIONS="${!opts_var:-}" .gpu/bin/tally bench hist ${!args_var:-${BENCH_ARGS:-}} --json > "$out/$name.json" 2>> "$out/bench.txt"; rc=$?
      python3 - "$out/$name.json" <<'PY' | tee -a "$out/bench.txt"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"# {r['device']}: {r['samples']} samples, read bandwidth {r['read_bandwidth_gbs']:.1f} GB/s")
for x in r['rows']:
    layout = (f"cluster {x['cluster']} " if x.get('cluster') else "") + (f"{x['passes']} passes" if x.get('passes', 1) > 1 else "")
    print(f"{x['dtype']:4} {x['distribution']:7} {x['bins']:9} {x['strategy']:17} {x['ran']:17} {x['ms']:9.4f} ms {x['gbs']:8.1f} GB/s {100*x['fraction_of_read_bandwidth']:5.1f}% {'ok' if x['verified'] else 'MISMATCH'} {layout}")
PY
      ;;
    weighted|hist2d)
      # tally bench weighted / tally bench hist2d ($WEIGHTED_ARGS / $HIST2D_ARGS), table and JSON.
      args_var=${stage^^}_ARGS
      .gpu/bin/tally bench $stage --backend cuda ${!args_var:-} --json > "$out/bench-$stage.json" 2>> "$out/bench.txt"; rc=$?
      python3 - "$out/bench-$stage.json" <<'PY' | tee -a "$out/bench.txt"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"# {r['device']}: {r['samples']} samples, read bandwidth {r['read_bandwidth_gbs']:.1f} GB/s")
for x in r['rows']:
    print(f"{x['case']:8} {x['distribution']:7} {x['bins']:>10} {x['strategy']:15} {x['ran']:15} {x['accumulation']:15} {x['ms']:9.4f} ms {x['gbs']:8.1f} GB/s {100*x['fraction_of_read_bandwidth']:5.1f}% {'ok' if x['verified'] else 'MISMATCH'}")
PY
      ;;
    peers-weighted)
      # PyTorch's weighted bincount on the same distributions (scripts/peers/torch_weighted.py).
      python3 scripts/peers/torch_weighted.py ${PEERS_WEIGHTED_ARGS:-} 2>&1 | tee "$out/peers-weighted.txt"; rc=${PIPESTATUS[0]} ;;
    peers)
      bash .gpu/peers/run-peers.sh > "$out/peers.txt" 2>&1; rc=$?
      grep -E "device|read-only|copy|Histogram|naive|bincount|histc" "$out/peers.txt" ;;
    cub-large)
      # CUB and the naive kernel at 65,536 to 16M bins, uniform and Zipf (scripts/peers).
      nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_large_bins scripts/peers/cub_large_bins.cu 2>&1 | grep -v -i warning
      /tmp/cub_large_bins 2>&1 | tee "$out/cub-large.txt"; rc=${PIPESTATUS[0]} ;;
    sanitize)
      # Every CUDA test binary under memcheck and racecheck, at small sizes. The out-of-memory
      # test is skipped: its refused allocation is an API error by design.
      export TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 TALLY_SMALL=1
      rc=0
      for t in .gpu/tests/cuda_*; do
        for tool in memcheck racecheck; do
          timeout ${SANITIZE_SECONDS:-200} compute-sanitizer --tool $tool --error-exitcode 99 "$t" --test-threads=1 ${SANITIZE_FILTER:-cuda_} --skip cuda_out_of_memory > "$out/sanitize-$tool.tmp" 2>&1
          r=$?; [ $r -ne 0 ] && rc=$r
          { echo "== compute-sanitizer --tool $tool ${t##*/}: exit $r"; cat "$out/sanitize-$tool.tmp"; } >> "$out/sanitize.log"; rm -f "$out/sanitize-$tool.tmp"
          echo "compute-sanitizer $tool ${t##*/}: exit $r"; grep -E "ERROR SUMMARY|test result|Invalid|Race" "$out/sanitize.log" | tail -3
        done
      done ;;
    lab)
      # The atomics lab: each command's table, JSON and chart in one directory, packed into
      # $out/lab.tar.gz; the tables and timings also go to $out/lab.log. LAB_GLOBAL_ARGS,
      # LAB_SHARED_ARGS and LAB_HISTOGRAM_ARGS pass options to one command.
      rc=0; dir=$(mktemp -d); mkdir -p "$dir/lab"
      for what in global shared histogram; do
        args_var=LAB_${what^^}_ARGS
        s0=$EPOCHREALTIME
        .gpu/bin/tally lab $what --backend cuda ${!args_var:-} --json "$dir/lab/$what.json" --plot "$dir/lab/$what.svg" > "$dir/lab/$what.txt" 2> "$dir/lab/$what.err"; r=$?
        [ $r -ne 0 ] && rc=$r
        { echo "== tally lab $what: exit $r, $(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $s0 }") s (whole process)"
          cat "$dir/lab/$what.txt" "$dir/lab/$what.err"; } | tee -a "$out/lab.log"
      done
      tar -czf "$out/lab.tar.gz" -C "$dir" lab; rm -rf "$dir" ;;
    compare)
      rc=0
      for what in hist weighted hist2d; do
        args_var=COMPARE_${what^^}_ARGS
        for build in old new old new; do
          exe=.gpu/bin/tally; [ $build = old ] && exe=.gpu/old/tally
          $exe bench $what --backend cuda ${!args_var:-} --json > "$out/compare-$what-$build.json" 2>> "$out/bench.txt" || rc=$?
          mv "$out/compare-$what-$build.json" "$out/compare-$what-$build-$RANDOM.json.keep"
        done
      done
      python3 scripts/compare-builds.py "$out" | tee "$out/compare.txt" ;;
    startup)
      # Whole-process time of a 1M-sample histogram: a cold kernel cache, then warm ones.
      rc=0; cold=$(mktemp -d)
      for run in cold warm warm warm; do
        dir=$TALLY_CACHE_DIR; [ $run = cold ] && dir=$cold
        s0=$EPOCHREALTIME
        TALLY_TRACE=1 TALLY_CACHE_DIR=$dir .gpu/bin/tally hist --demo --size 1000000 --backend cuda --json > /dev/null || rc=$?
        echo "startup $run: $(awk "BEGIN { print $EPOCHREALTIME - $s0 }") s (tally hist --demo --size 1000000, whole process)"
      done 2>&1 | tee -a "$out/info.txt" ;;
    *) echo "unknown stage $stage"; rc=2 ;;
  esac
  summary+=("$stage: exit $rc, $(( $(date +%s) - start )) s")
done
printf '%s\n' "${summary[@]}"
