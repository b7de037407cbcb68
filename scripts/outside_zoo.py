"""Networks unlike the zoo's, measured and predicted: a check of how Abacus does on graphs it never saw.

  /usr/bin/python3 scripts/outside_zoo.py [--out DIR] [--batch 4] [--model FILE] [--only a,b] [--repeat N]

Ten small networks built here, none of them in collector/zoo.py nor like its members in structure: a
pre-norm Transformer decoder LM with a causal mask, a 2-layer bidirectional GRU, a 2-layer LSTM with
attention pooling, a 1-D CNN over embeddings (dilated, ELU), a convolutional autoencoder
(InstanceNorm, LeakyReLU, ConvTranspose, nearest upsampling), a GroupNorm/SiLU/Mish residual net, an
ESPCN-style super-resolution net (PReLU, PixelShuffle), an MLP with SELU/Softplus/Hardtanh/LayerNorm/
LogSoftmax, einsum attention, and a DenseNet-like concatenating CNN. Each is exported through the
collector's own export path (docs/PROTOCOL.md "Graphs"), measured once in a fresh worker by the collector's
own measurement code under the protocol's environment (one thread, SGD, a dry run before the baseline,
3 warm-up iterations, then at least 10 timed ones; median time, peak bytes from the allocator tracker),
and predicted with `abacus predict` (cpu1). Not a campaign: one measurement per network unless
--repeat N asks for N workers (the median time is scored, the spread printed), so the time column
carries the machine's noise (docs/COLLECTOR.md). Needs `make` first (the tracker and the
binary).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from collector import export_onnx, zoo  # noqa: E402

V = zoo.TOKEN_VOCAB


class DecoderLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 128)
        layer = nn.TransformerDecoderLayer(128, 4, 256, 0.1, batch_first=True, norm_first=True, activation="gelu")
        self.dec = nn.TransformerDecoder(layer, 2)
        self.out = nn.Linear(128, V)

    def forward(self, x):
        h = self.emb(x)
        n = x.shape[1]
        mask = torch.triu(torch.full((n, n), float("-inf")), 1)
        return self.out(self.dec(h, h, tgt_mask=mask))


class BiGRU2(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 64)
        self.rnn = nn.GRU(64, 96, 2, batch_first=True, bidirectional=True)
        self.out = nn.Linear(192, 5)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h.mean(1))


class AttnLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 64, padding_idx=0)
        self.rnn = nn.LSTM(64, 64, 2, batch_first=True)
        self.att = nn.Linear(64, 1)
        self.out = nn.Linear(64, 3)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        w = torch.softmax(self.att(h).squeeze(-1), 1)
        return self.out(torch.bmm(w.unsqueeze(1), h).squeeze(1))


class Conv1dNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 64)
        self.conv = nn.Sequential(nn.Conv1d(64, 128, 5, padding=2), nn.BatchNorm1d(128), nn.GELU(), nn.MaxPool1d(2),
                                  nn.Conv1d(128, 128, 3, padding=2, dilation=2), nn.ELU(), nn.AdaptiveAvgPool1d(1))
        self.out = nn.Linear(128, 4)

    def forward(self, x):
        return self.out(self.conv(self.emb(x).transpose(1, 2)).flatten(1))


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(32, 64, 3, 2, 1),
                                 nn.InstanceNorm2d(64, affine=True), nn.LeakyReLU(0.2))
        self.dec = nn.Sequential(nn.ConvTranspose2d(64, 32, 4, 2, 1), nn.ReLU(), nn.Upsample(scale_factor=2),
                                 nn.Conv2d(32, 3, 3, 1, 1), nn.Sigmoid())

    def forward(self, x):
        return self.dec(self.enc(x))


class GroupNormRes(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 3, 1, 1)
        self.block = nn.Sequential(nn.GroupNorm(8, 32), nn.SiLU(), nn.Conv2d(32, 32, 3, 1, 1), nn.GroupNorm(8, 32),
                                   nn.Mish(), nn.Conv2d(32, 32, 3, 1, 1))
        self.out = nn.Linear(32, 10)

    def forward(self, x):
        h = self.stem(x)
        h = h + self.block(h)
        return self.out(F.adaptive_avg_pool2d(h, 1).flatten(1))


class SuperRes(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 64, 5, 1, 2), nn.Tanh(), nn.Conv2d(64, 32, 3, 1, 1), nn.PReLU(),
                                 nn.Conv2d(32, 12, 3, 1, 1), nn.PixelShuffle(2))

    def forward(self, x):
        return self.net(x)


class OddMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 256), nn.SELU(), nn.Linear(256, 128),
                                 nn.Softplus(), nn.Linear(128, 64), nn.Hardtanh(), nn.LayerNorm(64), nn.Linear(64, 10),
                                 nn.LogSoftmax(1))

    def forward(self, x):
        return self.net(x)


class EinsumAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 64)
        self.q, self.k, self.v = nn.Linear(64, 64), nn.Linear(64, 64), nn.Linear(64, 64)
        self.out = nn.Linear(64, 6)

    def forward(self, x):
        h = self.emb(x)
        a = torch.einsum("bld,bmd->blm", self.q(h), self.k(h)).softmax(-1)
        return self.out(torch.einsum("blm,bmd->bld", a, self.v(h)).max(1).values)


class DenseCat(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 16, 3, 1, 1), nn.Conv2d(19, 16, 3, 1, 1)
        self.bn, self.pool, self.out = nn.BatchNorm2d(35), nn.AvgPool2d(2), nn.Linear(35, 10)

    def forward(self, x):
        a = F.relu(self.c1(x))
        b = F.relu6(self.c2(torch.cat([x, a], 1)))
        return self.out(self.pool(self.bn(torch.cat([x, a, b], 1))).amax((2, 3)))


# name: (input kind, class, image side or sequence length)
NETS = {
    "decoder_lm": ("tokens", DecoderLM, 64), "bigru2": ("tokens", BiGRU2, 64),
    "attn_lstm": ("tokens", AttnLSTM, 64), "conv1d_text": ("tokens", Conv1dNet, 128),
    "autoencoder": ("image", AutoEncoder, 64), "groupnorm_res": ("image", GroupNormRes, 32),
    "superres": ("image", SuperRes, 32), "odd_mlp": ("image", OddMLP, 32),
    "einsum_attention": ("tokens", EinsumAttention, 64), "densecat": ("image", DenseCat, 32),
}


def register(name):
    kind, cls, size = NETS[name]
    zoo.REGISTRY[name] = zoo.Net(name, kind, lambda s, cls=cls: cls(), family="outside",
                                 vocab=V if kind == "tokens" else 0, candidates=(size,))
    return zoo.REGISTRY[name], size


def measure(name, batch):
    """Runs in a fresh worker (protocol environment, tracker preloaded): one JSON line. The collector's own
    Worker measures, so the network gets exactly the protocol's treatment: a dry run before the baseline
    (PyTorch's and oneDNN's first-use caches are not the job's memory), warm-up, then the timed
    iterations (median time, peak live bytes)."""
    from collector import worker
    w = worker.Worker(1)
    _, size = register(name)
    res = w.measure({"id": 0, "network": name, "size": size, "batch": batch, "optimizer": "sgd"})
    if res.get("status") != "ok":
        sys.exit(f"{name}: {res.get('status')}: {res.get('error')}")
    print(json.dumps({"time_s": float(res["time_s"]), "memory_bytes": int(res["memory_bytes"]),
                      "params": int(res["params"]), "calib_s": float(res.get("calib_s") or 0)}))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="/tmp/abacus-outside-zoo")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--model", default=None, help="predictor bundle (default: the bundled one)")
    ap.add_argument("--only", default="", help="comma-separated subset of the networks")
    ap.add_argument("--repeat", type=int, default=1, help="workers per network (median time)")
    ap.add_argument("--measure", default=None, help=argparse.SUPPRESS)  # worker mode
    a = ap.parse_args(argv)
    if a.measure:
        measure(a.measure, a.batch)
        return 0
    abacus = os.path.join(ROOT, "build/release/abacus")
    tracker = os.path.join(ROOT, "build/release/libabacus_tracker.so")
    for f in (abacus, tracker):
        if not os.path.exists(f):
            sys.exit(f"outside_zoo: {f} is missing: run `make` first")
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MALLOC_MMAP_MAX_="0", MALLOC_MMAP_THRESHOLD_="33554432", MALLOC_TRIM_THRESHOLD_="68719476736",
               MALLOC_TOP_PAD_="536870912", LD_PRELOAD=tracker)
    names = [n for n in a.only.split(",") if n] or list(NETS)
    os.makedirs(a.out, exist_ok=True)
    rows = []
    print(f"{'network':18s} {'params':>9s} {'time pred':>10s} {'measured':>10s} {'err':>6s}"
          f" {'mem pred':>9s} {'measured':>9s} {'err':>6s}")
    for name in names:
        if name not in NETS:
            sys.exit(f"outside_zoo: unknown network '{name}' (known: {', '.join(NETS)})")
        net, size = register(name)
        path = os.path.join(a.out, f"{name}.onnx")
        export_onnx.export_graph(name, size, path)
        runs = []
        for _ in range(max(1, a.repeat)):
            w = subprocess.run([sys.executable, os.path.abspath(__file__), "--measure", name, "--batch", str(a.batch)],
                               env=env, capture_output=True, text=True, timeout=900)
            if w.returncode != 0:
                print(f"{name:18s} measurement failed: {w.stderr.strip().splitlines()[-1:]}")
                break
            runs.append(json.loads(w.stdout.strip().splitlines()[-1]))
        if len(runs) < max(1, a.repeat):
            continue
        times = sorted(r["time_s"] for r in runs)
        calibs = sorted(r.get("calib_s", 0) for r in runs)
        m = dict(runs[0], time_s=times[len(times) // 2], calib_s=calibs[len(calibs) // 2])
        # The machine's speed index measured beside the network (docs/PROTOCOL.md), as `abacus predict --calib`
        # would get it from `abacus calibrate`: the comparison the dataset's speed-adjusted figures make.
        cmd = [abacus, "predict", path, "--batch", str(a.batch), "--hw", "cpu1", "--format", "json"]
        if m.get("calib_s", 0) > 0:
            cmd += ["--calib", repr(m["calib_s"])]
        if a.model:
            cmd += ["--model", a.model]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{name:18s} abacus predict failed: {p.stderr.strip()}")
            continue
        d = json.loads(p.stdout)
        et = (d["time_s"] - m["time_s"]) / m["time_s"]
        em = (d["memory_bytes"] - m["memory_bytes"]) / m["memory_bytes"]
        rows.append((et, em))
        print(f"{name:18s} {m['params']:9d} {d['time_s'] * 1e3:8.2f}ms {m['time_s'] * 1e3:8.2f}ms {100 * et:+5.0f}%"
              f" {d['memory_bytes'] / 2**20:7.1f}Mi {m['memory_bytes'] / 2**20:7.1f}Mi {100 * em:+5.0f}%"
              + (f"   (time {times[0] * 1e3:.2f}-{times[-1] * 1e3:.2f} ms over {len(times)} workers)" if len(times) > 1 else ""),
              flush=True)
    if rows:
        n = len(rows)
        print(f"MRE over {n} networks: time {100 * sum(abs(r[0]) for r in rows) / n:.1f} %, "
              f"memory {100 * sum(abs(r[1]) for r in rows) / n:.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
