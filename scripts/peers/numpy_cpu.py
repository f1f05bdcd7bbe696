#!/usr/bin/env python3
"""numpy on the CPU, the peer of tally's CPU backend for the select and scan targets (issues 12
and 13): boolean indexing `x[x < t]` of 2^26 f32 uniform in [-0.5, 0.5) at 1%, 50% and 99% kept
(random placement, as `tally bench select --backend cpu` uses), and `numpy.cumsum` of the same
array. Prints the median and the minimum of REPS runs in ms. Run on the machine that runs
`tally bench select|scan --backend cpu --log2-sizes 26`, one after the other.

    python3 scripts/peers/numpy_cpu.py [LOG2_SIZE] [REPS]
"""
import sys
import time

import numpy as np

log2 = int(sys.argv[1]) if len(sys.argv) > 1 else 26
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
x = (np.random.default_rng(1).random(1 << log2, dtype=np.float32) - np.float32(0.5)).astype(np.float32)


def timed(f):
    """The call alone: its result is freed after the clock stops (as `tally bench` does)."""
    ts = []
    for _ in range(reps):
        s = time.perf_counter()
        r = f()
        ts.append((time.perf_counter() - s) * 1e3)
        del r
    ts.sort()
    return ts[len(ts) // 2], ts[0]


print(f"numpy {np.__version__}, 2^{log2} f32, {reps} runs: median / min ms")
for share, t in [(1, -0.49), (50, 0.0), (99, 0.49)]:
    t = np.float32(t)
    med, lo = timed(lambda: x[x < t])
    print(f"x[x < t] {share:2d}%   {med:8.1f} / {lo:8.1f}")
med, lo = timed(lambda: np.count_nonzero(x < 0))
print(f"count 50%     {med:8.1f} / {lo:8.1f}")
med, lo = timed(lambda: np.flatnonzero(x < 0))
print(f"nonzero 50%   {med:8.1f} / {lo:8.1f}")
med, lo = timed(lambda: np.cumsum(x))
print(f"cumsum f32    {med:8.1f} / {lo:8.1f}")
