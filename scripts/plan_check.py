#!/usr/bin/python3
"""Checks `abacus plan` by measurement (issue "The answers users ask for").

For each (network, size, optimizer, budget) below: `abacus plan` gives the largest batch B whose predicted
peak memory, at the upper end of its 90 % interval, fits the budget; the collector then measures the
memory at B and at B + 1 (protocol memory_bytes). The answer is right when B fits and B + 1 does not;
safe but conservative when both fit; wrong when B does not fit. One line per case, and a Markdown table.

Usage: /usr/bin/python3 scripts/plan_check.py [--model FILE] [--out DIR]
Standard library only; runs the collector (a few minutes: one torch worker per case)."""
import csv
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ABACUS = os.path.join(ROOT, "build/release/abacus")
MiB = 1 << 20

# Three kinds of network; budgets chosen so that the answer is a batch of a few dozen or more, where one
# sample is a small share of the memory and the check is demanding.
CASES = [
    ("squeezenet1_1", "64", "sgd", 150 * MiB),
    ("transformer_enc", "L64", "adam", 200 * MiB),
    ("unet_small", "64", "sgd", 300 * MiB),
]


def run(args):
    p = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"plan_check: {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    return p.stdout


def main(argv):
    model = None
    out = "/tmp/abacus-plan-check"
    i = 0
    while i < len(argv):
        if argv[i] == "--model":
            model = argv[i + 1]
            i += 2
        elif argv[i] == "--out":
            out = argv[i + 1]
            i += 2
        else:
            sys.exit(__doc__)
    os.makedirs(out, exist_ok=True)
    lines = ["| network | optimizer | budget | plan's batch B | measured at B | measured at B + 1 | result |",
             "|---|---|---|---|---|---|---|"]
    for net, size, opt, budget in CASES:
        graph = f"data/graphs/{net}-{size}.onnx"
        args = [ABACUS, "plan", graph, "--mem", str(budget), "--optimizer", opt, "--format", "json"]
        if model:
            args += ["--model", model]
        plan = json.loads(run(args))
        b = int(plan["max_batch"])
        csv_path = os.path.join(out, f"{net}-{size}-{opt}-{budget}.csv")
        shape = ["--seq", size[1:]] if size.startswith("L") else ["--size", size]
        run([ABACUS, "profile", "--models", net, *shape, "--batch", f"{b},{b + 1}", "--optimizer", opt,
             "--out", csv_path, "--graphs", os.path.join(out, "graphs"), "--any-size"])
        mem = {}
        for r in csv.DictReader(open(csv_path)):
            if r["status"] == "ok" and r["repeat"] == "0":
                mem[int(r["batch"])] = int(r["memory_bytes"])
            elif r["repeat"] == "0":
                mem[int(r["batch"])] = r["status"]
        m0, m1 = mem.get(b), mem.get(b + 1)
        if not isinstance(m0, int) or not isinstance(m1, int):
            verdict = f"not measured ({m0}, {m1})"
        elif m0 > budget:
            verdict = "WRONG: B does not fit"
        elif m1 > budget:
            verdict = "exact: B fits, B + 1 does not"
        else:
            verdict = f"safe, conservative: B + 1 fits too ({(budget - m1) / budget * 100:.2f} % to spare)"
        fmt = lambda m: f"{m / MiB:.2f} MiB" if isinstance(m, int) else str(m)
        print(f"{net} {size} {opt} budget {budget / MiB:.0f} MiB: B = {b}; measured {fmt(m0)} at B, "
              f"{fmt(m1)} at B + 1: {verdict}", flush=True)
        lines.append(f"| {net} {size} | {opt} | {budget / MiB:.0f} MiB | {b} | {fmt(m0)} | {fmt(m1)} | {verdict} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1:])
