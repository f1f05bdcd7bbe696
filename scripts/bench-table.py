#!/usr/bin/env python3
"""Turns `tally bench hist --json` output into the Markdown tables of docs/PERF.md.

usage: bench-table.py BENCH.json [--strategies auto,block-shared,...]
One table per sample type: rows = distribution x bins, columns = strategies, cells = GB/s and
the percentage of the read bandwidth measured in the same run.
"""
import json
import sys

def main():
    path = sys.argv[1]
    wanted = None
    if len(sys.argv) > 3 and sys.argv[2] == "--strategies":
        wanted = sys.argv[3].split(",")
    r = json.load(open(path))
    rows = r["rows"]
    strategies = wanted or list(dict.fromkeys(x["strategy"] for x in rows))
    print(f"{r['device']}, {r['samples']} samples per case, read bandwidth {r['read_bandwidth_gbs']:.0f} GB/s (same run).")
    print()
    for dtype in dict.fromkeys(x["dtype"] for x in rows):
        print(f"**{dtype}**")
        print()
        print("| distribution | bins | " + " | ".join(strategies) + " |")
        print("|---|---:|" + "---:|" * len(strategies))
        cases = dict.fromkeys((x["distribution"], x["bins"]) for x in rows if x["dtype"] == dtype)
        for dist, bins in sorted(cases, key=lambda c: (c[1], ["uniform", "hot90", "hot100", "zipf"].index(c[0]))):
            cells = []
            for s in strategies:
                m = [x for x in rows if x["dtype"] == dtype and x["distribution"] == dist and x["bins"] == bins and x["strategy"] == s]
                if not m:
                    cells.append("")
                    continue
                x = m[0]
                ran = "" if x["ran"] == s or s != "auto" else f" ({x['ran']})"
                bad = "" if x["verified"] else " MISMATCH"
                fell = f" -> {x['ran']}" if s != "auto" and x["ran"] != s else ""
                cells.append(f"{x['gbs']:.0f} ({100 * x['fraction_of_read_bandwidth']:.0f}%){ran}{fell}{bad}")
            print(f"| {dist} | {bins} | " + " | ".join(cells) + " |")
        print()

main()
