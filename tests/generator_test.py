#!/usr/bin/python3
"""The architecture generator (collector/generator.py), fast: about 10 s on one core.

    ABACUS=build/release/abacus /usr/bin/python3 tests/generator_test.py [CASE ...]

Cases (a filter runs only the named ones):
  names       names round-trip (family, seed); other names are not generated ones; the default catalogue
              has 1,000 networks, every family, more CNNs than any other family; counts sum to any total
  zoo         the zoo is unchanged: REGISTRY and NAMES hold no generated network, zoo.get resolves one
              lazily as a zoo.Net with one valid size and inputs of its kind
  determinism the spec of a name is the same in a fresh interpreter (string-keyed random.Random, never
              torch's generator) and when sampled again in this one
  families    seed 0 of every family: builds twice to the same parameter count (the estimate's), trains
              (forward, backward, SGD step) at batch 1 and 2 with a gradient for every parameter, its
              estimate lies in the cost bounds, and with ABACUS set its graph (export_onnx.export_graph)
              loads under `abacus inspect --strict` with the PyTorch parameter count
  listing     `python3 -m collector.worker --list` prints the zoo only; with --generated 7 or
              ABACUS_GENERATED=7 also the first 7 of the catalogue, in the zoo's line format
  inplace     node names map to their modules; of a conv → LayerNorm2d → ReLU(inplace) → conv → BatchNorm →
              ReLU(inplace) model only the first ReLU runs in place on a view, and its export names that ReLU's
              node alone in abacus.inplace_views (graph_export.py), which `abacus inspect` then prices
  catalogue   collector/generated.json is current (its source hash is generator.py's) and agrees with
              fresh sampling on a few networks; if not: /usr/bin/python3 -m collector.generator --write
scripts/generator_check.py is the thorough version (30 seeds a family, graphs exported twice).
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from collector import generator, zoo  # noqa: E402

ABACUS = os.environ.get("ABACUS", os.path.join(ROOT, "build/release/abacus"))
PY = "/usr/bin/python3"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"    FAIL: {what}", flush=True)
    return cond


def run_py(*args, env=None):
    e = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
    e.pop("ABACUS_GENERATED", None)
    e.update(env or {})
    return subprocess.run([PY, *args], cwd=ROOT, capture_output=True, text=True, env=e)


def case_names():
    check(generator.parse("gen_cnn_s000123") == ("gen_cnn", 123), "parse gen_cnn_s000123")
    check(generator.name_of("gen_rnn", 7) == "gen_rnn_s000007", "name_of")
    for bad in ("gen_cnn_s123", "gen_foo_s000001", "resnet18", "gen_cnn_s0000001", "gen_cnn"):
        check(not generator.is_generated(bad), f"{bad} is not a generated name")
    c = generator.counts()
    check(sum(c.values()) == 1000 and set(c) == set(generator.FAMILY_WEIGHTS), f"default counts {c}")
    check(max(c, key=c.get) == "gen_cnn" and min(c.values()) >= 100, f"balance {c}")
    for total in (0, 1, 7, 13, 2500):
        check(sum(generator.counts(total).values()) == total, f"counts({total}) sums to {total}")
    names = generator.catalogue(13)
    check(len(names) == len(set(names)) == 13 and all(generator.is_generated(n) for n in names), "catalogue(13)")


def case_zoo():
    check(not any(n.startswith("gen_") for n in zoo.NAMES), "zoo.NAMES holds no generated network")
    check(not any(n.startswith("gen_") for n in zoo.REGISTRY), "zoo.REGISTRY holds no generated network")
    for name in ("gen_cnn_s000004", "gen_rnn_s000004"):
        net = zoo.get(name)
        s = generator.spec(name)
        check(isinstance(net, zoo.Net) and net.name == name and net.family == s["family"], f"{name}: a zoo.Net")
        check(net.sizes == [s["size"]] and net.all_sizes == [s["size"]] and net.min_batch(s["size"]) == 1,
              f"{name}: one valid size")
        x = net.make_input(2, s["size"])
        want = (2, 3, s["size"], s["size"]) if net.kind == "image" else (2, s["size"])
        check(tuple(x.shape) == want and (net.kind == "image" or x.max() < zoo.TOKEN_VOCAB), f"{name}: input")
    check(zoo.get("gen_cnn_s000004") is zoo.get("gen_cnn_s000004"), "zoo.get caches a generated network")
    try:
        zoo.get("gen_cnn_s12")
        check(False, "zoo.get of a malformed generated name raises KeyError")
    except KeyError:
        pass


def case_determinism():
    names = [generator.name_of(f, 11) for f in generator.FAMILY_WEIGHTS]
    code = ("import json, sys; from collector import generator as g; "
            "print(json.dumps([g.spec(n) for n in sys.argv[1:]], sort_keys=True))")
    p = run_py("-c", code, *names)
    if not check(p.returncode == 0, f"specs in a fresh interpreter: {p.stderr[-300:]}"):
        return
    fresh = json.loads(p.stdout)
    for n, s in zip(names, fresh):
        check(s == generator.spec(n), f"{n}: the same spec in another interpreter")
        fam, seed = generator.parse(n)
        again = json.loads(json.dumps(generator._sample_sized(fam, seed)))
        check(again == s, f"{n}: the same spec when sampled again")


def case_families():
    warnings.filterwarnings("ignore")
    from collector import export_onnx
    from collector.graph_export import count_params
    have_abacus = os.access(ABACUS, os.X_OK)
    if not have_abacus:
        print(f"    (no {ABACUS}: graphs are exported but not inspected)")
    tmp = tempfile.mkdtemp(prefix="abacus-gentest-")
    for fam in generator.FAMILY_WEIGHTS:
        name = generator.name_of(fam, 0)
        s = generator.spec(name)
        net = zoo.get(name)
        e = s["estimate"]
        check(e["est_b1_s"] >= generator.MIN_B1_S and e["est_b8_s"] <= generator.MAX_B8_S,
              f"{name}: estimate {e['est_b1_s']} s (batch 1) .. {e['est_b8_s']} s (batch 8) in bounds")
        counts = []
        for _ in range(2):
            torch.manual_seed(0)
            counts.append(count_params(net.build(s["size"])))
        check(counts[0] == counts[1] == e["params"], f"{name}: parameter counts {counts}, estimate {e['params']}")
        for batch in (1, 2):
            torch.manual_seed(0)
            m = net.build(s["size"])
            opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
            zoo.loss_fn(m(net.make_input(batch, s["size"])), batch).backward()
            opt.step()
            missing = [n for n, p in m.named_parameters() if p.grad is None]
            check(not missing, f"{name} batch {batch}: parameters without a gradient {missing[:3]}")
        path = os.path.join(tmp, net.graph_file(s["size"]))
        info = export_onnx.export_graph(name, s["size"], path)
        check(info["params"] == e["params"], f"{name}: export counts {info['params']} parameters")
        if have_abacus:
            p = subprocess.run([ABACUS, "inspect", path, "--strict", "--format", "json"], capture_output=True,
                               text=True)
            if check(p.returncode == 0, f"{name}: abacus inspect --strict: {p.stderr.strip()[:300]}"):
                got = json.loads(p.stdout)["totals"]["params"]
                check(got == e["params"], f"{name}: abacus counts {got} parameters, PyTorch {e['params']}")
    subprocess.run(["rm", "-rf", tmp])


def case_listing():
    zoo_lines = run_py("-m", "collector.worker", "--list").stdout.splitlines()
    check(len(zoo_lines) == len(zoo.NAMES) and not any('"gen_' in l for l in zoo_lines),
          "--list prints the zoo only")
    want = generator.catalogue(7)
    for how, args, env in (("--generated 7", ["--generated", "7"], None),
                           ("ABACUS_GENERATED=7", [], {"ABACUS_GENERATED": "7"})):
        p = run_py("-m", "collector.worker", "--list", *args, env=env)
        lines = p.stdout.splitlines()
        if not check(p.returncode == 0 and len(lines) == len(zoo.NAMES) + 7, f"--list with {how}: {p.stderr[-300:]}"):
            continue
        check(lines[:len(zoo_lines)] == zoo_lines, f"--list with {how}: the zoo's lines first, unchanged")
        gen = [json.loads(l) for l in lines[len(zoo_lines):]]
        check([g["name"] for g in gen] == want, f"--list with {how}: the catalogue's first 7")
        for g in gen:
            s = generator.spec(g["name"])
            check(set(g) == set(json.loads(zoo_lines[0])) and g["sizes"] == [s["size"]] and g["kind"] == s["kind"],
                  f"{g['name']}: a zoo line with its size")


def case_catalogue():
    with open(generator.CATALOGUE_FILE) as f:
        d = json.load(f)
    if not check(d.get("source") == generator.source_hash(),
                 "collector/generated.json is stale (generator.py changed): "
                 "run /usr/bin/python3 -m collector.generator --write"):
        return
    nets = d["networks"]
    check(list(nets) == generator.catalogue(), "generated.json holds the default catalogue in order")
    for n in (generator.catalogue()[i] for i in (0, 299, 300, 999)):
        check(nets[n] == generator._entry(n), f"{n}: generated.json agrees with fresh sampling")


def case_inplace():
    from collector import graph_export as ge
    check(ge.node_module("/stages/stages.0/body/body.0/body.0.2/Relu") == "stages.0.body.0.2", "node_module nested")
    check(ge.node_module("/stem/stem.0/stem.0.1/Transpose") == "stem.0.1", "node_module stem")
    check(ge.node_module("/proj/Conv") == "proj" and ge.node_module("/Constant") == "", "node_module short")

    class LN2d(torch.nn.Module):
        def __init__(self, c):
            super().__init__()
            self.ln = torch.nn.LayerNorm(c)

        def forward(self, x):
            return self.ln(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

    body = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), LN2d(8), torch.nn.ReLU(inplace=True),
                               torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(inplace=True))
    x = torch.randn(2, 3, 16, 16)
    check(ge.inplace_view_modules(body, x) == ["2"], "only the ReLU after the LayerNorm2d runs in place on a view")
    m, info = ge.export_module(body, x)
    check(info["inplace_views"] == ["/2/Relu"], f"the export names its node: {info['inplace_views']}")
    if os.environ.get("ABACUS"):
        import onnx
        with tempfile.TemporaryDirectory() as d:
            peaks = []
            for meta in ("", ",".join(info["inplace_views"])):
                ge.set_meta(m, {"abacus.inplace_views": meta})
                path = os.path.join(d, "m.onnx")
                onnx.save(m, path)
                del m.metadata_props[-1]
                out = subprocess.run([os.environ["ABACUS"], "inspect", path, "--batch", "4", "--timeline"],
                                     capture_output=True, text=True).stdout
                row = [ln.split() for ln in out.splitlines() if " backward " in ln and "/2/Relu" in ln]
                unit = {"B": 1, "KiB": 1024, "MiB": 1 << 20}
                peaks.append(float(row[0][-4]) * unit[row[0][-3]] if row and row[0][-3] in unit else -1)
            # the ReLU's backward step holds two more of its outputs, 2 × 4·8·16·16 floats = 65,536 bytes
            check(peaks[0] > 0 and abs(peaks[1] - peaks[0] - 65536) < 200,
                  f"inspect prices the in-place ReLU's backward: {peaks} bytes")

CASES = {"names": case_names, "zoo": case_zoo, "determinism": case_determinism, "families": case_families,
         "listing": case_listing, "inplace": case_inplace, "catalogue": case_catalogue}


def main():
    torch.set_num_threads(1)
    want = sys.argv[1:] or list(CASES)
    for w in want:
        if w not in CASES:
            print(f"unknown case {w}; cases: {' '.join(CASES)}")
            return 2
    for name in want:
        t0 = time.time()
        before = len(failures)
        CASES[name]()
        print(f"{'ok  ' if len(failures) == before else 'FAIL'} {name} ({time.time() - t0:.1f} s)", flush=True)
    print(f"{len(failures)} failure(s)" if failures else "all generator tests passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
