#!/usr/bin/python3
"""How well a machine profile repeats: per machine id and rate, the spread of the rate over the repeated
profiles in data/machines/repeats/ (separate `abacus calibrate --out` processes): (max - min) / median,
and the median of the within-profile spreads. Prints a Markdown table (docs/MACHINES.md).

usage: scripts/profile_repeatability.py [DIR]    (default data/machines/repeats)
"""
import collections
import glob
import os
import statistics
import sys


def read(path):
    d = {"rates": {}, "spread": {}}
    for line in open(path):
        f = line.split()
        if not f:
            continue
        if f[0] == "rate":
            d["rates"][f[1]] = float(f[2])
            d["spread"][f[1]] = float(f[3])
        elif f[0] in ("machine", "seconds", "runs"):
            d[f[0]] = f[1]
    return d


def main(root):
    by = collections.defaultdict(list)
    for p in sorted(glob.glob(os.path.join(root, "*.machine"))):
        d = read(p)
        by[d["machine"]].append(d)
    for mid, ps in sorted(by.items()):
        secs = [float(p["seconds"]) for p in ps]
        print(f"### {mid}: {len(ps)} profiles, {statistics.median(secs):.0f} s each (median of {len(secs)})\n")
        print("| rate | median s/unit | spread over profiles | median within-profile spread |")
        print("|---|---|---|---|")
        spreads = []
        for r in ps[0]["rates"]:
            v = [p["rates"][r] for p in ps]
            med = statistics.median(v)
            sp = (max(v) - min(v)) / med
            spreads.append(sp)
            print(f"| {r} | {med:.4g} | {100 * sp:.1f} % | {100 * statistics.median(p['spread'][r] for p in ps):.1f} % |")
        print(f"\nrates within 3 %: {sum(s <= 0.03 for s in spreads)} of {len(spreads)}; "
              f"median spread {100 * statistics.median(spreads):.1f} %\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "data/machines/repeats")
