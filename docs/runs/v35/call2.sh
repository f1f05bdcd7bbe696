#!/usr/bin/env bash
# v35 call 2 (one GPU, right after call 1): v34's build (b0) against this one (b1), interleaved,
# two rounds, reduce-by-key at 2^16-2^24 (the checked i32 into i64 sums now one launch a call);
# then tile shapes of the scans, select and reduce-by-key at 2^16-2^24 through the tuning knobs,
# the default first and last.
set -u
cd "$(dirname "$0")/../.."
o=/tmp/o2; rm -rf $o; mkdir -p $o
trap 'tar czf "${OUT:-gpu-out}/call2.tgz" -C $o .' EXIT
trap 'exit 124' TERM INT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $o/info.txt
[ -x .gpu/b1/tally ] || bash scripts/unpack-xz.sh .gpu/b1/tally.xz
bash scripts/unpack-xz.sh .gpu/b0/tally.xz
sizes=16,20,24
for r in 1 2; do
  for b in b0 b1; do
    echo "== $b round $r"
    timeout 40 .gpu/$b/tally bench reduce-by-key --backend cuda --log2-sizes $sizes --reps 100 2>&1
  done
done > $o/bench-rbk.txt 2>&1
grep -E "^== |rbk" $o/bench-rbk.txt
tb=.gpu/b1/tally
sizes=16,20,22,24
shape() { # what env...
  local what=$1; shift
  echo "== $what $*"
  case $what in
    scan) env "$@" timeout 60 $tb bench scan --backend cuda --log2-sizes $sizes --reps 100 --cases "f32 sum det,f32 sum fast" 2>&1 ;;
    select) env "$@" timeout 60 $tb bench select --backend cuda --log2-sizes $sizes --reps 100 --cases "select 50%" 2>&1 ;;
    rbk) env "$@" timeout 60 $tb bench reduce-by-key --backend cuda --log2-sizes $sizes --reps 100 2>&1 ;;
  esac
}
{
  shape scan X=0
  shape scan TALLY_SCAN_VECS=16 TALLY_SCAN_MIN_BLOCKS=4
  shape scan TALLY_SCAN_VECS=12 TALLY_SCAN_MIN_BLOCKS=6
  shape scan TALLY_SCAN_VECS=8 TALLY_SCAN_MIN_BLOCKS=8
  shape scan TALLY_SCAN_VECS=4 TALLY_SCAN_MIN_BLOCKS=12
  shape scan TALLY_SCAN_BLOCK_THREADS=256 TALLY_SCAN_VECS=6 TALLY_SCAN_MIN_BLOCKS=6
  shape scan X=1
  shape select X=0
  shape select TALLY_COMPACT_VECS=8 TALLY_COMPACT_MIN_BLOCKS=8
  shape select TALLY_COMPACT_VECS=4 TALLY_COMPACT_MIN_BLOCKS=8
  shape select TALLY_COMPACT_VECS=4 TALLY_COMPACT_MIN_BLOCKS=12
  shape select TALLY_COMPACT_THREADS=256 TALLY_COMPACT_VECS=4 TALLY_COMPACT_MIN_BLOCKS=4
  shape select X=1
  shape rbk X=0
  shape rbk TALLY_COMPACT_VECS=4 TALLY_COMPACT_MIN_BLOCKS=8
  shape rbk TALLY_COMPACT_VECS=2 TALLY_COMPACT_MIN_BLOCKS=12
  shape rbk TALLY_COMPACT_THREADS=256 TALLY_COMPACT_VECS=4 TALLY_COMPACT_MIN_BLOCKS=4
  shape rbk X=1
} > $o/shapes.txt 2>&1
grep -E "^== |sum det|sum fast|select 50|rbk|rror" $o/shapes.txt
