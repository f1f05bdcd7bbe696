#!/usr/bin/env python3
"""Summarises ncu's per-instruction source page of one kernel (exported with
`ncu --import R.ncu-rep --page source --csv --print-source sass > R-sass.csv`):
the instructions that hold at least THRESHOLD percent of the warp stall samples (and every
barrier), with their top stall reasons and the running share, then the instructions that move
the most L2 sectors with their ideal count (where they differ, accesses are split or strided).

    python3 scripts/ncu/sass-summary.py R-sass.csv [THRESHOLD]
"""
import csv
import sys


def number(text):
    return int(text) if text not in ("", "-") else 0


rows = list(csv.reader(open(sys.argv[1])))
header, data = rows[1], rows[2:]
col = {name: i for i, name in enumerate(header)}
stalls = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
samples = "Warp Stall Sampling (All Samples)"
total = sum(number(r[col[samples]]) for r in data) or 1
threshold = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
print(f"{len(data)} instructions, {total} warp stall samples")
print("index  share  running  instruction  top stall reasons (% of all samples)")
running = 0
for k, r in enumerate(data):
    s = number(r[col[samples]])
    running += s
    source = r[col["Source"]].strip()
    if 100 * s / total >= threshold or source.startswith("BAR"):
        top = sorted(((number(r[col[h]]), h[6:]) for h in stalls), reverse=True)[:3]
        reasons = " ".join(f"{n}:{100 * v / total:.1f}" for v, n in top if v)
        print(f"{k:5d} {100 * s / total:5.1f}% {100 * running / total:6.1f}%  {source[:56]:56s} {reasons}")
sectors = "L2 Theoretical Sectors Global"
ideal = "L2 Theoretical Sectors Global Ideal"
moving = sorted(((number(r[col[sectors]]), k, r) for k, r in enumerate(data)), key=lambda x: -x[0])
print("\nindex  L2 sectors  ideal  executed  instruction")
for n, k, r in moving[:12]:
    if n:
        print(f"{k:5d} {n:11d} {number(r[col[ideal]]):11d} {number(r[col['Instructions Executed']]):9d}  {r[col['Source']].strip()[:60]}")
