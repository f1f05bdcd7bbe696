#!/usr/bin/env bash
# Call 7: the committed build after the review: the CUDA tests of the changed read paths, the
# GPU pytest beside them, sanitizers over the read-back tests, then the Python benchmark at 2^28
# with the Rust bench group by group.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
t() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/info.txt"
t tests
for b in .gpu/tests12/*; do
  name=$(basename "$b" | sed 's/-[0-9a-f]*$//')
  ( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 timeout 280 "$b" --skip more_than > "$out/test-$name.txt" 2>&1; echo "rc $?" >> "$out/test-$name.txt" ) &
done
s() { tool=$1; b=$2; shift 2; ( TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 TALLY_SMALL=1 timeout 280 compute-sanitizer --tool $tool --error-exitcode 99 $(ls .gpu/tests12/$b-*) --test-threads=1 "$@" > "$out/san-$tool-$b.txt" 2>&1; echo "rc $?" >> "$out/san-$tool-$b.txt" ) & }
s memcheck cuda_external
s racecheck cuda_external
s synccheck cuda_external
s memcheck cuda_select gpu_f32_select gpu_poisoned
s memcheck cuda_runs gpu_i32_keys gpu_poisoned
( site=/tmp/tally-site7; rm -rf $site; mkdir -p "$out/py"; python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/wheels/tally-*.whl
  cd "$out/py" && PYTHONPATH=$site TALLY_REQUIRE_GPU=1 timeout 280 python3 -m pytest -p no:cacheprovider -q "$OLDPWD/crates/tally-python/tests/test_gpu.py" > "$out/python-tests.txt" 2>&1; echo "rc $?" >> "$out/python-tests.txt" ) &
wait
grep -H -E "^test result|rc [0-9]|ERROR SUMMARY|RACECHECK SUMMARY|panicked|FAILED|passed|failed" "$out"/test-*.txt "$out"/san-*.txt "$out/python-tests.txt"
t bench
cd /tmp && PYTHONPATH=/tmp/tally-site7 timeout 250 python3 -m tally.bench --log2 28 --rust "$OLDPWD/.gpu/bin12/tally" > "$out/python-bench.txt" 2>&1; echo "rc $?" >> "$out/python-bench.txt"; cd "$OLDPWD"
grep -v '^  {' "$out/python-bench.txt" | tail -20
t done
tar czf "$out/logs.tgz" -C "$out" $(cd "$out" && ls *.txt)
