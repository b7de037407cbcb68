#!/usr/bin/python3
"""Checks generated networks (collector/generator.py) the way the zoo's are checked, per family.

    /usr/bin/python3 scripts/generator_check.py [--seeds 30] [--families gen_cnn,gen_rnn] [--start 0]
                                                [--time] [--predict] [--keep DIR] [--json FILE]

For seeds start..start+N-1 of every family (default 30 each), one network at a time:
  spec     sampled twice from scratch (bypassing the cache): the same JSON
  build    built twice under torch.manual_seed(0): the same parameter count, and the count the spec's
           estimate recorded
  train    forward + backward + SGD step at batch 2 and at batch 1 (the profile measures batch 1-8)
  export   through collector/export_onnx.export_graph (graph_export.export_module) twice: the same bytes
  inspect  `abacus inspect GRAPH --strict --format json` loads it; totals.params = the PyTorch count
With --time, also one thread's median iteration time at batch 1 and 8 against the estimate; with
--predict, `abacus predict --hw cpu1` at batch 1 and 8. Prints one line per network, then per family: how
many pass, the cost range (estimated; measured or predicted when asked) and the seconds that sampling and
export take per network. Exit status 1 when any network fails.
Runs on one thread (OMP_NUM_THREADS=1); graphs go to a temporary folder unless --keep.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from collector import export_onnx, generator, zoo  # noqa: E402
from collector.graph_export import count_params  # noqa: E402

ABACUS = os.environ.get("ABACUS", os.path.join(ROOT, "build/release/abacus"))


def train_step(net, size, batch):
    torch.manual_seed(0)
    model = net.build(size)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = net.make_input(batch, size)
    opt.zero_grad(set_to_none=True)
    loss = zoo.loss_fn(model(x), batch)
    loss.backward()
    opt.step()
    missing = [n for n, p in model.named_parameters() if p.grad is None]
    return missing


def iteration_time(net, size, batch, iters=5):
    torch.manual_seed(0)
    model = net.build(size)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = net.make_input(batch, size)
    ts = []
    for i in range(iters + 2):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        zoo.loss_fn(model(x), batch).backward()
        opt.step()
        if i >= 2:
            ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def abacus_json(*args):
    p = subprocess.run([ABACUS, *args, "--format", "json"], capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(" ".join((p.stderr or p.stdout).split())[:300])
    return json.loads(p.stdout)


def check(name, tmp, a):
    r = {"name": name, "family": generator.parse(name)[0], "ok": False, "error": ""}
    t0 = time.perf_counter()
    fam, seed = generator.parse(name)
    s1 = json.dumps(generator._sample_sized(fam, seed), sort_keys=True)
    r["sample_s"] = time.perf_counter() - t0
    s2 = json.dumps(generator._sample_sized(fam, seed), sort_keys=True)
    spec = generator.spec(name)
    if s1 != s2 or json.loads(s1) != spec:
        r["error"] = "spec differs between two samplings"
        return r
    net = zoo.get(name)
    size = spec["size"]
    r.update(size=size, kind=spec["kind"], est_b1_s=spec["estimate"]["est_b1_s"],
             est_b8_s=spec["estimate"]["est_b8_s"])
    try:
        torch.manual_seed(0)
        p1 = count_params(net.build(size))
        torch.manual_seed(0)
        p2 = count_params(net.build(size))
        r["params"] = p1
        if p1 != p2 or p1 != spec["estimate"]["params"]:
            r["error"] = f"parameter counts differ: {p1}, {p2}, estimate {spec['estimate']['params']}"
            return r
        for b in (2, 1):
            missing = train_step(net, size, b)
            if missing:
                r["error"] = f"parameters without a gradient at batch {b}: {missing[:3]}"
                return r
    except Exception as e:  # noqa: BLE001
        r["error"] = f"train: {type(e).__name__}: {' '.join(str(e).split())[:300]}"
        return r
    paths = [os.path.join(tmp, f"{k}", net.graph_file(size)) for k in ("a", "b")]
    try:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            export_onnx.export_graph(name, size, paths[0])
            r["export_s"] = time.perf_counter() - t0
            export_onnx.export_graph(name, size, paths[1])
    except Exception as e:  # noqa: BLE001
        r["error"] = f"export: {type(e).__name__}: {' '.join(str(e).split())[:300]}"
        return r
    with open(paths[0], "rb") as f0, open(paths[1], "rb") as f1:
        if f0.read() != f1.read():
            r["error"] = "two exports differ"
            return r
    try:
        ins = abacus_json("inspect", paths[0], "--strict")
    except Exception as e:  # noqa: BLE001
        r["error"] = f"inspect: {e}"
        return r
    r["graph_params"] = ins["totals"]["params"]
    if r["graph_params"] != r["params"]:
        r["error"] = f"abacus counts {r['graph_params']} parameters, PyTorch {r['params']}"
        return r
    if a.predict:
        try:
            r["pred_b1_s"] = abacus_json("predict", paths[0], "--hw", "cpu1", "--batch", "1")["time_s"]
            r["pred_b8_s"] = abacus_json("predict", paths[0], "--hw", "cpu1", "--batch", "8")["time_s"]
        except Exception as e:  # noqa: BLE001
            r["predict_error"] = str(e)[:200]
    if a.time:
        r["time_b1_s"] = iteration_time(net, size, 1)
        r["time_b8_s"] = iteration_time(net, size, 8)
    r["ok"] = True
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--families", default=",".join(generator.FAMILY_WEIGHTS))
    ap.add_argument("--names", default="", help="check these networks instead (comma-separated)")
    ap.add_argument("--time", action="store_true", help="also time one thread's iterations at batch 1 and 8")
    ap.add_argument("--predict", action="store_true", help="also run abacus predict --hw cpu1 at batch 1 and 8")
    ap.add_argument("--keep", help="keep the exported graphs in this folder")
    ap.add_argument("--json", help="write the per-network results here")
    a = ap.parse_args()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    if a.names:
        names = [n for n in a.names.split(",") if n]
    else:
        names = [generator.name_of(f, s) for f in a.families.split(",") for s in range(a.start, a.start + a.seeds)]
    tmp = a.keep or tempfile.mkdtemp(prefix="abacus-gencheck-")
    results = []
    try:
        for n in names:
            r = check(n, tmp, a)
            results.append(r)
            extra = "".join(f" {k} {r[k] * 1e3:.1f}ms" for k in ("est_b1_s", "time_b1_s", "pred_b1_s",
                                                                  "est_b8_s", "time_b8_s", "pred_b8_s") if k in r)
            print(f"{'ok  ' if r['ok'] else 'FAIL'} {n} size {r.get('size', '?')} params {r.get('params', '?')}"
                  f"{extra} sample {r['sample_s']:.2f}s export {r.get('export_s', 0):.2f}s"
                  + (f": {r['error']}" if r["error"] else ""), flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print("\nfamily       pass  est b1 ms (min-median-max)  est b8 ms max  sample s  export s"
          + ("  time b1 ms (min-max)  time b8 ms max  time/est (median)" if a.time else "")
          + ("  predict b1 ms (min-max)  predict b8 ms max" if a.predict else ""))
    for fam in dict.fromkeys(r["family"] for r in results):
        rs = [r for r in results if r["family"] == fam]
        ok = [r for r in rs if r["ok"]]
        line = f"{fam:<12} {len(ok):>2}/{len(rs):<2}"
        if ok:
            b1 = sorted(r["est_b1_s"] * 1e3 for r in ok)
            line += (f"  {b1[0]:7.1f} {statistics.median(b1):7.1f} {b1[-1]:7.1f}      "
                     f"{max(r['est_b8_s'] for r in ok) * 1e3:9.1f}  {statistics.mean(r['sample_s'] for r in rs):8.3f}"
                     f"  {statistics.mean(r['export_s'] for r in ok):8.2f}")
            if a.time:
                t1 = sorted(r["time_b1_s"] * 1e3 for r in ok)
                ratio = statistics.median(r["time_b1_s"] / r["est_b1_s"] for r in ok)
                line += (f"  {t1[0]:9.1f} {t1[-1]:9.1f}  {max(r['time_b8_s'] for r in ok) * 1e3:13.1f}"
                         f"  {ratio:8.2f}")
            if a.predict:
                p1 = sorted(r["pred_b1_s"] * 1e3 for r in ok if "pred_b1_s" in r)
                if p1:
                    line += (f"  {p1[0]:11.1f} {p1[-1]:9.1f}  "
                             f"{max(r.get('pred_b8_s', 0) for r in ok) * 1e3:15.1f}")
        print(line)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
