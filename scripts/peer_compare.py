"""What users reach for today against Abacus: predicted peak training memory next to the measured one.

  build/venv-peers/bin/python scripts/peer_compare.py [--batch 8] [--optimizer adam] [--out docs/eval/peers.tsv]

Needs a virtual environment that sees Debian's torch and has the peers and this package (the peers are
never dependencies of the package):
  /usr/bin/python3 -m venv --system-site-packages build/venv-peers
  build/venv-peers/bin/pip install torchinfo==1.8.0 accelerate==0.27.2 ./python
  build/venv-peers/bin/pip install --no-deps deepspeed==0.14.4 hjson py-cpuinfo ninja "pydantic<2"

Networks: the ten of scripts/outside_zoo.py (no Abacus training row comes from them) and four torchvision
classics of the zoo (their networks are in the training data, though not every configuration). Each is
measured once in a fresh worker by the collector's own Worker under docs/PROTOCOL.md (one thread, a dry run
before the baseline, warm-up, timed iterations; peak live bytes from the allocator tracker), then:
  torchinfo    summary(model, input_size=(B, ...)): its "Estimated Total Size" (input + 2 x forward outputs +
               parameters), what its users read as the memory the model needs;
  accelerate   `accelerate estimate-memory`'s "Training using Adam" for float32: 4 x the parameter bytes
               (accelerate/commands/estimate.py), applied to the module itself (calculate_maximum_sizes)
               instead of a Hub model; Adam only;
  DeepSpeed    estimate_zero2_model_states_mem_needs(params, 1 GPU, no offload): the model states of ZeRO-2
               mixed-precision training on one GPU (20 bytes per parameter); shown for reference, since it
               estimates another kind of training (fp16 on a GPU, no activations);
  Abacus       abacus.estimate(model, ...) of this package, with its 90 % interval.
None of the peers predicts time; Abacus's time is scored against the measured time (cpu1 predictor, the
machine's speed index as trained; this is a check of memory first).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "scripts")]

import torch  # noqa: E402

import outside_zoo  # noqa: E402
from collector import zoo  # noqa: E402

CLASSICS = [("resnet50", 128), ("mobilenet_v2", 128), ("efficientnet_b0", 128), ("densenet121", 64)]


def networks():
    """(name, size, kind, seen): the outside set first, then the classics."""
    out = [(n, outside_zoo.NETS[n].sizes[0], outside_zoo.NETS[n].kind, False) for n in outside_zoo.FIRST_TEN]
    return out + [(n, s, zoo.get(n).kind, True) for n, s in CLASSICS]


def build(name, size):
    if name in outside_zoo.NETS:
        outside_zoo.register(name)
    torch.manual_seed(0)
    return zoo.get(name).build(size)


def measure(name, size, batch, optimizer):
    """Worker mode (fresh process, protocol environment): one JSON line."""
    from collector import worker
    if name in outside_zoo.NETS:
        outside_zoo.register(name)
    res = worker.Worker(1).measure({"id": 0, "network": name, "size": size, "batch": batch, "optimizer": optimizer})
    if res.get("status") != "ok":
        sys.exit(f"{name}: {res.get('status')}: {res.get('error')}")
    print(json.dumps({"time_s": float(res["time_s"]), "memory_bytes": int(res["memory_bytes"])}))


def peers(model, name, size, kind, batch, optimizer):
    """Each peer's estimate in bytes (None where it does not apply)."""
    import torchinfo
    from accelerate.utils import calculate_maximum_sizes
    from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs
    net = zoo.get(name)
    if kind == "tokens":
        st = torchinfo.summary(model, input_size=(batch, size), dtypes=[torch.long], verbose=0)
    else:
        st = torchinfo.summary(model, input_size=(batch, net.channels, size, size), verbose=0)
    out = {"torchinfo": st.total_input + st.total_output_bytes + st.total_param_bytes}
    out["accelerate"] = 4 * calculate_maximum_sizes(model)[0] if optimizer == "adam" else None
    params = sum(p.numel() for p in model.parameters())
    out["deepspeed"] = estimate_zero2_model_states_mem_needs(params, num_gpus_per_node=1, num_nodes=1,
                                                             cpu_offload=False)[1]
    return out, params


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--optimizer", default="adam", choices=("sgd", "adam"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "eval", "peers.tsv"))
    ap.add_argument("--only", default="")
    ap.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)  # worker mode: NAME SIZE
    a = ap.parse_args(argv)
    if a.measure:
        measure(a.measure[0], int(a.measure[1]), a.batch, a.optimizer)
        return 0
    import abacus
    tracker = os.path.join(ROOT, "build/release/libabacus_tracker.so")
    if not os.path.exists(tracker):
        sys.exit(f"peer_compare: {tracker} is missing: run `make` first")
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MALLOC_MMAP_MAX_="0", MALLOC_MMAP_THRESHOLD_="33554432", MALLOC_TRIM_THRESHOLD_="68719476736",
               MALLOC_TOP_PAD_="536870912", LD_PRELOAD=tracker)
    torch.set_num_threads(1)
    cols = ["network", "seen", "input", "optimizer", "params", "measured_bytes", "measured_time_s", "torchinfo_bytes",
            "accelerate_bytes", "deepspeed_bytes", "abacus_bytes", "abacus_lo_bytes", "abacus_hi_bytes",
            "abacus_time_s"]
    rows = []
    only = [n for n in a.only.split(",") if n]
    for name, size, kind, seen in networks():
        if only and name not in only:
            continue
        w = subprocess.run([sys.executable, os.path.abspath(__file__), "--measure", name, str(size), "--batch",
                            str(a.batch), "--optimizer", a.optimizer], env=env, capture_output=True, text=True,
                           timeout=1800)
        if w.returncode != 0:
            print(f"{name}: measurement failed: {w.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        m = json.loads(w.stdout.strip().splitlines()[-1])
        model = build(name, size)
        est = abacus.estimate(model, **({"seq_len": size} if kind == "tokens" else
                                        {"input_size": (zoo.get(name).channels, size, size)}),
                              batch_size=a.batch, optimizer=a.optimizer, top=0)
        p, params = peers(build(name, size), name, size, kind, a.batch, a.optimizer)
        shape = f"{a.batch}x{size}" if kind == "tokens" else f"{a.batch}x{zoo.get(name).channels}x{size}x{size}"
        rows.append([name, int(seen), shape, a.optimizer, params, m["memory_bytes"], m["time_s"], p["torchinfo"],
                     p["accelerate"], p["deepspeed"], est.memory_bytes, *est.memory_interval, est.time_s])
        err = lambda v: "n/a" if v is None else f"{100 * (v - m['memory_bytes']) / m['memory_bytes']:+.1f}%"
        print(f"{name:18s} measured {abacus.fmt_bytes(m['memory_bytes']):>11}  torchinfo {err(p['torchinfo']):>7}"
              f"  accelerate {err(p['accelerate']):>7}  deepspeed {err(p['deepspeed']):>7}  abacus "
              f"{err(est.memory_bytes):>7}", flush=True)
    with open(a.out + ".tmp", "w") as f:
        f.write("\t".join(cols) + "\n")
        for r in rows:
            f.write("\t".join("" if v is None else str(v) for v in r) + "\n")
    os.replace(a.out + ".tmp", a.out)
    for peer in ("torchinfo", "accelerate", "deepspeed", "abacus"):
        i = cols.index(f"{peer}_bytes")
        errs = [abs(r[i] - r[5]) / r[5] for r in rows if r[i] is not None]
        under = sum(1 for r in rows if r[i] is not None and r[i] < r[5])
        if errs:
            print(f"{peer:10s} memory MRE {100 * sum(errs) / len(errs):6.1f} % over {len(errs)} networks, "
                  f"{under} underestimates")
    inside = sum(1 for r in rows if r[11] <= r[5] <= r[12])
    terr = [abs(r[13] - r[6]) / r[6] for r in rows]
    print(f"abacus: measured memory inside the 90 % interval for {inside}/{len(rows)}; time MRE "
          f"{100 * sum(terr) / max(len(terr), 1):.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
