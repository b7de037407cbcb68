#!/usr/bin/python3
"""Scores a fixed predictor bundle on measured rows, per machine: what a user of that bundle would have
seen on those machines (no retraining, unlike `abacus eval`).

usage: scripts/score_bundle.py ROWS.csv [--model FILE] [--profiles DIR] [--machines ID,...] [--table]

Every `ok` row is predicted with `abacus predict GRAPH --batch B --optimizer O --format json`:
  - by hardware id (`--hw cpuT --calib calib_s`: the bundle's per-hardware model at the row's speed index),
  - and, when DIR holds the profile of the row's machine (DIR/<id>.machine) and the bundle has the
    profile-mode model, by profile (`--machine DIR/<id>.machine --calib calib_s`).
Prints per machine the rows, time MRE by hardware id and by profile, memory MRE; with --table, one line
per row (network, input, batch, optimizer, measured and predicted times) for the README.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ABACUS = os.environ.get("ABACUS", os.path.join(ROOT, "build", "release", "abacus"))  # ABACUS=PATH: another build


def predict(args):
    p = subprocess.run([ABACUS, "predict"] + args + ["--format", "json"], cwd=ROOT, capture_output=True, text=True)
    if p.returncode:
        return None, p.stderr.strip()
    return json.loads(p.stdout), None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rows")
    ap.add_argument("--model")
    ap.add_argument("--profiles", default=os.path.join(ROOT, "data", "machines"))
    ap.add_argument("--machines", help="only these machine ids")
    ap.add_argument("--table", action="store_true")
    a = ap.parse_args(argv)
    want = set(a.machines.split(",")) if a.machines else None
    rows = [r for r in csv.DictReader(open(a.rows)) if r["status"] == "ok" and r["graph"]]
    rows = [r for r in rows if r.get("machine", "unrecorded") != "unrecorded" and (not want or r["machine"] in want)]
    by = defaultdict(lambda: {"hw": [], "prof": [], "mem": []})
    lines = []
    for r in rows:
        base = [r["graph"], "--batch", r["batch"], "--optimizer", r["optimizer"]]
        if r.get("runtime"):  # a PyTorch 2 or TensorFlow row is priced by its runtime's rules and rates
            base += ["--runtime", r["runtime"]]
        if a.model:
            base += ["--model", a.model]
        T, M = float(r["time_s"]), float(r["memory_bytes"])
        hw, err = predict(base + ["--hw", r["hw"], "--calib", r["calib_s"]])
        if hw is None:
            print(f"score_bundle: {r['network']} {r['input_shape']}: {err}", file=sys.stderr)
            continue
        d = by[r["machine"]]
        d["hw"].append(abs(hw["time_s"] - T) / T)
        d["mem"].append(abs(hw["memory_bytes"] - M) / M)
        prof_file = os.path.join(a.profiles, r["machine"] + ".machine")
        pt = None
        if os.path.exists(prof_file):
            pr, err = predict(base + ["--machine", prof_file, "--calib", r["calib_s"]])
            if pr is not None:
                pt = pr
                d["prof"].append(abs(pr["time_s"] - T) / T)
        lines.append((r, hw, pt))
    print("| machine | rows | time MRE, by hardware id | time MRE, by profile | memory MRE |")
    print("|---|---|---|---|---|")
    for mid, d in sorted(by.items()):
        prof = f"{100 * statistics.mean(d['prof']):.1f} %" if d["prof"] else "no profile"
        print(f"| {mid} | {len(d['hw'])} | {100 * statistics.mean(d['hw']):.1f} % | {prof} | "
              f"{100 * statistics.mean(d['mem']):.2f} % |")
    if a.table:
        print()
        print("| network | input | optimizer | measured | by profile (90 % interval) | error | by hardware id |")
        print("|---|---|---|---|---|---|---|")
        for r, hw, pt in lines:
            T = float(r["time_s"])
            prof = (f"{1000 * pt['time_s']:.1f} ms ({1000 * pt['time_lo_s']:.1f}–{1000 * pt['time_hi_s']:.1f})"
                    if pt else "-")
            perr = f"{100 * (pt['time_s'] - T) / T:+.1f} %" if pt else "-"
            print(f"| {r['network']} | {r['input_shape']} | {r['optimizer']} | {1000 * T:.1f} ms | {prof} | {perr} | "
                  f"{1000 * hw['time_s']:.1f} ms ({100 * (hw['time_s'] - T) / T:+.1f} %) |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
