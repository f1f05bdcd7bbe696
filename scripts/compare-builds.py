#!/usr/bin/env python3
"""The same bench cases from two builds (old, new), each run twice alternately: the median of
each build's two runs, their ratio, and each build's own spread (run-to-run noise)."""
import glob, json, os, sys

out = sys.argv[1]
for what in ("hist", "weighted", "hist2d"):
    runs = {"old": [], "new": []}
    for build in runs:
        for f in sorted(glob.glob(os.path.join(out, f"compare-{what}-{build}-*.json.keep"))):
            try:
                runs[build].append(json.load(open(f)))
            except ValueError:
                pass
    if not runs["old"] or not runs["new"]:
        print(f"# {what}: missing runs")
        continue
    def key(r):
        return (r.get("dtype", r.get("case")), r["distribution"], str(r["bins"]), r["strategy"], r.get("accumulation", ""))
    table = {}
    for build, reports in runs.items():
        for rep in reports:
            for r in rep["rows"]:
                table.setdefault(key(r), {}).setdefault(build, []).append(r["ms"])
    bw = runs["new"][0]["read_bandwidth_gbs"]
    print(f"# bench {what}: {runs['new'][0]['device']}, read bandwidth {bw:.0f} GB/s; ms: best of each build's runs")
    print(f"{'case':44} {'old ms':>9} {'new ms':>9} {'new/old':>8} {'spread old':>10} {'spread new':>10}")
    worst = 0.0
    for k, v in table.items():
        if "old" not in v or "new" not in v:
            continue
        o, n = min(v["old"]), min(v["new"])
        so = max(v["old"]) / o - 1
        sn = max(v["new"]) / n - 1
        worst = max(worst, n / o)
        print(f"{' '.join(k):44} {o:9.4f} {n:9.4f} {n / o:8.3f} {100 * so:9.1f}% {100 * sn:9.1f}%")
    print(f"# worst new/old: {worst:.3f}")
