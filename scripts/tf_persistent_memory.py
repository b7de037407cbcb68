#!/usr/bin/env python3
"""Where the tf-2.21.0 memory simulation falls short of the measured rows (docs/COSTS.md, "TensorFlow 2.21",
"State per op").

  scripts/tf_persistent_memory.py [--dataset data/tf-2.21.0/dataset.csv] [--abacus build/release/abacus]
      [--runtime tf-2.21.0] [--fit] [--stacks ROWS.json,... --stack-dir DIR]

Per ok row: the measured persistent bytes (live between steps) and transient bytes (peak less persistent),
what `abacus inspect GRAPH --runtime tf-2.21.0 --batch B --optimizer O --format json` simulates for each,
the difference, and what it might scale with: the graph's layers (all, and the non-layout ones), its
trainable variables (initializers that are not in the graph's `abacus.buffers`), weight bytes and the
Keras layer count of the export's `abacus.tf.layers`. Then the memory MRE (|simulated − measured| / measured
over the peaks) over all rows and per network. --fit: least squares of the persistent gap on the layer and
variable counts (per optimizer), to compare with the controlled measurements. Python 3 with the `onnx`
package (Debian's /usr/bin/python3 has it).
"""
from __future__ import annotations

import argparse
import collections
import csv
import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MB = 1e6


def graph_facts(path, cache={}):
    """Trainable variables, Keras layers by class and ONNX node count of an exported graph."""
    if path in cache:
        return cache[path]
    import onnx
    m = onnx.load(path, load_external_data=False)
    meta = {p.key: p.value for p in m.metadata_props}
    buffers = set(filter(None, meta.get("abacus.buffers", "").split(",")))
    inits = [i for i in m.graph.initializer if i.name not in buffers]
    # Only the variables the graph's nodes name (folded constants are initializers too).
    params = [i for i in inits if i.name in _variable_names(meta, m)]
    keras_layers = collections.Counter()
    for item in filter(None, meta.get("abacus.tf.layers", "").split(",")):
        k, _, v = item.rpartition(":")
        keras_layers[k] = int(v)
    out = dict(variables=len(params), keras_layers=sum(v for k, v in keras_layers.items() if k != "InputLayer"),
               keras=keras_layers, onnx_nodes=len(m.graph.node))
    cache[path] = out
    return out


def _variable_names(meta, m):
    """Initializers named by a variable path ("layer/kernel"), not tf2onnx's folded constants ("..._57")."""
    names = set()
    for i in m.graph.initializer:
        leaf = i.name.rsplit("/", 1)[-1]
        if "/" in i.name and not any(ch.isdigit() for ch in leaf.rsplit("__", 1)[-1][:1]) and "__" not in leaf:
            names.add(i.name)
    return names


def inspect(abacus, path, batch, optim, runtime):
    cmd = [abacus, "inspect", path, "--batch", str(batch), "--optimizer", optim, "--format", "json"]
    if runtime:
        cmd += ["--runtime", runtime]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"{' '.join(cmd)}: {r.stderr.strip()}")
    d = json.loads(r.stdout)
    cats = collections.Counter(layer["category"] for layer in d["layers"])
    return d["memory"], cats


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default=os.path.join(ROOT, "data/tf-2.21.0/dataset.csv"))
    ap.add_argument("--abacus", default=os.path.join(ROOT, "build/release/abacus"))
    ap.add_argument("--runtime", default="tf-2.21.0")
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--stacks", default="", help="instead of the dataset: rows of scripts/tf_memory_rules.py --json "
                    "(comma-separated files) for its stack_KIND_N models")
    ap.add_argument("--stack-dir", default="/tmp/tf-rules", help="where those rows' graphs are (its --out-dir)")
    a = ap.parse_args(argv)
    if a.stacks:
        return stacks(a)
    with open(a.dataset, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["status"] == "ok" and r["memory_bytes"]]
    print(f"{'network':26} {'in':>4} {'B':>2} {'opt':4} {'pers':>7} {'sim':>7} {'gap':>7} {'trans':>7} {'sim':>7} "
          f"{'gap':>7} {'peak%':>6} {'lay':>4} {'nonlay':>6} {'vars':>4} {'keras':>5} {'gap/kl':>6} {'wMB':>6}")
    out = []
    for r in rows:
        path = os.path.join(ROOT, r["graph"])
        b = int(r["batch"])
        mem, cats = inspect(a.abacus, path, b, r["optimizer"], a.runtime)
        facts = graph_facts(path)
        pers, peak = int(r["persistent_bytes"]), int(r["memory_bytes"])
        trans, strans = peak - pers, mem["peak"] - mem["persistent"]
        layers = sum(cats.values())
        nonlayout = layers - cats.get("layout", 0)
        gap = pers - mem["persistent"]
        size = r["input_shape"].split("x")[-1]
        row = dict(network=r["network"].replace("keras_", ""), size=size, batch=b, opt=r["optimizer"], pers=pers,
                   sim_pers=mem["persistent"], trans=trans, sim_trans=strans, peak=peak, sim_peak=mem["peak"],
                   layers=layers, nonlayout=nonlayout, variables=facts["variables"], keras=facts["keras_layers"],
                   weights=mem["weights"], cats=cats)
        out.append(row)
        print(f"{row['network']:26} {size:>4} {b:>2} {r['optimizer']:4} {pers / MB:7.1f} {mem['persistent'] / MB:7.1f} "
              f"{gap / MB:7.1f} {trans / MB:7.1f} {strans / MB:7.1f} {(trans - strans) / MB:7.1f} "
              f"{100 * (mem['peak'] - peak) / peak:+6.1f} {layers:4} {nonlayout:6} {facts['variables']:4} "
              f"{facts['keras_layers']:5} {gap / max(facts['keras_layers'], 1) / MB:6.2f} {mem['weights'] / MB:6.1f}")
    mre = sum(abs(r["sim_peak"] - r["peak"]) / r["peak"] for r in out) / len(out)
    print(f"\nmemory MRE over {len(out)} ok rows: {100 * mre:.1f} %")
    per = collections.defaultdict(list)
    for r in out:
        per[r["network"]].append(abs(r["sim_peak"] - r["peak"]) / r["peak"])
    for k in sorted(per):
        print(f"  {k:26} {len(per[k]):2} rows  {100 * sum(per[k]) / len(per[k]):5.1f} %")
    if a.fit:
        fit(out)
    return 0


