#!/usr/bin/env python3
"""Summarises a scan trace from trace_harness.cu (run-trace.sh): per tile 12 words, thread 0's
clock64 once the tile's number is known, after its rows, before and after its look-back, at
the end of its own work (words 0-4), the look-back's polls (the warp's) and rounds (word 5:
polls | rounds << 32), globaltimer at the same points (words 6-10), its SM (word 11). Prints
where a tile's time goes and, from the globaltimer, how much of each look-back instant polls
could not have saved: the time until every predecessor back to some tile with an inclusive
prefix had issued its publish (its aggregate; that tile its inclusive prefix), after the tile
issued its own (times of issue: when a published word could be read elsewhere is not traced).

    python3 trace_summary.py TRACE.bin [12] [BACK]   # BACK: predecessors searched (1024)"""
import sys
import numpy as np

words = int(sys.argv[2]) if len(sys.argv) > 2 else 12
t = np.fromfile(sys.argv[1], dtype=np.uint64).reshape(-1, words).astype(np.int64)
n = len(t)
c, g = t[:, 0:5], t[:, 6:11]
polls, rounds = t[:, 5] & 0xffffffff, t[:, 5] >> 32
life_ns = g[:, 4] - g[:, 0]
ghz = np.median((c[:, 4] - c[:, 0]) / np.maximum(life_ns, 1))
print(f"{n} tiles; SM clock {ghz:.2f} GHz by clock64 over globaltimer; globaltimer steps (ns): "
      f"{np.unique(np.diff(np.sort(g[:, 0])))[:6].tolist()}")
def q(x):
    p = np.percentile(x, [10, 50, 90, 99])
    return f"mean {x.mean():8.0f}  p10 {p[0]:8.0f}  p50 {p[1]:8.0f}  p90 {p[2]:8.0f}  p99 {p[3]:8.0f}"
print("per tile, ns (clock64 / GHz):")
for name, a, b in [("start -> rows done (loads, row scans)", 0, 1), ("rows -> look-back start (piece scan)", 1, 2),
                   ("look-back", 2, 3), ("look-back -> end (prefixes, stores)", 3, 4), ("whole tile", 0, 4)]:
    print(f"  {name:40s} {q((c[:, b] - c[:, a]) / ghz)}")
print(f"  polls a tile: mean {polls[1:].mean():.2f}, histogram {np.bincount(polls[1:])[:8].tolist()}")
print(f"  rounds a tile: mean {rounds[1:].mean():.2f}, histogram {np.bincount(rounds[1:])[:6].tolist()}")
# The earliest the look-back could end with instant polls: for each tile t and each candidate
# predecessor s in [t-BACK, t) with an inclusive prefix, max(incl[s], aggregates of s+1..t-1);
# the minimum over s. g2 is read just before the look-back, whose first step publishes the
# aggregate; g3 just after it, whose last step published the inclusive prefix. BACK covers
# the look-backs' reach (the ordered one keeps up to 512 tiles of history).
agg, incl = g[:, 2], g[:, 3]
ideal = np.zeros(n)
W = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
for i in range(1, n):
    lo = max(0, i - W)
    a = agg[lo:i][::-1]                  # nearest first
    run = np.maximum.accumulate(a)       # latest aggregate of tiles s+1..i-1 for s = i-1, i-2, ...
    later = np.concatenate(([0], run[:-1]))
    cand = np.maximum(incl[lo:i][::-1], later)
    ideal[i] = max(0, cand.min() - agg[i])
lb = g[1:, 3] - g[1:, 2]
print(f"  look-back by globaltimer            {q(lb)}")
print(f"  of it, waiting for predecessors     {q(ideal[1:])}")
print(f"  the rest (polls, merges)            {q(lb - ideal[1:])}")
late = (agg[1:] < agg[:-1]).mean()
print(f"  tiles that published their aggregate before their predecessor did: {late:.1%}")
