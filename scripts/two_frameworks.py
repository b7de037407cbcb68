#!/usr/bin/python3
"""The same network in two frameworks (issue "Frameworks"): every TensorFlow row of data/tf-2.21.0/dataset.csv
whose Keras network has a PyTorch twin (collector/tf_zoo.py `torch_twin`) measured at the same input, batch and
optimizer in data/dataset.csv, side by side, with what Abacus says of each:

  PyTorch: `abacus predict` with the bundled predictor on the twin's graph, on the torch row's own hardware
           key (cpu1@<machine>) and speed index;
  TensorFlow: `abacus predict --runtime tf-2.21.0` with the bundled predictor on the Keras graph (its
           tf-2.21.0 hardware key, the row's speed index), and `abacus inspect --runtime tf-2.21.0`: the memory
           simulation under TensorFlow's rules alone (src/runtime_tf_cpu.c).
  Both predictors saw these rows in training: in-sample figures, not tests (README's per-runtime table has
  the held-out ones).

  /usr/bin/python3 scripts/two_frameworks.py [--out docs/eval/frameworks.md]
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
A = os.path.join(ROOT, "build/release/abacus")
TF_PY = os.path.join(ROOT, ".runtimes/tf-2.21.0/bin/python")


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def twins():
    p = subprocess.run([TF_PY, "-m", "collector.tf_worker", "--list"], capture_output=True, text=True, cwd=ROOT)
    if p.returncode:
        sys.exit(f"two_frameworks: cannot list the Keras zoo ({p.stderr.strip()[-300:]}); run scripts/setup.sh")
    return {e["name"]: e.get("torch_twin") for e in map(json.loads, filter(str.strip, p.stdout.splitlines()))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="write the markdown table here (default: print it)")
    a = ap.parse_args()
    tw = twins()
    tf_rows = [r for r in csv.DictReader(open(os.path.join(ROOT, "data/tf-2.21.0/dataset.csv"))) if r["status"] == "ok"]
    torch_rows = [r for r in csv.DictReader(open(os.path.join(ROOT, "data/dataset.csv"))) if r["status"] == "ok"
                  and r["machine"] not in ("", "unrecorded") and r["hw"] == "cpu1" and "sse41" not in r["machine"]]
    by = {}
    for r in torch_rows:
        by.setdefault((r["network"], r["input_shape"], r["batch"], r["optimizer"]), []).append(r)
    lines = []
    for r in tf_rows:
        twin = tw.get(r["network"])
        match = by.get((twin, r["input_shape"], r["batch"], r["optimizer"])) if twin else None
        if not match:
            continue
        t = match[0]
        t_time = statistics.median(float(x["time_s"]) for x in match)
        t_mem = statistics.median(int(x["memory_bytes"]) for x in match)
        pt = run_json([A, "predict", t["graph"], "--batch", t["batch"], "--optimizer", t["optimizer"], "--hw",
                       f"cpu1@{t['machine']}", "--calib", t["calib_s"], "--format", "json"])
        sim = run_json([A, "inspect", r["graph"], "--batch", r["batch"], "--optimizer", r["optimizer"], "--runtime",
                        "tf-2.21.0", "--format", "json"])["memory"]
        ptf = run_json([A, "predict", r["graph"], "--batch", r["batch"], "--optimizer", r["optimizer"], "--runtime",
                        "tf-2.21.0", "--calib", r["calib_s"], "--format", "json"])
        lines.append((twin, r["input_shape"].split("x", 1)[-1], int(r["batch"]), r["optimizer"], int(t["params"]),
                      int(r["params"]), t_time, float(r["time_s"]), pt["time_s"], t_mem, int(r["memory_bytes"]),
                      pt["memory_bytes"], sim["peak"], float(r["busy_other"]), ptf["time_s"], ptf["memory_bytes"]))
    lines.sort()
    mib = 2 ** 20
    out = ["| network | input | batch | opt | params torch / keras | time torch (pred) | time TF (pred) | "
           "memory torch (pred) | memory TF (pred; simulated under tf-2.21.0) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for (n, inp, b, o, pp, pk, tt, ttf, ptt, mt, mtf, pmt, smt, busy, pttf, pmtf) in lines:
        out.append(f"| {n} | {inp} | {b} | {o} | {pp / 1e6:.2f} M / {pk / 1e6:.2f} M | {tt * 1e3:.1f} ms "
                   f"({ptt * 1e3:.1f}, {100 * (ptt - tt) / tt:+.0f} %) | {ttf * 1e3:.1f} ms"
                   f"{' (shared machine)' if busy > 0.1 else ''} ({pttf * 1e3:.1f}, {100 * (pttf - ttf) / ttf:+.0f} %) | "
                   f"{mt / mib:.1f} MiB ({pmt / mib:.1f}, {100 * (pmt - mt) / mt:+.1f} %) | {mtf / mib:.1f} MiB "
                   f"({pmtf / mib:.1f}, {100 * (pmtf - mtf) / mtf:+.1f} %; {smt / mib:.1f}, {100 * (smt - mtf) / mtf:+.0f} %) |")
    def mre(i, j):
        return 100 * statistics.mean(abs(x[i] - x[j]) / x[j] for x in lines) if lines else float("nan")
    summary = (f"\nMean relative error over these rows (in-sample): PyTorch time {mre(8, 6):.1f} %, memory "
               f"{mre(11, 9):.2f} %; TensorFlow time {mre(14, 7):.1f} %, memory {mre(15, 10):.2f} %, its simulation "
               f"alone {mre(12, 10):.1f} %. TensorFlow / PyTorch, median: time "
               f"{statistics.median(x[7] / x[6] for x in lines):.2f}x, memory "
               f"{statistics.median(x[10] / x[9] for x in lines):.2f}x.\n") if lines else ""
    nets = sorted({x[0] for x in lines})
    text = (f"# The same network in two frameworks\n\n{len(lines)} configurations of {len(nets)} networks measured in "
            "both frameworks on one machine (AMD EPYC family 25 model 17, one thread; PyTorch 1.13.1 rows of its "
            "machine id, TensorFlow 2.21.0 rows of data/tf-2.21.0/dataset.csv; `scripts/two_frameworks.py`). "
            "In brackets, what Abacus says and its error: the bundled predictor, which was trained on these rows "
            "of both frameworks (in-sample, not a test), and for TensorFlow's memory also the simulation under the "
            "tf-2.21.0 rules alone. TensorFlow rows marked 'shared machine' were timed while the PyTorch campaign "
            "ran (busy_other > 0.1): their times are upper bounds; memory does not depend on it.\n\n"
            + "\n".join(out) + "\n" + summary)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
