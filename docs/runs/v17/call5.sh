#!/usr/bin/env bash
# Call 5 (two GPUs): the committed build: bench multi (fused combine, 1 GiB stream threshold),
# then every CUDA test binary (huge sizes included) split over the two GPUs, cuda_multi on both.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
tar xJf .gpu/bundle5.tar.xz -C .gpu
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)/lib
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$nccl NCCL_NVLS_ENABLE=0 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
t bench-multi; timeout 120 .gpu/bin/tally bench multi --devices all > "$out/bench-multi.txt" 2>&1; echo "rc $?" >> "$out/bench-multi.txt"; tail -8 "$out/bench-multi.txt"
t multi; TALLY_REQUIRE_GPU=2 timeout 120 .gpu/tests/cuda_multi-* --test-threads=1 > "$out/tests-multi.txt" 2>&1; echo "rc $?" >> "$out/tests-multi.txt"; grep -E "test result|rc " "$out/tests-multi.txt"
t tests
run() { local gpu=$1; shift; for name in "$@"; do f=$(ls .gpu/tests/$name-* | head -n1); s=$(date +%s)
  CUDA_VISIBLE_DEVICES=$gpu TALLY_REQUIRE_GPU=1 timeout 330 $f > "$out/t-$name.log" 2>&1; rc=$?
  echo "$name gpu$gpu exit $rc $(( $(date +%s) - s )) s $(grep -E 'test result' "$out/t-$name.log" | tail -1)"; done; }
( run 0 cuda_histogram ) > "$out/g0a.txt" &
( run 0 cuda_reduce cuda_external cuda_lab cuda_half cuda_weighted_exact ) > "$out/g0b.txt" &
( run 0 cuda_stream cuda_weighted cuda_properties ) > "$out/g0c.txt" &
( run 1 cuda_select ) > "$out/g1a.txt" &
( run 1 cuda_scan cuda_partition cuda_properties_select ) > "$out/g1b.txt" &
( run 1 cuda_runs cuda_properties_runs ) > "$out/g1c.txt" &
wait
cat "$out"/g*.txt | tee "$out/tests-summary.txt"
grep -h -E "^test .* FAILED|panicked" "$out"/t-*.log | head -20
tar czf "$out/test-logs.tgz" -C "$out" $(cd "$out" && ls t-*.log) && rm -f "$out"/t-*.log "$out"/g*.txt
t done
