#!/usr/bin/python3
"""Computes the figures of data/README.md (the dataset card) from the committed rows.

Usage: /usr/bin/python3 scripts/dataset_card.py [data/dataset.csv]

Prints, in Markdown: row counts by status, hardware and optimizer; rows per machine id (with what the
machines table, machines.jsonl beside the CSV, says of each); counts per network; the ranges
covered; the noise floor (median and 90th percentile of the relative difference between the two
measurements of a repeated configuration, for time, time/calib_s and memory, per hardware id); the
share of rows measured while other processes were busy; and the machine time the campaign spent.
Only the standard library is used.
"""
import csv
import json
import os
import statistics
import sys
from collections import Counter, defaultdict
from datetime import datetime


def pct(values, q):
    v = sorted(values)
    if not v:
        return float("nan")
    k = (len(v) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def rel(a, b):
    # Symmetric: the error a predictor that knew one measurement exactly would make on the other.
    return 0.5 * (abs(a - b) / a + abs(a - b) / b)


def main(path):
    rows = list(csv.DictReader(open(path, newline="")))
    ok = [r for r in rows if r["status"] == "ok" and r["graph"]]
    print(f"rows: {len(rows)}; by status: " + ", ".join(f"{k} {v}" for k, v in sorted(Counter(r['status'] for r in rows).items())))
    print(f"ok rows with a graph (usable for training): {len(ok)}")
    print()
    print("| hardware | optimizer | ok rows | networks |")
    print("|---|---|---|---|")
    by = defaultdict(list)
    for r in ok:
        by[(r["hw"], r["optimizer"])].append(r)
    for (hw, opt), rs in sorted(by.items()):
        print(f"| {hw} | {opt} | {len(rs)} | {len(set(r['network'] for r in rs))} |")
    print()
    # Rows by machine (docs/PROTOCOL.md version 2: every row names the machine that measured it).
    table = {}
    # The machines table beside the file, else the project's one (a runtime's rows live in data/<runtime>/).
    mpath = os.path.join(os.path.dirname(path) or ".", "machines.jsonl")
    if not os.path.exists(mpath):
        mpath = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(path))), "machines.jsonl")
    if os.path.exists(mpath):
        for line in open(mpath):
            if line.strip():
                d = json.loads(line)
                table[d["id"]] = d
    print("| machine | CPU | ISA cap | torch capability | threads | ok rows | networks | other rows | noise pairs | time noise median |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    per_m = defaultdict(list)
    for r in rows:
        per_m[r.get("machine", "unrecorded") or "unrecorded"].append(r)
    for mid, rs in sorted(per_m.items(), key=lambda kv: -len(kv[1])):
        okm = [r for r in rs if r["status"] == "ok" and r["graph"]]
        g = defaultdict(list)
        for r in okm:
            g[(r["network"], r["input_shape"], r["optimizer"], r["hw"])].append(float(r["time_s"]))
        pairs = [rel(v[0], v[1]) for v in g.values() if len(v) > 1]
        d = table.get(mid)
        cpu = f"{d['vendor']} family {d['family']} model {d['model']}" if d else "not recorded"
        print(f"| {mid} | {cpu} | {d['isa_cap'] if d else '-'} | {d['torch_capability'] if d else '-'} | "
              f"{d['threads'] if d else ', '.join(sorted({r['threads'] for r in rs}))} | {len(okm)} | "
              f"{len({r['network'] for r in okm})} | {len(rs) - len(okm)} | {len(pairs)} | "
              + (f"{100 * pct(pairs, .5):.2f} % |" if pairs else "- |"))
    print()
    # A configuration is (network, input shape with batch, optimizer), whatever its status; repeats of
    # the noise floor are not configurations of their own.
    confs = defaultdict(set)
    for r in rows:
        if r["repeat"] == "0":
            confs[r["hw"]].add((r["network"], r["input_shape"], r["optimizer"]))
    base = max(confs.values(), key=len) if confs else set()
    print("configurations per hardware id: " + ", ".join(
        f"{hw} {len(c)} ({100 * len(c) / len(base):.1f} % of the largest)" for hw, c in sorted(confs.items())))
    print()
    nets = Counter(r["network"] for r in ok)
    zoo_nets = {n: c for n, c in nets.items() if not n.startswith("gen_")}
    gen = Counter(n.rsplit("_s", 1)[0] for n in nets if n.startswith("gen_"))
    gen_rows = Counter(n.rsplit("_s", 1)[0] for r in ok for n in [r["network"]] if n.startswith("gen_"))
    print(f"networks with ok rows: {len(nets)} ({len(zoo_nets)} of the zoo, {sum(gen.values())} generated)")
    if gen:
        # Generated networks (collector/generator.py, docs/GENERATOR.md), by family: networks and ok rows.
        print("generated networks by family (networks / ok rows): " + ", ".join(
            f"{fam} {gen[fam]} / {gen_rows[fam]}" for fam in sorted(gen)) +
            f"; in all {sum(gen.values())} networks, {sum(gen_rows.values())} ok rows")
    print("per zoo network (ok rows): " + ", ".join(f"{n} {c}" for n, c in sorted(zoo_nets.items())))
    print()
    batches = sorted({int(r["batch"]) for r in ok})
    shapes = Counter(r["input_shape"].split("x", 1)[1] for r in ok)
    print(f"batch sizes: {batches}")
    print(f"input shapes (without batch): {len(shapes)} distinct, e.g. " + ", ".join(s for s, _ in shapes.most_common(8)))
    if ok:
        ts = [float(r["time_s"]) for r in ok]
        ms = [int(r["memory_bytes"]) for r in ok]
        print(f"time_s from {min(ts):.4g} to {max(ts):.4g} s; memory from {min(ms)/2**20:.1f} to {max(ms)/2**20:.1f} MiB")
    print()
    # Noise floor: configurations measured more than once (repeat 0 and 1, separate workers).
    groups = defaultdict(list)
    for r in ok:
        groups[(r["network"], r["input_shape"], r["optimizer"], r["hw"], r.get("machine", ""))].append(r)
    print("| hardware | pairs | time median | time p90 | time/calib median | time/calib p90 | memory median | memory p90 |")
    print("|---|---|---|---|---|---|---|---|")
    per_hw = defaultdict(lambda: ([], [], []))
    for (net, shape, opt, hw, _machine), rs in groups.items():
        if len(rs) < 2:
            continue
        a, b = rs[0], rs[1]
        t, tc, m = per_hw[hw]
        t.append(rel(float(a["time_s"]), float(b["time_s"])))
        if a["calib_s"] and b["calib_s"]:
            tc.append(rel(float(a["time_s"]) / float(a["calib_s"]), float(b["time_s"]) / float(b["calib_s"])))
        m.append(rel(int(a["memory_bytes"]), int(b["memory_bytes"])))
    for hw, (t, tc, m) in sorted(per_hw.items()):
        print(f"| {hw} | {len(t)} | {100*pct(t,.5):.2f} % | {100*pct(t,.9):.2f} % | {100*pct(tc,.5):.2f} % | "
              f"{100*pct(tc,.9):.2f} % | {100*pct(m,.5):.4f} % | {100*pct(m,.9):.4f} % |")
    print()
    busy = [float(r["busy_other"]) for r in ok if r.get("busy_other")]
    if busy:
        print(f"busy_other (share of the machine used by other processes during timing): median {statistics.median(busy):.2f}; "
              f"{sum(b > 0.1 for b in busy)} of {len(busy)} rows above 0.10")
    stamps = sorted(datetime.strptime(r["timestamp"], "%Y-%m-%dT%H:%M:%SZ") for r in rows if r.get("timestamp"))
    if stamps:
        # Machine time: sum of gaps between consecutive rows, ignoring pauses longer than 30 minutes.
        spent = sum(min((b - a).total_seconds(), 1800) for a, b in zip(stamps, stamps[1:]))
        print(f"campaign: {stamps[0]:%Y-%m-%d %H:%M} to {stamps[-1]:%Y-%m-%d %H:%M} UTC, about {spent/3600:.1f} machine hours")
    versions = Counter((r.get("runtime", "") or "torch-1.13.1", r["torch_version"], r["torchvision_version"],
                        r["protocol"], r["cpu_model"], r["cores"], r.get("blas", "")) for r in rows)
    for (rt, tv, tvv, proto, cpu, cores, blas), n in versions.items():
        print(f"environment: runtime {rt} (torch {tv}, torchvision {tvv}), BLAS {blas or 'not recorded'}, "
              f"protocol {proto}, CPU '{cpu}', {cores} cores ({n} rows)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "data/dataset.csv")
