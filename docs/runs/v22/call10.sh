#!/usr/bin/env bash
# Session call 10 (one command line; H100): the scan tests (bin32's test binary) with every scan
# at 3 blocks a multiprocessor and two look-back windows for scans by key, the shape v22 makes
# the default of i32 into i64 by key.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TALLY_CACHE_DIR=/tmp/tally-cache; TALLY_REQUIRE_GPU=1 TALLY_SKIP_HUGE=1 TALLY_SCAN_MIN_BLOCKS=3 TALLY_NVRTC_OPTIONS=-DTALLY_KEYED_WINDOWS=2 timeout 150 .gpu/tests35/cuda_scan-* > $OUT/test-scan-3-blocks-2-windows.txt 2>&1; echo "rc $?" >> $OUT/test-scan-3-blocks-2-windows.txt; grep -E "^test result|^rc|panicked" $OUT/*.txt
