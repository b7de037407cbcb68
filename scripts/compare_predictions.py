#!/usr/bin/python3
"""Shows that a change to the library leaves the bundled predictor's predictions alone (or says by how much
it moves them): every distinct (graph, batch, optimizer, hw) of the dataset's ok rows is predicted by one
abacus binary, and two such dumps are compared.

usage:
  scripts/compare_predictions.py dump --abacus BIN --out FILE.tsv [--rows data/dataset.csv] [--model FILE]
  scripts/compare_predictions.py compare BEFORE.tsv AFTER.tsv

dump writes one line per configuration: graph, batch, optimizer, hw, predicted time (s), its 90 % interval,
predicted peak memory (bytes), or the error abacus printed. Rows whose machine has a profile in
data/machines/ are predicted a second time by that profile (predict --machine), keyed by the machine id
instead of the hw id. compare prints how many configurations differ, the largest relative difference of
time and of memory, and the ten largest, and exits 1 when anything differs.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def configurations(rows_path):
    seen = []
    keys = set()
    with open(rows_path, newline="") as f:
        for r in csv.DictReader(f):
            if r["status"] != "ok":
                continue
            for mode, target in (("hw", r["hw"]), ("machine", r.get("machine", "unrecorded"))):
                if mode == "machine" and not os.path.exists(os.path.join(ROOT, "data", "machines", target + ".machine")):
                    continue
                k = (r["graph"], r["batch"], r["optimizer"], mode, target)
                if k not in keys:
                    keys.add(k)
                    seen.append(k)
    return seen


def dump(args):
    confs = configurations(args.rows)
    done = 0
    with open(args.out, "w") as out:
        for graph, batch, opt, mode, target in confs:
            cmd = [args.abacus, "predict", os.path.join(ROOT, graph), "--batch", batch, "--optimizer", opt,
                   "--format", "json"]
            cmd += ["--hw", target] if mode == "hw" else ["--machine", os.path.join(ROOT, "data", "machines", target + ".machine")]
            if args.model:
                cmd += ["--model", args.model]
            p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
            if p.returncode:
                res = "error\t" + p.stderr.strip().replace("\t", " ").replace("\n", " ")
            else:
                j = json.loads(p.stdout)
                res = "%.9g\t%.9g\t%.9g\t%d" % (j["time_s"], j["time_lo_s"], j["time_hi_s"], j["memory_bytes"])
            out.write("\t".join((graph, batch, opt, mode, target, res)) + "\n")
            done += 1
            if done % 500 == 0:
                print("%d of %d" % (done, len(confs)), file=sys.stderr)
    print("%d configurations predicted into %s" % (len(confs), args.out))
    return 0


def load(path):
    d = {}
    with open(path) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            d[tuple(p[:5])] = p[5:]
    return d


def rel(a, b):
    return abs(a - b) / abs(a) if a else (0.0 if a == b else float("inf"))


def compare(args):
    a, b = load(args.before), load(args.after)
    only = set(a) ^ set(b)
    diffs = []
    for k in set(a) & set(b):
        x, y = a[k], b[k]
        if x == y:
            continue
        if x[0] == "error" or y[0] == "error":
            diffs.append((float("inf"), float("inf"), k, x, y))
            continue
        dt = max(rel(float(x[i]), float(y[i])) for i in range(3))
        dm = rel(float(x[3]), float(y[3]))
        diffs.append((dt, dm, k, x, y))
    print("%d configurations in both, %d in only one, %d differ" % (len(set(a) & set(b)), len(only), len(diffs)))
    if diffs:
        print("largest time difference: %.3g %%; largest memory difference: %.3g %%" %
              (100 * max(d[0] for d in diffs), 100 * max(d[1] for d in diffs)))
        for d in sorted(diffs, key=lambda d: -max(d[0], d[1]))[:10]:
            print("  %s: %s -> %s" % (" ".join(d[2]), " ".join(d[3]), " ".join(d[4])))
    return 1 if diffs or only else 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--abacus", default=os.path.join(ROOT, "build", "release", "abacus"))
    d.add_argument("--out", required=True)
    d.add_argument("--rows", default=os.path.join(ROOT, "data", "dataset.csv"))
    d.add_argument("--model")
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    args = ap.parse_args(argv)
    return dump(args) if args.cmd == "dump" else compare(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