def stacks(a):
    """The controlled measurements: rows written by scripts/tf_memory_rules.py --json for its stack_KIND_N
    models (graphs in --stack-dir). Per kind and optimizer: persistent bytes per added layer (least squares
    over N >= 1, so that the first configuration of a process, which carries some 150 KB more, drops out of
    the slope), the TensorFlow ops per layer, and the persistent bytes measured and simulated now, per
    configuration."""
    import numpy as np
    rows = []
    for path in a.stacks.split(","):
        with open(path) as f:
            rows += json.load(f)
    by = collections.defaultdict(list)
    print(f"{'model':18} {'opt':4} {'B':>2} {'tf_ops':>6} {'measured':>9} {'before':>9} {'after':>9} {'after-meas':>10}")
    for r in rows:
        kind, n = r["model"].rsplit("_", 1)
        mem, _ = inspect(a.abacus, os.path.join(a.stack_dir, r["model"] + ".onnx"), r["batch"], r["optimizer"], a.runtime)
        by[(kind, r["optimizer"])].append((int(n), r["persistent"], mem["persistent"], r.get("tf_ops", 0)))
        print(f"{r['model']:18} {r['optimizer']:4} {r['batch']:>2} {r.get('tf_ops', 0):>6} {r['persistent'] / MB:9.3f} "
              f"{r['abacus']['persistent'] / MB:9.3f} {mem['persistent'] / MB:9.3f} "
              f"{(mem['persistent'] - r['persistent']) / MB:+10.3f}")
    print(f"\n{'kind':14} {'opt':4} {'KB/layer':>9} {'simulated':>9} {'ops/layer':>9} {'KB/op':>6}")
    for (kind, opt), v in sorted(by.items()):
        v = [x for x in v if x[0] > 0]
        if len(v) < 2:
            continue
        A = np.array([[x[0], 1.0] for x in v])
        slope = np.linalg.lstsq(A, np.array([x[1] for x in v], float), rcond=None)[0][0]
        sim = np.linalg.lstsq(A, np.array([x[2] for x in v], float), rcond=None)[0][0]
        ops = np.linalg.lstsq(A, np.array([x[3] for x in v], float), rcond=None)[0][0]
        print(f"{kind:14} {opt:4} {slope / 1e3:9.1f} {sim / 1e3:9.1f} {ops:9.1f} {slope / 1e3 / max(ops, 1e-9):6.1f}")
    return 0


def fit(out):
    """Least squares of the persistent gap (MB) on [layers excluding layout, variables] per optimizer."""
    import numpy as np
    for opt in ("sgd", "adam"):
        rs = [r for r in out if r["opt"] == opt]
        if len(rs) < 3:
            continue
        X = np.array([[r["nonlayout"], r["variables"], 1.0] for r in rs])
        y = np.array([(r["pers"] - r["sim_pers"]) / MB for r in rs])
        coef, *_ = np.linalg.lstsq(X, y, rcond=None)
        res = y - X @ coef
        print(f"{opt}: gap MB = {coef[0]:.3f}·nonlayout layers + {coef[1]:.3f}·variables + {coef[2]:.2f}; "
              f"residual rms {np.sqrt(np.mean(res ** 2)):.2f} MB")


if __name__ == "__main__":
    sys.exit(main())
