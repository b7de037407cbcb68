"""Networks unlike the zoo's, measured and predicted: a check of how Abacus does on graphs it never saw.

  /usr/bin/python3 scripts/outside_zoo.py --check [--only a,b] [--batches 1,4]
  /usr/bin/python3 scripts/outside_zoo.py [--batches 1,4] [--repeat 3] [--json docs/eval/outside.json [--resume]]
                                          [--out DIR] [--model FILE] [--only a,b] [--quiet-wait S]

The outside set of issue 23 (item 3): networks written here by hand, never in the training data, none of
them in collector/zoo.py nor in the generator's space (docs/GENERATOR.md), nor like their members in
structure. The first ten: a pre-norm Transformer decoder LM with a causal mask, a 2-layer bidirectional
GRU, a 2-layer LSTM with attention pooling, a 1-D CNN over embeddings (dilated, ELU), a convolutional
autoencoder (InstanceNorm, LeakyReLU, ConvTranspose, nearest upsampling), a GroupNorm/SiLU/Mish residual
net, an ESPCN-style super-resolution net (PReLU, PixelShuffle), an MLP with SELU/Softplus/Hardtanh/
LayerNorm/LogSoftmax, einsum attention, and a DenseNet-like concatenating CNN. Then families the zoo and
the generator do not cover: ResNeSt/ResNet-D split attention, RepVGG's training-time branches, YOLOv7's
ELAN, HRNet's multi-resolution fusion, U-Net++, an FPN decoder, a CoAtNet-like hybrid with relative
attention, a Perceiver, ConvLSTM, a TCN, capsules with routing by agreement, dense graph networks, a NeRF
MLP, an ASR conformer, axial attention, causal linear attention, EfficientNet-like blocks with stochastic
depth, Res2Net, PointNet, a VQ autoencoder, a mixture of experts, an S4D long convolution, a neural ODE
(RK4), ConvNeXt V2 (GRN) and a rotary-embedding LM (`NETS` lists them with their family tags and
input sizes).

--check builds each network at each of its sizes, trains one step at batch 1 (and checks every parameter
got a gradient), exports it through the collector's own path (docs/PROTOCOL.md "Graphs") and loads the
graph with `abacus inspect --strict` at batch 1 and at the largest of --batches: the graph's parameter
count must equal PyTorch's and its output must have the batch asked for. No timing.

Without --check, each (network, size, batch) is measured in --repeat fresh workers by the collector's own
measurement code under the protocol's environment (one thread, SGD, a dry run before the baseline, 3
warm-up iterations, then at least 10 timed ones; median time, peak bytes from the allocator tracker), and
predicted with `abacus predict --hw cpu1 --calib <the workers' speed index>`. The median of the workers'
times is scored and their spread, (max - min) / median, reported. Before each worker the script waits for
a quiet machine (other processes under 10 % of it over 1 s, as `abacus profile --wait-quiet` does, but at
most --quiet-wait seconds); a worker whose timed iterations shared the machine anyway (busy_other > 0.1)
is measured again, at most four times; a row that still shared it says so (`shared_machine`). --json
writes the rows (errors, the 90 % interval and whether the measured time is inside it) and the summary
(coverage, time and memory MRE, memory underestimate rate) with the machine id, the commit and the bundle;
it is rewritten after every row, so a stopped run leaves what it measured ("complete": false), and
--resume measures only what the file lacks or measured on a shared machine (same machine, bundle,
batches and --repeat; `runs` lists each invocation). --repredict OUT.json measures nothing: it predicts
the rows of --json again with this checkout (a graph in --out from an earlier export, metadata
abacus.export, is exported again). Needs `make` first (the tracker and the binary); the environment's
ABACUS names another abacus binary (one built with other rules, to compare bundles of both).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
import warnings
from typing import Callable, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torchvision.ops import StochasticDepth  # noqa: E402

from collector import export_onnx, graph_export, zoo  # noqa: E402
import onnx  # noqa: E402

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


# ---------------------------------------------------------------------------------------------------------
# The families added for issue 23 item 3: written here by hand, none of them in the zoo nor in the
# generator's space (docs/GENERATOR.md). Each says in its docstring what makes it unlike both.
# ---------------------------------------------------------------------------------------------------------
def _cbr(cin, cout, k=3, s=1, act=nn.ReLU, groups=1):
    """Conv (no bias), BatchNorm, activation."""
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout), act())


class SplitAttention(nn.Module):
    """ResNeSt's split attention (radix 2, cardinality 1): a grouped 3x3 conv makes `radix` feature maps, a
    gate computed from their pooled sum weighs them with a softmax across the radix. (ResNeSt's BatchNorm
    inside the gate is left out: on a 1x1 map it cannot train at batch 1.)"""

    def __init__(self, c, radix=2):
        super().__init__()
        self.radix, self.c = radix, c
        self.conv = _cbr(c, c * radix, 3, groups=radix)
        inter = max(c * radix // 4, 16)
        self.fc1, self.fc2 = nn.Conv2d(c, inter, 1), nn.Conv2d(inter, c * radix, 1)

    def forward(self, x):
        x = self.conv(x)
        h, w = x.shape[2], x.shape[3]
        splits = x.reshape(-1, self.radix, self.c, h, w)
        gap = splits.sum(1).mean((2, 3), keepdim=True)
        att = self.fc2(F.relu(self.fc1(gap))).reshape(-1, self.radix, self.c, 1, 1).softmax(1)
        return (splits * att).sum(1)


class ResNeStDBlock(nn.Module):
    def __init__(self, cin, c, stride):
        super().__init__()
        out = 2 * c
        self.reduce = _cbr(cin, c, 1)
        self.split = SplitAttention(c)
        self.avd = nn.AvgPool2d(3, stride, 1) if stride > 1 else nn.Identity()  # ResNeSt's avg-pool downsample
        self.expand = nn.Sequential(nn.Conv2d(c, out, 1, bias=False), nn.BatchNorm2d(out))
        short = []
        if stride > 1:  # ResNet-D: average-pool, then a stride-1 1x1 conv, in the shortcut
            short.append(nn.AvgPool2d(stride, stride, ceil_mode=True, count_include_pad=False))
        if stride > 1 or cin != out:
            short += [nn.Conv2d(cin, out, 1, bias=False), nn.BatchNorm2d(out)]
        self.short = nn.Sequential(*short)

    def forward(self, x):
        return F.relu(self.expand(self.avd(self.split(self.reduce(x)))) + self.short(x))


class ResNeStD(nn.Module):
    """ResNeSt-like: ResNet-D deep stem (three 3x3 convs), bottlenecks whose 3x3 is split attention, the
    ResNet-D shortcut (avg-pool then 1x1), widths 64-256, 10 classes."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(_cbr(3, 16, 3, 2), _cbr(16, 16), _cbr(16, 32), nn.MaxPool2d(3, 2, 1))
        self.blocks = nn.Sequential(ResNeStDBlock(32, 32, 1), ResNeStDBlock(64, 64, 2), ResNeStDBlock(128, 64, 1),
                                    ResNeStDBlock(128, 128, 2))
        self.head = nn.Linear(256, 10)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


class RepVGGBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.dense = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout))
        self.one = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        self.ident = nn.BatchNorm2d(cin) if cin == cout and stride == 1 else None

    def forward(self, x):
        y = self.dense(x) + self.one(x)
        if self.ident is not None:
            y = y + self.ident(x)
        return F.relu(y)


class RepVGGTrain(nn.Module):
    """RepVGG (Ding et al. 2021) in its training-time form: every block is three parallel branches (3x3
    conv+BN, 1x1 conv+BN, identity BN) summed, then ReLU; stages 1-2-4-6-1 blocks of widths 32-384
    (A0-like, narrower). Trained as it is, never re-parameterised."""

    def __init__(self):
        super().__init__()
        layers, cin = [], 3
        for width, n in ((32, 1), (48, 2), (96, 4), (192, 6), (384, 1)):
            for i in range(n):
                layers.append(RepVGGBlock(cin, width, 2 if i == 0 else 1))
                cin = width
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(384, 10)

    def forward(self, x):
        return self.head(F.adaptive_avg_pool2d(self.body(x), 1).flatten(1))


def _cbs(cin, cout, k=1, s=1):
    return _cbr(cin, cout, k, s, act=nn.SiLU)


class ELANBlock(nn.Module):
    """YOLOv7's efficient layer aggregation: two 1x1 entries, a chain of four 3x3 convs, every second
    output of the chain concatenated with both entries, fused by a 1x1."""

    def __init__(self, cin, c, cout):
        super().__init__()
        self.a, self.b = _cbs(cin, c), _cbs(cin, c)
        self.chain = nn.ModuleList([_cbs(c, c, 3) for _ in range(4)])
        self.fuse = _cbs(4 * c, cout)

    def forward(self, x):
        h = self.b(x)
        outs = [self.a(x), h]
        for i, m in enumerate(self.chain):
            h = m(h)
            if i % 2 == 1:
                outs.append(h)
        return self.fuse(torch.cat(outs, 1))


class MPDown(nn.Module):
    """YOLOv7's transition: a max-pool branch and a stride-2 conv branch, concatenated."""

    def __init__(self, c):
        super().__init__()
        self.p, self.c1, self.c2 = _cbs(c, c // 2), _cbs(c, c // 2), _cbs(c // 2, c // 2, 3, 2)

    def forward(self, x):
        return torch.cat([self.p(F.max_pool2d(x, 2)), self.c2(self.c1(x))], 1)


class ELANNet(nn.Module):
    """A YOLOv7-like backbone: Conv-BN-SiLU stem, ELAN blocks, max-pool/conv transitions; 10 classes."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(_cbs(3, 32, 3, 2), _cbs(32, 64, 3, 2), ELANBlock(64, 32, 128), MPDown(128),
                                  ELANBlock(128, 48, 192), MPDown(192), ELANBlock(192, 64, 256))
        self.head = nn.Linear(256, 10)

    def forward(self, x):
        return self.head(self.body(x).mean((2, 3)))


class BasicRes(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(_cbr(c, c), nn.Conv2d(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        return F.relu(x + self.body(x))


class HRFuse(nn.Module):
    """HRNet's exchange unit: every output resolution sums every branch, upsampled (1x1 conv, BN,
    bilinear) from lower resolutions or downsampled (chains of stride-2 3x3 convs) from higher ones."""

    def __init__(self, chans):
        super().__init__()
        self.n = len(chans)
        self.paths = nn.ModuleList()
        for i, ci in enumerate(chans):
            row = nn.ModuleList()
            for j, cj in enumerate(chans):
                if j == i:
                    row.append(nn.Identity())
                elif j > i:
                    row.append(nn.Sequential(nn.Conv2d(cj, ci, 1, bias=False), nn.BatchNorm2d(ci),
                                             nn.Upsample(scale_factor=2 ** (j - i), mode="bilinear",
                                                         align_corners=False)))
                else:
                    steps = [_cbr(cj, cj, 3, 2) for _ in range(i - j - 1)]
                    steps += [nn.Conv2d(cj, ci, 3, 2, 1, bias=False), nn.BatchNorm2d(ci)]
                    row.append(nn.Sequential(*steps))
            self.paths.append(row)

    def forward(self, xs):
        return [F.relu(sum(self.paths[i][j](x) for j, x in enumerate(xs))) for i in range(self.n)]


class HRNetMini(nn.Module):
    """HRNet-like: parallel branches at 1/4, 1/8 and 1/16 resolution (16, 32, 64 channels) kept through
    the network, exchanging information by multi-resolution fusion after every stage; the head upsamples
    every branch to 1/4, concatenates and predicts an 8-channel map (MSE)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(_cbr(3, 32, 3, 2), _cbr(32, 16, 3, 2))
        self.s2 = nn.ModuleList([BasicRes(16), BasicRes(32)])
        self.t2 = _cbr(16, 32, 3, 2)
        self.f2 = HRFuse([16, 32])
        self.t3 = _cbr(32, 64, 3, 2)
        self.s3 = nn.ModuleList([nn.ModuleList([BasicRes(c) for c in (16, 32, 64)]) for _ in range(2)])
        self.f3 = nn.ModuleList([HRFuse([16, 32, 64]) for _ in range(2)])
        self.head = nn.Sequential(_cbr(112, 32, 1), nn.Conv2d(32, 8, 1))

    def forward(self, x):
        x = self.stem(x)
        xs = [self.s2[0](x), self.s2[1](self.t2(x))]
        xs = self.f2(xs)
        xs = xs + [self.t3(xs[1])]
        for blocks, fuse in zip(self.s3, self.f3):
            xs = fuse([b(h) for b, h in zip(blocks, xs)])
        up = [xs[0]] + [F.interpolate(h, scale_factor=2 ** i, mode="bilinear", align_corners=False)
                        for i, h in enumerate(xs[1:], 1)]
        return self.head(torch.cat(up, 1))


def _dconv(cin, cout):
    return nn.Sequential(_cbr(cin, cout), _cbr(cout, cout))


class UNetPP(nn.Module):
    """U-Net++ (Zhou et al. 2018): an encoder of four levels (16-128 channels) and nested, densely
    connected decoder nodes X(i, j) = conv(cat(X(i, 0..j-1), up(X(i+1, j-1)))); bilinear upsampling;
    the top node predicts a 1-channel map (MSE)."""

    def __init__(self, f=(16, 32, 64, 128)):
        super().__init__()
        self.depth = len(f)
        self.enc = nn.ModuleList([_dconv(3 if i == 0 else f[i - 1], f[i]) for i in range(self.depth)])
        self.nodes = nn.ModuleDict()
        for j in range(1, self.depth):
            for i in range(self.depth - j):
                self.nodes[f"{i}_{j}"] = _dconv(f[i] * j + f[i + 1], f[i])
        self.out = nn.Conv2d(f[0], 1, 1)

    def forward(self, x):
        X = {}
        for i in range(self.depth):
            x = self.enc[i](x if i == 0 else F.max_pool2d(x, 2))
            X[(i, 0)] = x
        for j in range(1, self.depth):
            for i in range(self.depth - j):
                up = F.interpolate(X[(i + 1, j - 1)], scale_factor=2, mode="bilinear", align_corners=True)
                X[(i, j)] = self.nodes[f"{i}_{j}"](torch.cat([X[(i, k)] for k in range(j)] + [up], 1))
        return self.out(X[(0, self.depth - 1)])


class FPNSeg(nn.Module):
    """A feature pyramid network: a four-stage strided backbone (C2-C5, 32-256 channels), 1x1 laterals,
    the top-down path (nearest upsampling, add), 3x3 smoothing, and a Panoptic-FPN-like semantic head
    (each level upsampled to 1/4 and summed, 8 classes, MSE)."""

    def __init__(self, d=64):
        super().__init__()
        chans = (32, 64, 128, 256)
        self.stem = _cbr(3, 32, 3, 2)
        self.stages = nn.ModuleList()
        cin = 32
        for c in chans:
            self.stages.append(nn.Sequential(_cbr(cin, c, 3, 2), _cbr(c, c)))
            cin = c
        self.lat = nn.ModuleList([nn.Conv2d(c, d, 1) for c in chans])
        self.smooth = nn.ModuleList([nn.Conv2d(d, d, 3, 1, 1) for _ in chans])
        self.sem = nn.ModuleList([_cbr(d, 32) for _ in chans])
        self.out = nn.Conv2d(32, 8, 1)

    def forward(self, x):
        x = self.stem(x)
        cs = []
        for s in self.stages:
            x = s(x)
            cs.append(x)
        p = self.lat[3](cs[3])
        ps = [p]
        for i in (2, 1, 0):
            p = self.lat[i](cs[i]) + F.interpolate(p, scale_factor=2, mode="nearest")
            ps.insert(0, p)
        y = 0
        for i, p in enumerate(ps):
            h = self.sem[i](self.smooth[i](p))
            y = y + (F.interpolate(h, scale_factor=2 ** i, mode="bilinear", align_corners=False) if i else h)
        return self.out(y)


class MBConvPre(nn.Module):
    """CoAtNet's MBConv: pre-activation BatchNorm, 1x1 expand, depthwise 3x3, 1x1 project (no SE)."""

    def __init__(self, cin, cout, stride, expand=4):
        super().__init__()
        h = cin * expand
        self.body = nn.Sequential(nn.BatchNorm2d(cin), nn.Conv2d(cin, h, 1, bias=False), nn.BatchNorm2d(h), nn.GELU(),
                                  nn.Conv2d(h, h, 3, stride, 1, groups=h, bias=False), nn.BatchNorm2d(h), nn.GELU(),
                                  nn.Conv2d(h, cout, 1))
        self.short = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(cin, cout, 1)) if stride > 1 else nn.Identity()

    def forward(self, x):
        return self.short(x) + self.body(x)


class RelAttention(nn.Module):
    """Multi-head self-attention over an h x w grid with a learned 2-D relative position bias (a table of
    (2h-1)(2w-1) entries per head, gathered through a fixed index: CoAtNet's and Swin's relative attention,
    here global over the grid, no windows)."""

    def __init__(self, dim, heads, h, w):
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.table = nn.Parameter(torch.zeros((2 * h - 1) * (2 * w - 1), heads))
        nn.init.trunc_normal_(self.table, std=0.02)
        ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
        pos = torch.stack([ys.flatten(), xs.flatten()])  # [2, N]
        rel = pos[:, :, None] - pos[:, None, :]
        self.register_buffer("index", (rel[0] + h - 1) * (2 * w - 1) + rel[1] + w - 1, persistent=False)

    def forward(self, x):
        n, dim = x.shape[1], x.shape[2]
        q, k, v = self.qkv(x).reshape(-1, n, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
        bias = self.table[self.index.reshape(-1)].reshape(n, n, self.heads).permute(2, 0, 1)
        a = (q @ k.transpose(-2, -1)) * self.hd ** -0.5 + bias
        return self.proj((a.softmax(-1) @ v).transpose(1, 2).reshape(-1, n, dim))


class RelTransformerBlock(nn.Module):
    def __init__(self, dim, heads, h, w):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = RelAttention(dim, heads, h, w)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.n1(x))
        return x + self.mlp(self.n2(x))


class CoAtNetLike(nn.Module):
    """CoAtNet-like (Dai et al. 2021) C-C-T-T: conv stem, two MBConv stages, then two Transformer stages
    with relative attention (the map flattened at 1/8 and, after a max-pool, at 1/16); 10 classes."""

    def __init__(self, size):
        super().__init__()
        self.stem = nn.Sequential(_cbr(3, 32, 3, 2, act=nn.GELU), nn.Conv2d(32, 32, 3, 1, 1))
        self.s1 = nn.Sequential(MBConvPre(32, 48, 2), MBConvPre(48, 48, 1))
        self.s2 = nn.Sequential(MBConvPre(48, 96, 2), MBConvPre(96, 96, 1))
        g = size // 8
        self.p3 = nn.Conv2d(96, 128, 1)
        self.s3 = nn.Sequential(*[RelTransformerBlock(128, 4, g, g) for _ in range(2)])
        self.p4 = nn.Linear(128, 192)
        self.s4 = RelTransformerBlock(192, 6, g // 2, g // 2)
        self.norm, self.head = nn.LayerNorm(192), nn.Linear(192, 10)

    def forward(self, x):
        x = self.p3(self.s2(self.s1(self.stem(x))))
        g = x.shape[2]
        x = self.s3(x.flatten(2).transpose(1, 2))
        x = x.transpose(1, 2).reshape(-1, 128, g, g)
        x = self.p4(F.max_pool2d(x, 2).flatten(2).transpose(1, 2))
        return self.head(self.norm(self.s4(x)).mean(1))


class CrossAttention(nn.Module):
    def __init__(self, dq, dkv, dim, heads):
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.nq, self.nkv = nn.LayerNorm(dq), nn.LayerNorm(dkv)
        self.q, self.kv, self.o = nn.Linear(dq, dim), nn.Linear(dkv, 2 * dim), nn.Linear(dim, dq)

    def forward(self, lat, x):
        n, m = lat.shape[1], x.shape[1]
        q = self.q(self.nq(lat)).reshape(-1, n, self.heads, self.hd).transpose(1, 2)
        k, v = self.kv(self.nkv(x)).reshape(-1, m, 2, self.heads, self.hd).permute(2, 0, 3, 1, 4)
        a = (q @ k.transpose(-2, -1) * self.hd ** -0.5).softmax(-1)
        return self.o((a @ v).transpose(1, 2).reshape(-1, n, self.heads * self.hd))


class Perceiver(nn.Module):
    """Perceiver-like (Jaegle et al. 2021): 32 learned latents of width 128 cross-attend to the embedded
    token sequence (64-d, learned positions up to 512), then two latent self-attention layers; the whole
    block is applied twice with shared weights (the Perceiver's repeated cross attention); 10 classes."""

    def __init__(self, max_len=512):
        super().__init__()
        self.emb, self.pos = nn.Embedding(V, 64), nn.Parameter(torch.randn(max_len, 64) * 0.02)
        self.latents = nn.Parameter(torch.randn(32, 128) * 0.02)
        self.cross = CrossAttention(128, 64, 128, 2)
        self.cross_mlp = nn.Sequential(nn.LayerNorm(128), nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 128))
        layer = nn.TransformerEncoderLayer(128, 4, 256, 0.1, batch_first=True, norm_first=True, activation="gelu")
        self.latent = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(128, 10)

    def forward(self, x):
        h = self.emb(x) + self.pos[: x.shape[1]]
        lat = self.latents.unsqueeze(0).expand(x.shape[0], -1, -1)
        for _ in range(2):
            lat = lat + self.cross(lat, h)
            lat = lat + self.cross_mlp(lat)
            lat = self.latent(lat)
        return self.head(lat.mean(1))


class ConvLSTMCell(nn.Module):
    def __init__(self, cin, hid, k=3):
        super().__init__()
        self.hid = hid
        self.gates = nn.Conv2d(cin + hid, 4 * hid, k, 1, k // 2)

    def forward(self, x, h, c):
        i, f, o, g = self.gates(torch.cat([x, h], 1)).chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c


class ConvLSTMNet(nn.Module):
    """ConvLSTM (Shi et al. 2015), written out: the input's 8 channels are 8 grey frames; two stacked
    ConvLSTM cells (16 hidden channels, 3x3 gate convolutions) unrolled over them in a Python loop; a 1x1
    conv predicts the next frame from the last hidden state (MSE)."""

    frames = 8

    def __init__(self, hid=16):
        super().__init__()
        self.hid = hid
        self.c1, self.c2 = ConvLSTMCell(1, hid), ConvLSTMCell(hid, hid)
        self.out = nn.Conv2d(hid, 1, 1)

    def forward(self, x):
        z = torch.zeros_like(x[:, :1]).expand(-1, self.hid, -1, -1)
        h1 = c1 = h2 = c2 = z
        for t in range(self.frames):
            h1, c1 = self.c1(x[:, t:t + 1], h1, c1)
            h2, c2 = self.c2(h1, h2, c2)
        return self.out(h2)


class TemporalBlock(nn.Module):
    def __init__(self, cin, cout, k, dilation):
        super().__init__()
        self.pad = (k - 1) * dilation
        wn = nn.utils.weight_norm
        self.c1 = wn(nn.Conv1d(cin, cout, k, dilation=dilation))
        self.c2 = wn(nn.Conv1d(cout, cout, k, dilation=dilation))
        self.drop = nn.Dropout(0.1)
        self.down = nn.Conv1d(cin, cout, 1) if cin != cout else None

    def forward(self, x):
        h = self.drop(F.relu(self.c1(F.pad(x, (self.pad, 0)))))
        h = self.drop(F.relu(self.c2(F.pad(h, (self.pad, 0)))))
        return F.relu(h + (x if self.down is None else self.down(x)))


class TCN(nn.Module):
    """A temporal convolutional network (Bai et al. 2018): weight-normalised causal dilated 1-D convs
    (kernel 3, dilations 1-2-4-8-16, left padding), dropout, residual connections; the last step's features
    classify the sequence (10 classes)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 48)
        chans = (64, 64, 96, 96, 96)
        self.blocks = nn.Sequential(*[TemporalBlock(48 if i == 0 else chans[i - 1], c, 3, 2 ** i)
                                      for i, c in enumerate(chans)])
        self.head = nn.Linear(96, 10)

    def forward(self, x):
        return self.head(self.blocks(self.emb(x).transpose(1, 2))[:, :, -1])


def _squash(s, dim=-1):
    n2 = (s * s).sum(dim, keepdim=True)
    return s * (n2 / (1 + n2) / torch.sqrt(n2 + 1e-8))


class CapsNet(nn.Module):
    """A capsule network (Sabour et al. 2017): 9x9 conv, primary capsules (a stride-2 9x9 conv read as 16
    types of 8-d capsules on the map), a prediction for each of 10 digit capsules of 16-d through a weight
    per (capsule, class) pair with einsum, and three iterations of routing by agreement (softmax over
    classes, weighted sum, squash, agreement update); capsule lengths are the 10 logits."""

    def __init__(self, size):
        super().__init__()
        self.conv = nn.Conv2d(3, 64, 9)
        self.prim = nn.Conv2d(64, 16 * 8, 9, 2)
        g = (size - 8 - 9) // 2 + 1
        self.n = 16 * g * g
        self.W = nn.Parameter(torch.randn(self.n, 10, 16, 8) * 0.05)

    def forward(self, x):
        u = self.prim(F.relu(self.conv(x)))  # [B, 128, g, g]
        u = _squash(u.reshape(-1, 16, 8, u.shape[2] * u.shape[3]).permute(0, 1, 3, 2).reshape(-1, self.n, 8))
        uh = torch.einsum("nkij,bnj->bnki", self.W, u)  # [B, n, 10, 16]
        b = torch.zeros_like(uh[..., 0])
        for it in range(3):
            c = b.softmax(2)
            src = uh if it == 2 else uh.detach()
            v = _squash(torch.einsum("bnk,bnki->bki", c, src))
            if it < 2:
                b = b + torch.einsum("bnki,bki->bnk", uh.detach(), v)
        return torch.sqrt((v * v).sum(-1) + 1e-8)


def _fixed_graph(n, extra=2, seed=7):
    """A fixed graph of n nodes: a ring plus `extra` random chords per node (a fixed generator), with
    self loops, symmetric normalisation D^-1/2 (A + I) D^-1/2."""
    g = torch.Generator().manual_seed(seed)
    a = torch.eye(n)
    idx = torch.arange(n)
    a[idx, (idx + 1) % n] = 1
    for _ in range(extra):
        a[idx, torch.randint(0, n, (n,), generator=g)] = 1
    a = ((a + a.t()) > 0).float()
    d = a.sum(1).rsqrt()
    return d[:, None] * a * d[None, :]


class DenseGNN(nn.Module):
    """Graph networks as dense matrix products over a fixed adjacency (a buffer, N x N): each token is a
    node; three GCN layers (Kipf and Welling: A_hat H W) with residuals, then a GIN-like layer
    (MLP((1 + eps) H + A H)); mean and max readout, 10 classes."""

    def __init__(self, n):
        super().__init__()
        self.register_buffer("adj", _fixed_graph(n))
        self.emb = nn.Embedding(V, 96)
        self.gcn = nn.ModuleList([nn.Linear(96, 96) for _ in range(3)])
        self.eps = nn.Parameter(torch.zeros(1))
        self.gin = nn.Sequential(nn.Linear(96, 192), nn.ReLU(), nn.Linear(192, 96))
        self.head = nn.Linear(192, 10)

    def forward(self, x):
        h = self.emb(x)
        for lin in self.gcn:
            h = h + F.relu(torch.matmul(self.adj, lin(h)))
        h = self.gin((1 + self.eps) * h + torch.matmul(self.adj, h))
        return self.head(torch.cat([h.mean(1), h.amax(1)], 1))


def _posenc(x, freqs):
    return torch.cat([x] + [f(x * (2.0 ** k * math.pi)) for k in range(freqs) for f in (torch.sin, torch.cos)], -1)


class NeRFMLP(nn.Module):
    """A NeRF MLP (Mildenhall et al. 2020): the input's pixels are S*S sample points (its 3 channels their
    coordinates, also used as the view direction); sin/cos positional encodings (10 and 4 frequencies),
    8 layers of 256 with the encoded input concatenated again at the fifth, a density output and a
    view-dependent colour branch (output [B, N, 4], MSE)."""

    def __init__(self, width=256):
        super().__init__()
        dp, dd = 3 + 3 * 2 * 10, 3 + 3 * 2 * 4
        self.layers = nn.ModuleList([nn.Linear(dp if i == 0 else (width + dp if i == 4 else width), width)
                                     for i in range(8)])
        self.sigma, self.feat = nn.Linear(width, 1), nn.Linear(width, width)
        self.rgb = nn.Sequential(nn.Linear(width + dd, width // 2), nn.ReLU(), nn.Linear(width // 2, 3), nn.Sigmoid())

    def forward(self, x):
        p = x.flatten(2).transpose(1, 2)  # [B, N, 3]
        ep, ed = _posenc(p, 10), _posenc(p, 4)
        h = ep
        for i, lin in enumerate(self.layers):
            h = F.relu(lin(torch.cat([h, ep], -1) if i == 4 else h))
        return torch.cat([self.rgb(torch.cat([self.feat(h), ed], -1)), F.softplus(self.sigma(h))], -1)


class SpeechConformerBlock(nn.Module):
    """A Conformer block of another shape than the zoo's: half-step feed-forwards of ratio 2, attention
    written out (fused q/k/v, MatMul, Softmax), a convolution module with kernel 31 and LayerNorm instead
    of BatchNorm (as in some ASR toolkits)."""

    def __init__(self, d, heads, k):
        super().__init__()
        self.heads = heads
        self.ff1 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d))
        self.ff2 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d))
        self.na, self.qkv, self.o = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.nc, self.pw1 = nn.LayerNorm(d), nn.Conv1d(d, 2 * d, 1)
        self.dw, self.nd, self.pw2 = nn.Conv1d(d, d, k, padding=k // 2, groups=d), nn.LayerNorm(d), nn.Conv1d(d, d, 1)
        self.nout = nn.LayerNorm(d)

    def forward(self, x):
        t, d = x.shape[1], x.shape[2]
        x = x + 0.5 * self.ff1(x)
        q, k, v = self.qkv(self.na(x)).reshape(-1, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = (q @ k.transpose(-2, -1) * (d // self.heads) ** -0.5).softmax(-1)
        x = x + self.o((a @ v).transpose(1, 2).reshape(-1, t, d))
        c = self.dw(F.glu(self.pw1(self.nc(x).transpose(1, 2)), 1))
        c = self.pw2(F.silu(self.nd(c.transpose(1, 2)).transpose(1, 2)))
        x = x + c.transpose(1, 2)
        return self.nout(x + 0.5 * self.ff2(x))


class SpeechConformer(nn.Module):
    """An ASR-style conformer: the input is a 1-channel spectrogram (S mel bins x S frames), a two-layer
    stride-2 Conv2d subsampling (x4 in time and frequency), a linear projection to 96, four conformer
    blocks (4 heads, kernel 31), per-frame logits over 32 output units (MSE)."""

    def __init__(self, size, d=96):
        super().__init__()
        self.sub = nn.Sequential(nn.Conv2d(1, 32, 3, 2, 1), nn.ReLU(), nn.Conv2d(32, 32, 3, 2, 1), nn.ReLU())
        self.proj = nn.Linear(32 * (size // 4), d)
        self.blocks = nn.Sequential(*[SpeechConformerBlock(d, 4, 31) for _ in range(4)])
        self.out = nn.Linear(d, 32)

    def forward(self, x):
        h = self.sub(x)  # [B, 32, F/4, T/4]
        h = h.permute(0, 3, 1, 2).flatten(2)  # [B, T/4, 32 * F/4]
        return self.out(self.blocks(self.proj(h)))


class AxialBlock(nn.Module):
    """Axial attention (Ho et al. 2019): multi-head attention along the rows, then along the columns, of
    a channel-last map (the map reshaped to batches of rows or columns), then an MLP; pre-norm."""

    def __init__(self, d, heads):
        super().__init__()
        self.row = nn.MultiheadAttention(d, heads, batch_first=True)
        self.col = nn.MultiheadAttention(d, heads, batch_first=True)
        self.n1, self.n2, self.n3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):  # [B, H, W, C]
        h, w, c = x.shape[1], x.shape[2], x.shape[3]
        r = self.n1(x).reshape(-1, w, c)
        x = x + self.row(r, r, r, need_weights=False)[0].reshape(-1, h, w, c)
        col = self.n2(x).transpose(1, 2).reshape(-1, h, c)
        x = x + self.col(col, col, col, need_weights=False)[0].reshape(-1, w, h, c).transpose(1, 2)
        return x + self.mlp(self.n3(x))


class AxialTransformer(nn.Module):
    """A stride-2 conv stem, learned 2-D positions (row + column embeddings), three axial-attention
    blocks of width 64 (4 heads), mean pool, 10 classes."""

    def __init__(self, size, d=64):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, d, 3, 2, 1), nn.GELU())
        g = size // 2
        self.prow, self.pcol = nn.Parameter(torch.zeros(g, 1, d)), nn.Parameter(torch.zeros(1, g, d))
        self.blocks = nn.Sequential(*[AxialBlock(d, 4) for _ in range(3)])
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, 10)

    def forward(self, x):
        h = self.stem(x).permute(0, 2, 3, 1) + self.prow + self.pcol
        return self.head(self.norm(self.blocks(h)).mean((1, 2)))


class CausalLinearAttention(nn.Module):
    """Linear attention (Katharopoulos et al. 2020), causal: feature map elu(x) + 1, running sums of
    phi(k) v^T and phi(k) by CumSum over time instead of a softmax over an L x L matrix."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        n, d = x.shape[1], x.shape[2]
        q, k, v = self.qkv(x).reshape(-1, n, 3, self.heads, self.hd).unbind(2)  # [B, L, H, D] each
        q, k = F.elu(q) + 1, F.elu(k) + 1
        kv = torch.einsum("blhd,blhe->blhde", k, v).cumsum(1)
        num = torch.einsum("blhd,blhde->blhe", q, kv)
        den = torch.einsum("blhd,blhd->blh", q, k.cumsum(1)).unsqueeze(-1)
        return self.o((num / (den + 1e-6)).reshape(-1, n, d))


class LinearAttentionLM(nn.Module):
    """Three pre-norm blocks of causal linear attention (width 128, 4 heads) and a GELU MLP over token
    embeddings with learned positions, per-token logits over 64 tags (MSE on [B, L, 64])."""

    def __init__(self, d=128, max_len=512):
        super().__init__()
        self.emb, self.pos = nn.Embedding(V, d), nn.Embedding(max_len, d)
        self.attn = nn.ModuleList([CausalLinearAttention(d, 4) for _ in range(3)])
        self.n1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(3)])
        self.n2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(3)])
        self.mlp = nn.ModuleList([nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d)) for _ in range(3)])
        self.out = nn.Linear(d, 64)

    def forward(self, x):
        h = self.emb(x) + self.pos(torch.arange(x.shape[1]))
        for a, n1, n2, m in zip(self.attn, self.n1, self.n2, self.mlp):
            h = h + a(n1(h))
            h = h + m(n2(h))
        return self.out(h)


class MBConvSD(nn.Module):
    """MBConv without squeeze-excitation, its residual branch dropped per sample by stochastic depth
    (torchvision.ops.StochasticDepth, 'row' mode, which stays random in training mode)."""

    def __init__(self, cin, cout, k, stride, expand, drop):
        super().__init__()
        h = cin * expand
        layers = [_cbr(cin, h, 1, act=nn.SiLU)] if expand > 1 else []
        layers += [_cbr(h, h, k, stride, act=nn.SiLU, groups=h), nn.Conv2d(h, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*layers)
        self.res = stride == 1 and cin == cout
        self.sd = StochasticDepth(drop, "row")

    def forward(self, x):
        return x + self.sd(self.body(x)) if self.res else self.body(x)


class EffNetSD(nn.Module):
    """EfficientNet-B0-like at a quarter of its depth, no squeeze-excitation, stochastic depth rising to
    0.2 over the blocks, a 1x1 head conv to 320, dropout, 10 classes."""

    def __init__(self):
        super().__init__()
        cfg = [(16, 3, 1, 1, 1), (24, 3, 2, 4, 2), (40, 5, 2, 4, 2), (80, 3, 2, 4, 2), (112, 5, 1, 6, 2)]
        total = sum(c[4] for c in cfg)
        layers, cin, i = [_cbr(3, 24, 3, 2, act=nn.SiLU)], 24, 0
        for cout, k, s, e, n in cfg:
            for j in range(n):
                layers.append(MBConvSD(cin, cout, k, s if j == 0 else 1, e, 0.2 * i / total))
                cin, i = cout, i + 1
        layers.append(_cbr(cin, 320, 1, act=nn.SiLU))
        self.body = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.Dropout(0.2), nn.Linear(320, 10))

    def forward(self, x):
        return self.head(self.body(x).mean((2, 3)))


class Res2NetBlock(nn.Module):
    """Res2Net (Gao et al. 2019): inside a bottleneck the 1x1 output splits into 4 groups; group i > 1 is
    convolved after adding the previous group's output (a hierarchy of receptive fields), the first group
    passes through; concatenated, 1x1, residual."""

    def __init__(self, cin, w, cout, stride, scale=4):
        super().__init__()
        self.scale, self.stride = scale, stride
        self.reduce = _cbr(cin, w * scale, 1)
        self.convs = nn.ModuleList([_cbr(w, w, 3, stride) for _ in range(scale - 1)])
        self.pool = nn.AvgPool2d(3, stride, 1) if stride > 1 else nn.Identity()
        self.expand = nn.Sequential(nn.Conv2d(w * scale, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.short = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                      if stride > 1 or cin != cout else nn.Identity())

    def forward(self, x):
        xs = self.reduce(x).chunk(self.scale, 1)
        outs, y = [], None
        for i, conv in enumerate(self.convs):
            y = conv(xs[i + 1] if (y is None or self.stride > 1) else xs[i + 1] + y)
            outs.append(y)
        outs.append(self.pool(xs[0]))
        return F.relu(self.expand(torch.cat(outs, 1)) + self.short(x))


class Res2Net(nn.Module):
    """A Res2Net of three stages (outputs 64, 128, 256; scale 4, group widths 8-32), 10 classes."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(_cbr(3, 32, 3, 2), nn.MaxPool2d(3, 2, 1))
        self.blocks = nn.Sequential(Res2NetBlock(32, 8, 64, 1), Res2NetBlock(64, 8, 64, 1),
                                    Res2NetBlock(64, 16, 128, 2), Res2NetBlock(128, 16, 128, 1),
                                    Res2NetBlock(128, 32, 256, 2))
        self.head = nn.Linear(256, 10)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


class TNet(nn.Module):
    """PointNet's alignment network: a shared MLP over points, max over points, an MLP to a k x k matrix
    added to the identity."""

    def __init__(self, k):
        super().__init__()
        self.k = k
        self.mlp = nn.Sequential(nn.Conv1d(k, 64, 1), nn.BatchNorm1d(64), nn.ReLU(), nn.Conv1d(64, 256, 1),
                                 nn.BatchNorm1d(256), nn.ReLU())
        self.fc = nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, k * k))
        self.register_buffer("eye", torch.eye(k).flatten())

    def forward(self, x):
        return (self.fc(self.mlp(x).amax(2)) + self.eye).reshape(-1, self.k, self.k)


class PointNet(nn.Module):
    """PointNet (Qi et al. 2017): the input's S*S pixels are points (3 channels = xyz); an input transform
    (T-Net 3x3, bmm), a shared MLP 64-64, a feature transform (T-Net 64x64, bmm), a shared MLP 128-512, a
    max over points, an MLP 256-10. (BatchNorm only on the per-point layers: batch 1 must train.)"""

    def __init__(self):
        super().__init__()
        self.t_in, self.t_feat = TNet(3), TNet(64)
        self.mlp1 = nn.Sequential(nn.Conv1d(3, 64, 1), nn.BatchNorm1d(64), nn.ReLU(), nn.Conv1d(64, 64, 1),
                                  nn.BatchNorm1d(64), nn.ReLU())
        self.mlp2 = nn.Sequential(nn.Conv1d(64, 128, 1), nn.BatchNorm1d(128), nn.ReLU(), nn.Conv1d(128, 512, 1),
                                  nn.BatchNorm1d(512))
        self.head = nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Dropout(0.3), nn.Linear(256, 10))

    def forward(self, x):
        p = x.flatten(2)  # [B, 3, N]
        p = torch.bmm(self.t_in(p), p)
        h = self.mlp1(p)
        h = torch.bmm(self.t_feat(h), h)
        return self.head(self.mlp2(h).amax(2))


class VQAutoEncoder(nn.Module):
    """A VQ-VAE-like autoencoder (van den Oord et al. 2017): a strided conv encoder to a 32-d map at 1/4,
    vector quantisation against a 256-entry codebook (squared distances as a matrix product, ArgMin, a
    Gather of the codes, the straight-through estimator), a transposed-conv decoder (MSE)."""

    def __init__(self, codes=256, d=32):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 32, 4, 2, 1), nn.ReLU(), nn.Conv2d(32, 64, 4, 2, 1), nn.ReLU(),
                                 nn.Conv2d(64, d, 1))
        self.codebook = nn.Embedding(codes, d)
        self.dec = nn.Sequential(nn.ConvTranspose2d(d, 64, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(64, 3, 4, 2, 1))

    def forward(self, x):
        z = self.enc(x)
        d, h, w = z.shape[1], z.shape[2], z.shape[3]
        flat = z.permute(0, 2, 3, 1).reshape(-1, d)
        e = self.codebook.weight
        dist = (flat * flat).sum(1, keepdim=True) - 2 * flat @ e.t() + (e * e).sum(1)
        q = self.codebook(dist.argmin(1)).reshape(-1, h, w, d).permute(0, 3, 1, 2)
        return self.dec(q + z - z.detach())  # the value of q, a gradient to both q and z


class MoEFFN(nn.Module):
    """A mixture of 8 expert MLPs with top-2 gating (softmax, TopK, ScatterElements into a dense gate),
    every expert computed densely by einsum over stacked weights and the outputs mixed by the gate."""

    def __init__(self, d, hidden, experts=8, k=2):
        super().__init__()
        self.k = k
        self.gate = nn.Linear(d, experts)
        self.w1 = nn.Parameter(torch.randn(experts, d, hidden) * d ** -0.5)
        self.b1 = nn.Parameter(torch.zeros(experts, hidden))
        self.w2 = nn.Parameter(torch.randn(experts, hidden, d) * hidden ** -0.5)
        self.b2 = nn.Parameter(torch.zeros(experts, d))

    def forward(self, x):
        p = self.gate(x).softmax(-1)
        top, idx = p.topk(self.k, -1)
        g = torch.zeros_like(p).scatter(-1, idx, top / top.sum(-1, keepdim=True))
        h = F.gelu(torch.einsum("bld,edh->bleh", x, self.w1) + self.b1)
        y = torch.einsum("bleh,ehd->bled", h, self.w2) + self.b2
        return torch.einsum("ble,bled->bld", g, y)


class MoETransformer(nn.Module):
    """Two post-norm Transformer layers (nn.MultiheadAttention, width 128, 4 heads) whose feed-forward is
    a top-2 mixture of 8 experts (hidden 256); mean pool, 10 classes."""

    def __init__(self, d=128, max_len=512):
        super().__init__()
        self.emb, self.pos = nn.Embedding(V, d), nn.Embedding(max_len, d)
        self.attn = nn.ModuleList([nn.MultiheadAttention(d, 4, dropout=0.1, batch_first=True) for _ in range(2)])
        self.moe = nn.ModuleList([MoEFFN(d, 256) for _ in range(2)])
        self.n1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(2)])
        self.n2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(2)])
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        h = self.emb(x) + self.pos(torch.arange(x.shape[1]))
        for a, m, n1, n2 in zip(self.attn, self.moe, self.n1, self.n2):
            h = n1(h + a(h, h, h, need_weights=False)[0])
            h = n2(h + m(h))
        return self.head(h.mean(1))


class S4DLayer(nn.Module):
    """A diagonal state-space layer (S4D-Real, Gu et al. 2022) computed as a long convolution: per channel
    the kernel K[l] = sum_n C_n B_n exp(dt A_n l) over the whole sequence is built from the parameters on
    every step (Exp, Mul, ReduceSum) and applied as a causal depthwise Conv1d whose weight is that kernel; plus a
    skip D u, GELU and a GLU output mixing."""

    def __init__(self, h, length, n=16):
        super().__init__()
        # The lags, reversed (Conv1d correlates): fixed per graph, so that the kernel's shape is known
        # when the graph is traced (the exporter refuses a Conv whose weight has an unknown shape).
        self.register_buffer("lags", torch.arange(length - 1, -1, -1, dtype=torch.float32), persistent=False)
        self.log_dt = nn.Parameter(torch.linspace(math.log(1e-3), math.log(1e-1), h)[:, None])
        self.log_a = nn.Parameter(torch.log(0.5 * torch.ones(h, n)))
        self.c = nn.Parameter(torch.randn(h, n) * 0.5)
        self.d = nn.Parameter(torch.ones(h))
        self.mix = nn.Linear(h, 2 * h)
        self.norm = nn.LayerNorm(h)

    def forward(self, x):  # [B, L, H]
        n = x.shape[1]
        u = self.norm(x).transpose(1, 2)  # [B, H, L]
        dta = -torch.exp(self.log_a) * torch.exp(self.log_dt)  # [H, N]
        k = (self.c[:, :, None] * torch.exp(dta[:, :, None] * self.lags)).sum(1)  # [H, L]
        y = F.conv1d(F.pad(u, (n - 1, 0)), k.unsqueeze(1), groups=u.shape[1]) + self.d[:, None] * u
        return x + F.glu(self.mix(F.gelu(y).transpose(1, 2)), -1)


class S4DNet(nn.Module):
    """Token embeddings (128 channels), four S4D layers, mean pool, 10 classes."""

    def __init__(self, length, h=128):
        super().__init__()
        self.emb = nn.Embedding(V, h)
        self.layers = nn.Sequential(*[S4DLayer(h, length) for _ in range(4)])
        self.head = nn.Linear(h, 10)

    def forward(self, x):
        return self.head(self.layers(self.emb(x)).mean(1))


class ODEFunc(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.f = nn.Sequential(nn.GroupNorm(8, c), nn.Tanh(), nn.Conv2d(c, c, 3, 1, 1), nn.GroupNorm(8, c), nn.Tanh(),
                               nn.Conv2d(c, c, 3, 1, 1))

    def forward(self, h):
        return self.f(h)


class NeuralODE(nn.Module):
    """A neural ODE (Chen et al. 2018) integrated by four fixed steps of classic Runge-Kutta: the same two
    convolutions (32 channels, GroupNorm, tanh) evaluated 16 times, weights shared; stride-2 stem, 10
    classes. Backpropagation through the unrolled solver (no adjoint)."""

    def __init__(self, c=32, steps=4):
        super().__init__()
        self.steps = steps
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.GroupNorm(8, c), nn.ReLU())
        self.func = ODEFunc(c)
        self.head = nn.Sequential(nn.GroupNorm(8, c), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 10))

    def forward(self, x):
        h = self.stem(x)
        dt = 1.0 / self.steps
        for _ in range(self.steps):
            k1 = self.func(h)
            k2 = self.func(h + 0.5 * dt * k1)
            k3 = self.func(h + 0.5 * dt * k2)
            k4 = self.func(h + dt * k3)
            h = h + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return self.head(h)


class GRN(nn.Module):
    """ConvNeXt V2's global response normalisation (channel-last): the L2 norm of each channel over the
    map, divided by its mean over channels, scales the input (gamma, beta, residual)."""

    def __init__(self, c):
        super().__init__()
        self.gamma, self.beta = nn.Parameter(torch.zeros(1, 1, 1, c)), nn.Parameter(torch.zeros(1, 1, 1, c))

    def forward(self, x):
        g = torch.norm(x, p=2, dim=(1, 2), keepdim=True)
        return self.gamma * (x * (g / (g.mean(-1, keepdim=True) + 1e-6))) + self.beta + x


class ConvNeXtV2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, 1, 3, groups=c)
        self.norm = nn.LayerNorm(c)
        self.mlp = nn.Sequential(nn.Linear(c, 4 * c), nn.GELU(), GRN(4 * c), nn.Linear(4 * c, c))

    def forward(self, x):
        return x + self.mlp(self.norm(self.dw(x).permute(0, 2, 3, 1))).permute(0, 3, 1, 2)


class LayerNorm2d(nn.LayerNorm):
    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvNeXtV2(nn.Module):
    """ConvNeXt V2-like (Woo et al. 2023), small: a 4x4 patchify stem, three stages (32-64-128 channels,
    2-2-4 blocks) of depthwise 7x7, LayerNorm, MLP with GRN; LayerNorm + 2x2 stride-2 conv between
    stages; 10 classes."""

    def __init__(self, dims=(32, 64, 128), depths=(2, 2, 4)):
        super().__init__()
        layers = [nn.Conv2d(3, dims[0], 4, 4), LayerNorm2d(dims[0])]
        for i, (c, n) in enumerate(zip(dims, depths)):
            if i:
                layers += [LayerNorm2d(dims[i - 1]), nn.Conv2d(dims[i - 1], c, 2, 2)]
            layers += [ConvNeXtV2Block(c) for _ in range(n)]
        self.body = nn.Sequential(*layers)
        self.norm, self.head = nn.LayerNorm(dims[-1]), nn.Linear(dims[-1], 10)

    def forward(self, x):
        return self.head(self.norm(self.body(x).mean((2, 3))))


class RoPEAttention(nn.Module):
    """Causal self-attention with rotary position embeddings (Su et al. 2021): q and k rotated pairwise
    by position-dependent angles (Sin, Cos of a position x frequency product, halves swapped and
    negated), no bias, a causal mask added before the softmax."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.qkv, self.o = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, self.hd, 2).float() / self.hd),
                             persistent=False)

    def forward(self, x):
        n, d = x.shape[1], x.shape[2]
        q, k, v = self.qkv(x).reshape(-1, n, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
        ang = torch.arange(n, dtype=x.dtype)[:, None] * self.inv_freq[None, :]
        ang = torch.cat([ang, ang], -1)
        cos, sin = ang.cos(), ang.sin()

        def rot(t):
            t1, t2 = t[..., : self.hd // 2], t[..., self.hd // 2:]
            return t * cos + torch.cat([-t2, t1], -1) * sin

        a = rot(q) @ rot(k).transpose(-2, -1) * self.hd ** -0.5
        a = a + torch.triu(torch.full((n, n), float("-inf")), 1)
        return self.o((a.softmax(-1) @ v).transpose(1, 2).reshape(-1, n, d))


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * self.w


class RoPELM(nn.Module):
    """A LLaMA-shaped decoder LM, small: RMSNorm, rotary attention (width 128, 4 heads), SwiGLU MLP
    (hidden 352), 3 layers, untied output over the 8192-token vocabulary."""

    def __init__(self, d=128, layers=3):
        super().__init__()
        self.emb = nn.Embedding(V, d)
        self.attn = nn.ModuleList([RoPEAttention(d, 4) for _ in range(layers)])
        self.n1 = nn.ModuleList([RMSNorm(d) for _ in range(layers)])
        self.n2 = nn.ModuleList([RMSNorm(d) for _ in range(layers)])
        self.up = nn.ModuleList([nn.Linear(d, 2 * 352, bias=False) for _ in range(layers)])
        self.down = nn.ModuleList([nn.Linear(352, d, bias=False) for _ in range(layers)])
        self.norm, self.out = RMSNorm(d), nn.Linear(d, V, bias=False)

    def forward(self, x):
        h = self.emb(x)
        for a, n1, n2, up, down in zip(self.attn, self.n1, self.n2, self.up, self.down):
            h = h + a(n1(h))
            g, u = up(n2(h)).chunk(2, -1)
            h = h + down(F.silu(g) * u)
        return self.out(self.norm(h))


@dataclasses.dataclass(frozen=True)
class Spec:
    kind: str  # 'image' (torch.randn(B, channels, S, S)) or 'tokens' (torch.randint(0, V, (B, S)))
    build: Callable[..., nn.Module]  # a class; called with the size when `sized`
    sizes: Tuple[int, ...]  # image sides or sequence lengths, each measured
    family: str
    channels: int = 3
    sized: bool = False


# The outside set. Sizes were chosen so that one training iteration on one thread costs between ~2 ms
# (batch 1) and well under 1 s (batch 8).
NETS = {
    # The first ten (unchanged since the set began).
    "decoder_lm": Spec("tokens", DecoderLM, (64,), "transformer-decoder"),
    "bigru2": Spec("tokens", BiGRU2, (64,), "gru-bidirectional"),
    "attn_lstm": Spec("tokens", AttnLSTM, (64,), "lstm-attention-pool"),
    "conv1d_text": Spec("tokens", Conv1dNet, (128,), "conv1d-text"),
    "autoencoder": Spec("image", AutoEncoder, (64,), "conv-autoencoder"),
    "groupnorm_res": Spec("image", GroupNormRes, (32,), "groupnorm-resnet"),
    "superres": Spec("image", SuperRes, (32,), "espcn-superres"),
    "odd_mlp": Spec("image", OddMLP, (32,), "mlp-odd-activations"),
    "einsum_attention": Spec("tokens", EinsumAttention, (64,), "einsum-attention"),
    "densecat": Spec("image", DenseCat, (32,), "densenet-like"),
    # Issue 23's families.
    "resnest_d": Spec("image", ResNeStD, (64, 96), "split-attention"),
    "repvgg_train": Spec("image", RepVGGTrain, (64, 96), "repvgg-multibranch"),
    "elan_net": Spec("image", ELANNet, (64,), "elan"),
    "hrnet_mini": Spec("image", HRNetMini, (64, 96), "hrnet-multiresolution"),
    "unetpp": Spec("image", UNetPP, (32, 64), "unet++-nested"),
    "fpn_seg": Spec("image", FPNSeg, (64,), "fpn-decoder"),
    "coatnet_like": Spec("image", CoAtNetLike, (64,), "conv-attention-hybrid", sized=True),
    "perceiver": Spec("tokens", Perceiver, (256, 512), "perceiver-cross-attention"),
    "convlstm": Spec("image", ConvLSTMNet, (32, 48), "convlstm", channels=ConvLSTMNet.frames),
    "tcn": Spec("tokens", TCN, (256,), "tcn-causal-dilated"),
    "capsnet": Spec("image", CapsNet, (32,), "capsule-routing", sized=True),
    "dense_gnn": Spec("tokens", DenseGNN, (128, 256), "gnn-dense-adjacency", sized=True),
    "nerf_mlp": Spec("image", NeRFMLP, (16, 32), "nerf-mlp-posenc"),
    "speech_conformer": Spec("image", SpeechConformer, (64,), "asr-conformer", channels=1, sized=True),
    "axial_transformer": Spec("image", AxialTransformer, (32,), "axial-attention", sized=True),
    "linear_attention_lm": Spec("tokens", LinearAttentionLM, (128, 256), "linear-attention"),
    "effnet_sd": Spec("image", EffNetSD, (64, 96), "mbconv-stochastic-depth"),
    "res2net": Spec("image", Res2Net, (64,), "res2net-hierarchical"),
    "pointnet": Spec("image", PointNet, (32,), "pointnet"),
    "vq_autoencoder": Spec("image", VQAutoEncoder, (64, 96), "vq-autoencoder"),
    "moe_transformer": Spec("tokens", MoETransformer, (128,), "mixture-of-experts"),
    "s4d": Spec("tokens", S4DNet, (256,), "state-space-long-conv", sized=True),
    "neural_ode": Spec("image", NeuralODE, (32,), "neural-ode-rk4"),
    "convnext_v2": Spec("image", ConvNeXtV2, (64,), "convnext-v2-grn"),
    "rope_lm": Spec("tokens", RoPELM, (128,), "rotary-decoder-lm"),
}

# The set's first ten (scripts/peer_compare.py compares peers' memory estimates on them).
FIRST_TEN = list(NETS)[:10]


def register(name):
    """Puts the network into the zoo's registry (under its own name, family 'outside'), so that the
    collector's export and Worker treat it exactly as a zoo network."""
    s = NETS[name]
    build = (lambda size, s=s: s.build(size)) if s.sized else (lambda size, s=s: s.build())
    zoo.REGISTRY[name] = zoo.Net(name, s.kind, build, family="outside", channels=s.channels,
                                 vocab=V if s.kind == "tokens" else 0, candidates=s.sizes)
    return zoo.REGISTRY[name]


def input_label(name, size):
    s = NETS[name]
    return f"{s.channels}x{size}x{size}" if s.kind == "image" else f"L{size}"


def measure(name, size, batch):
    """Runs in a fresh worker (protocol environment, tracker preloaded): one JSON line. The collector's own
    Worker measures, so the network gets exactly the protocol's treatment: a dry run before the baseline
    (PyTorch's and oneDNN's first-use caches are not the job's memory), warm-up, then the timed
    iterations (median time, peak live bytes)."""
    from collector import worker
    w = worker.Worker(1)
    register(name)
    res = w.measure({"id": 0, "network": name, "size": size, "batch": batch, "optimizer": "sgd"})
    if res.get("status") != "ok":
        sys.exit(f"{name}: {res.get('status')}: {res.get('error')}")
    print(json.dumps({"time_s": float(res["time_s"]), "memory_bytes": int(res["memory_bytes"]),
                      "params": int(res["params"]), "calib_s": float(res.get("calib_s") or 0),
                      "busy_other": float(res.get("busy_other") or 0), "iterations": int(res["iterations"]),
                      "machine": w.machine}))


# ---------------------------------------------------------------------------------------------------------
# --check: build, train, export, inspect
# ---------------------------------------------------------------------------------------------------------
def inspect_graph(abacus, path, batch):
    p = subprocess.run([abacus, "inspect", path, "--strict", "--batch", str(batch), "--format", "json"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"abacus inspect --strict --batch {batch}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def check_one(abacus, name, size, path, big_batch):
    """Returns (ok, facts): one training step at batch 1, the export, and Abacus's reading of the graph."""
    net = register(name)
    torch.manual_seed(0)
    model = net.build(size)
    model.train()
    params = sum(p.numel() for p in model.parameters())
    x = net.make_input(1, size)
    out = model(x)
    zoo.loss_fn(out, 1).backward()
    torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9).step()
    no_grad = [n for n, p in model.named_parameters() if p.grad is None]
    out_shape = list(out.shape)
    del model, out
    info = export_onnx.export_graph(name, size, path)
    d1 = inspect_graph(abacus, path, 1)
    dB = inspect_graph(abacus, path, big_batch)
    problems = []
    if no_grad:
        problems.append(f"no gradient: {','.join(no_grad)}")
    if info["params"] != params or d1["totals"]["params"] != params:
        problems.append(f"params: torch {params}, export {info['params']}, abacus {d1['totals']['params']}")
    if d1["totals"].get("unknown", 0):
        problems.append(f"unknown ops {d1.get('unknown_ops')}")
    if d1["outputs"][0]["shape"] != out_shape:
        problems.append(f"output {d1['outputs'][0]['shape']} != torch {out_shape}")
    if dB["outputs"][0]["shape"][:1] != [big_batch]:
        problems.append(f"output at batch {big_batch}: {dB['outputs'][0]['shape']}")
    if "output-batch-not-symbolic" in info["notes"]:
        problems.append("output batch not symbolic")
    return not problems, {
        "params": params, "abacus_params": d1["totals"]["params"], "nodes": info["nodes"],
        "gflop_train_b1": (d1["totals"]["forward_flops"] + d1["totals"]["backward_flops"]) / 1e9,
        "peak_mib_b1": d1["memory"]["peak"] / 2 ** 20, "notes": info["notes"], "problems": problems}


def run_check(abacus, names, out_dir, big_batch):
    bad = 0
    print(f"{'network':20s} {'family':26s} {'input':>9s} {'params':>9s} {'abacus':>9s} {'nodes':>5s}"
          f" {'GFLOP b1':>8s} {'peak b1':>8s}  result")
    for name in names:
        for size in NETS[name].sizes:
            path = os.path.join(out_dir, f"{name}-{size}.onnx")
            try:
                ok, f = check_one(abacus, name, size, path, big_batch)
            except Exception as e:  # noqa: BLE001 - every failure is reported, then the next network
                ok, f = False, {"problems": [f"{type(e).__name__}: {str(e).strip().splitlines()[-1:]}"]}
            bad += not ok
            if "params" in f:
                print(f"{name:20s} {NETS[name].family:26s} {input_label(name, size):>9s} {f['params']:9d}"
                      f" {f['abacus_params']:9d} {f['nodes']:5d} {f['gflop_train_b1']:8.3f} {f['peak_mib_b1']:6.1f}Mi"
                      f"  {'ok' if ok else 'FAIL: ' + '; '.join(f['problems'])}"
                      + (f"  [{f['notes']}]" if f["notes"] else ""), flush=True)
            else:
                print(f"{name:20s} {NETS[name].family:26s} {input_label(name, size):>9s}  FAIL: "
                      f"{'; '.join(f['problems'])}", flush=True)
    total = sum(len(NETS[n].sizes) for n in names)
    print(f"check: {total - bad} of {total} (network, size) pairs ok over {len(names)} networks")
    return 1 if bad else 0


# ---------------------------------------------------------------------------------------------------------
# Measurement and prediction
# ---------------------------------------------------------------------------------------------------------
def _stat_busy():
    with open("/proc/stat") as f:
        v = [int(t) for t in f.readline().split()[1:9]]
    return sum(v) - v[3] - v[4], sum(v)


def wait_quiet(limit_s):
    """Waits until other processes use < 10 % of the machine over a 1 s window, at most limit_s seconds.
    Returns (seconds waited, whether the machine was quiet)."""
    start = time.monotonic()
    while True:
        b0, t0 = _stat_busy()
        time.sleep(1.0)
        b1, t1 = _stat_busy()
        if t1 <= t0 or (b1 - b0) / (t1 - t0) < 0.10:
            return time.monotonic() - start, True
        if time.monotonic() - start >= limit_s:
            return time.monotonic() - start, False


BUSY = 0.1  # a worker whose timed iterations shared more than this share of the machine is measured again
TRIES = 5


def one_worker(name, size, batch, env, quiet_s):
    """One fresh worker's measurement, measured again (at most TRIES times in all) when other work shared the
    machine. The waits are short on purpose: the campaign (scripts/campaign.sh) also waits for a quiet machine
    and gives up after 10 minutes; a script that sat idle waiting for it would let it measure back to back,
    while one that retries soon keeps the machine busy, so the campaign pauses after the configuration it is
    measuring."""
    waited, tries = 0.0, 0
    while True:
        if quiet_s > 0:
            waited += wait_quiet(quiet_s)[0]
        w = subprocess.run([sys.executable, os.path.abspath(__file__), "--measure", name, "--size", str(size),
                            "--batch", str(batch)], env=env, capture_output=True, text=True, timeout=900)
        if w.returncode != 0:
            raise RuntimeError((w.stderr.strip().splitlines() or ["worker failed"])[-1])
        r = json.loads(w.stdout.strip().splitlines()[-1])
        tries += 1
        if r["busy_other"] <= BUSY or tries >= TRIES or quiet_s <= 0:
            return dict(r, tries=tries, waited_s=round(waited, 1))


def predict(abacus, path, batch, calib_s, model, machine=None):
    """`abacus predict` on this machine's own hardware id (cpu1@<machine id>) when the bundle has rows of it,
    else on cpu1 (the rows of machines that did not record their id)."""
    if machine:
        try:
            return _predict(abacus, path, batch, calib_s, model, f"cpu1@{machine}")
        except RuntimeError as e:
            if "unknown hardware id" not in str(e):
                raise
    return _predict(abacus, path, batch, calib_s, model, "cpu1")


def _predict(abacus, path, batch, calib_s, model, hw):
    cmd = [abacus, "predict", path, "--batch", str(batch), "--hw", hw, "--format", "json"]
    # The machine's speed index measured beside the network (docs/PROTOCOL.md), as `abacus predict --calib`
    # would get it from `abacus calibrate`: the comparison the dataset's speed-adjusted figures make.
    if calib_s > 0:
        cmd += ["--calib", repr(calib_s)]
    if model:
        cmd += ["--model", model]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"abacus predict failed: {p.stderr.strip()}")
    return json.loads(p.stdout)


def _git(*args):
    p = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else ""


def bundle_facts(model):
    path = model or os.environ.get("ABACUS_MODEL") or os.path.join(ROOT, "data/predictor.abacus")
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    rel = os.path.relpath(os.path.abspath(path), ROOT)
    return {"path": rel if not rel.startswith("..") else path, "sha256": h.hexdigest(),
            "last_commit": _git("log", "-1", "--format=%H", "--", rel) if not rel.startswith("..") else "",
            "modified": bool(_git("status", "--porcelain", "--", rel)) if not rel.startswith("..") else None}


def machine_facts(env):
    p = subprocess.run([sys.executable, "-m", "collector.worker", "--machine", "--threads", "1"], cwd=ROOT, env=env,
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"collector.worker --machine failed: {p.stderr.strip()}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def summary(rows):
    n = len(rows)
    if not n:
        return {}
    worst = sorted(rows, key=lambda r: -abs(r["time_error"]))
    return {
        "rows": n, "networks": len({r["name"] for r in rows}),
        "coverage": round(sum(r["time_in_interval"] for r in rows) / n, 4),
        "time_mre": round(sum(abs(r["time_error"]) for r in rows) / n, 4),
        "time_median_re": round(statistics.median(abs(r["time_error"]) for r in rows), 4),
        "time_signed_mean": round(sum(r["time_error"] for r in rows) / n, 4),
        "time_rows_over_25pct": sum(abs(r["time_error"]) > 0.25 for r in rows),
        "memory_mre": round(sum(abs(r["memory_error"]) for r in rows) / n, 4),
        "memory_underestimate_rate": round(sum(r["memory_underestimate"] for r in rows) / n, 4),
        "memory_in_interval": round(sum(r["memory_in_interval"] for r in rows) / n, 4),
        "time_spread_median": round(statistics.median(r["time_spread"] for r in rows), 4),
        "rows_shared_machine": sum(r["shared_machine"] for r in rows),
        "worst_time": [{"name": r["name"], "input": r["input"], "batch": r["batch"],
                        "time_error": r["time_error"]} for r in worst[:5]],
    }


def print_header():
    print(f"{'network':20s} {'input':>9s} {'b':>2s} {'params':>9s} {'time pred':>10s} {'90% interval':>17s}"
          f" {'measured':>10s} {'spread':>6s} {'err':>6s} {'mem pred':>9s} {'measured':>9s} {'err':>6s}")


def print_summary(s, extra=""):
    print(f"MRE over {s['rows']} rows of {s['networks']} networks: time {100 * s['time_mre']:.1f} % (median "
          f"{100 * s['time_median_re']:.1f} %, signed mean {100 * s['time_signed_mean']:+.1f} %, "
          f"{s['time_rows_over_25pct']} rows over 25 %), memory {100 * s['memory_mre']:.2f} %; "
          f"90 % interval coverage {100 * s['coverage']:.0f} %; memory above the interval in "
          f"{100 * s['memory_underestimate_rate']:.0f} % of rows; median spread {100 * s['time_spread_median']:.1f} %"
          f"; {s['rows_shared_machine']} rows shared the machine" + extra)


def print_row(row, note=""):
    print(f"{row['name']:20s} {row['input']:>9s} {row['batch']:2d} {row['params']:9d} {row['time_pred_s'] * 1e3:8.2f}ms"
          f" {'%.2f-%.2fms' % (row['time_lo_s'] * 1e3, row['time_hi_s'] * 1e3):>16s}"
          f"{' ' if row['time_in_interval'] else '*'} {row['time_s'] * 1e3:8.2f}ms {100 * row['time_spread']:5.1f}%"
          f" {100 * row['time_error']:+5.0f}% {row['memory_pred_bytes'] / 2**20:7.1f}Mi {row['memory_bytes'] / 2**20:7.1f}Mi"
          f" {100 * row['memory_error']:+5.1f}%" + ("  (memory above the interval)" if row["memory_underestimate"] else "")
          + ("  (shared the machine)" if row["shared_machine"] else "") + note, flush=True)


def write_json(path, doc):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def with_prediction(row, d):
    """The row's prediction fields and errors from `abacus predict --format json` output `d`."""
    med, mem = row["time_s"], row["memory_bytes"]
    row.update({
        "time_pred_s": d["time_s"], "time_lo_s": d["time_lo_s"], "time_hi_s": d["time_hi_s"],
        "time_error": round((d["time_s"] - med) / med, 4), "time_in_interval": d["time_lo_s"] <= med <= d["time_hi_s"],
        "memory_pred_bytes": d["memory_bytes"], "memory_lo_bytes": d["memory_lo_bytes"],
        "memory_hi_bytes": d["memory_hi_bytes"], "memory_error": round((d["memory_bytes"] - mem) / mem, 4),
        "memory_in_interval": d["memory_lo_bytes"] <= mem <= d["memory_hi_bytes"],
        "memory_underestimate": mem > d["memory_hi_bytes"], "novelty": d.get("novelty"), "hw": d.get("hw"),
    })
    if d.get("time_analytic_s"):  # the analytic estimate alone, to judge the learned correction on these networks
        row["time_analytic_s"] = d["time_analytic_s"]
        row["time_analytic_error"] = round((d["time_analytic_s"] - med) / med, 4)
    return row


def _export_version(path):
    """The graph's `abacus.export` metadata as an int (1: a graph made before the key existed)."""
    meta = {p.key: p.value for p in onnx.load(path, load_external_data=False).metadata_props}
    try:
        return int(meta.get("abacus.export", 1))
    except ValueError:
        return 1


def repredict(abacus, src, dst, out, model):
    """Predicts the measured rows of `src` again with this abacus and `model`; writes `dst`."""
    with open(src) as f:
        doc = json.load(f)
    rows = []
    print_header()
    for r in doc["networks"]:
        path = os.path.join(out, r["graph"])
        if not os.path.exists(path) or _export_version(path) != graph_export.EXPORT_VERSION:
            register(r["name"])  # (a graph of an earlier export is not the graph this checkout reads)
            export_onnx.export_graph(r["name"], r["size"], path)
        rows.append(with_prediction(dict(r), predict(abacus, path, r["batch"], r["calib_s"], model, doc["machine"])))
        print_row(rows[-1])
    doc.update(summary(rows), networks=rows, bundle=bundle_facts(model), hw=rows[0]["hw"] if rows else None,
               what="issue 23 outside set: networks never in the training data, measured under docs/PROTOCOL.md "
                    "and predicted by abacus predict --hw cpu1@<machine> (or cpu1 when the bundle has no rows of "
                    "the machine) --calib (the workers' speed index)")
    doc["predicted"] = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                        "commit": _git("rev-parse", "HEAD"), "uncommitted_changes": bool(_git("status", "--porcelain")),
                        "from": src, "note": "measurements of the runs below, predicted again (--repredict)"}
    write_json(dst, doc)
    print_summary(summary(rows), f" (measured {doc['date']}, predicted again {doc['predicted']['date']})")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="/tmp/abacus-outside-zoo", help="folder for the exported graphs")
    ap.add_argument("--batches", default=None, help="comma-separated batch sizes (default 4)")
    ap.add_argument("--batch", type=int, default=None, help="one batch size (the same as --batches B)")
    ap.add_argument("--model", default=None, help="predictor bundle (default: the bundled one)")
    ap.add_argument("--only", default="", help="comma-separated subset of the networks")
    ap.add_argument("--repeat", type=int, default=1, help="workers per configuration (median time)")
    ap.add_argument("--json", default=None, help="write the rows and the summary here")
    ap.add_argument("--check", action="store_true", help="build, train, export and inspect only (no timing)")
    ap.add_argument("--quiet-wait", type=float, default=15,
                    help="seconds to wait at most for a quiet machine before each worker (0: neither wait nor "
                    "measure again when the machine was busy)")
    ap.add_argument("--resume", action="store_true",
                    help="with --json: keep the rows the file has that were measured on a quiet machine, "
                    "measure the others (a stopped run, or rows that shared the machine)")
    ap.add_argument("--repredict", metavar="OUT.json", default=None,
                    help="with --json FILE of an earlier run: measure nothing, predict every measured row again "
                    "with this abacus and --model (graphs exported again where --out lacks them or holds an earlier "
                    "export's: metadata abacus.export) and write the "
                    "rows, errors and summary to OUT.json; the measurements, their machine and date are kept")
    ap.add_argument("--list", action="store_true", help="print the networks, families and sizes")
    ap.add_argument("--measure", default=None, help=argparse.SUPPRESS)  # worker mode
    ap.add_argument("--size", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.batches is not None and a.batch is not None:
        ap.error("give --batches or --batch, not both")
    batches = [int(b) for b in a.batches.split(",") if b] if a.batches else [a.batch or 4]
    if a.measure:
        measure(a.measure, a.size or NETS[a.measure].sizes[0], batches[0])
        return 0
    names = [n for n in a.only.split(",") if n] or list(NETS)
    for n in names:
        if n not in NETS:
            sys.exit(f"outside_zoo: unknown network '{n}' (known: {', '.join(NETS)})")
    if a.list:
        for n in names:
            print(f"{n:20s} {NETS[n].family:26s} {NETS[n].kind:6s} {','.join(input_label(n, s) for s in NETS[n].sizes)}")
        return 0
    abacus = os.environ.get("ABACUS") or os.path.join(ROOT, "build/release/abacus")
    tracker = os.path.join(ROOT, "build/release/libabacus_tracker.so")
    for f in (abacus, tracker):
        if not os.path.exists(f):
            sys.exit(f"outside_zoo: {f} is missing: run `make` first")
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")  # the exporter's warnings about in-place ops and traced shapes
    if a.check:
        return run_check(abacus, names, a.out, max(batches))
    if a.repredict:
        if not (a.json and os.path.exists(a.json)):
            ap.error("--repredict needs --json FILE of an earlier run")
        return repredict(abacus, a.json, a.repredict, a.out, a.model)

    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MALLOC_MMAP_MAX_="0", MALLOC_MMAP_THRESHOLD_="33554432", MALLOC_TRIM_THRESHOLD_="68719476736",
               MALLOC_TOP_PAD_="536870912", PYTHONPATH=ROOT)
    t_start = time.time()
    now = lambda: datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    command = "scripts/outside_zoo.py " + " ".join(sys.argv[1:] if argv is None else argv)
    doc, kept = None, {}
    if a.resume and not (a.json and os.path.exists(a.json)):
        ap.error("--resume needs --json FILE of an earlier run")
    if a.json:
        from collector import worker
        mach = machine_facts(env)
        bundle = bundle_facts(a.model)
        doc = {"what": "issue 23 outside set: networks never in the training data, measured under docs/PROTOCOL.md "
                       "and predicted by abacus predict --hw cpu1 --calib (the workers' speed index)",
               "date": now(), "commit": _git("rev-parse", "HEAD"),
               "uncommitted_script": bool(_git("status", "--porcelain", "--", "scripts/outside_zoo.py")),
               "machine": mach["machine"], "machine_descriptor": mach.get("descriptor"),
               "bundle": bundle, "hw": "cpu1", "optimizer": "sgd", "batches": batches,
               "repeat": max(1, a.repeat), "torch": torch.__version__, "protocol": worker.PROTOCOL,
               "command": command, "runs": [], "complete": False, "networks": []}
        if a.resume:
            with open(a.json) as f:
                old = json.load(f)
            for key in ("machine", "repeat", "batches", "protocol"):
                if old.get(key) != doc[key]:
                    sys.exit(f"outside_zoo: --resume: {a.json} has {key} {old.get(key)!r}, this run {doc[key]!r}")
            if old["bundle"]["sha256"] != bundle["sha256"]:
                sys.exit(f"outside_zoo: --resume: {a.json} was predicted with another bundle")
            doc["runs"] = old.get("runs") or [{k: old.get(k) for k in ("date", "commit", "command", "wall_s")}]
            for r in old["networks"]:
                r.setdefault("date", old["date"])
                r["shared_machine"] = any(b > BUSY for b in r["busy_other"])
            kept = {(r["name"], r["input"], r["batch"]): r for r in old["networks"]}
    env["LD_PRELOAD"] = tracker
    rows, failed = [], []
    print_header()

    def save(complete):
        if doc is not None:
            doc.update(summary(rows), networks=rows, failed=failed, complete=complete)
            run = {"date": doc["date"], "commit": doc["commit"], "command": command,
                   "wall_s": round(time.time() - t_start), "rows_measured": len(rows) - n_kept}
            doc["runs"] = doc["runs"][: n_runs] + [run]
            doc["wall_s"] = sum(r.get("wall_s") or 0 for r in doc["runs"])
            write_json(a.json, doc)

    n_runs = len(doc["runs"]) if doc else 0
    n_kept = 0
    for name in (list(NETS) if a.resume else names):  # --resume keeps the file's rows of networks not in --only
        spec = NETS[name]
        register(name)
        for size in spec.sizes:
            path = os.path.join(a.out, f"{name}-{size}.onnx")
            exported = False
            for batch in batches:
                label = input_label(name, size)
                k = (name, label, batch)
                if name not in names and k not in kept:
                    continue
                if k in kept and (name not in names or not kept[k]["shared_machine"]):
                    rows.append(kept[k])
                    n_kept += 1
                    print_row(rows[-1], "  (kept)")
                    continue
                if not exported:
                    export_onnx.export_graph(name, size, path)
                    exported = True
                try:
                    runs = [one_worker(name, size, batch, env, a.quiet_wait) for _ in range(max(1, a.repeat))]
                    times = sorted(r["time_s"] for r in runs)
                    med = statistics.median(times)
                    calib = statistics.median(r["calib_s"] for r in runs)
                    mem = int(statistics.median(r["memory_bytes"] for r in runs))
                    d = predict(abacus, path, batch, calib, a.model, mach["machine"] if a.json else None)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    print(f"{name:20s} {label:>9s} {batch:2d} failed: {e}", flush=True)
                    failed.append({"name": name, "input": label, "batch": batch, "error": str(e)})
                    continue
                rows.append(with_prediction({
                    "name": name, "family": spec.family, "kind": spec.kind, "input": label, "size": size,
                    "batch": batch, "params": runs[0]["params"], "graph": os.path.basename(path), "date": now(),
                    "time_s": med, "time_spread": round((times[-1] - times[0]) / med, 4), "time_runs_s": times,
                    "memory_bytes": mem, "memory_runs_bytes": [r["memory_bytes"] for r in runs],
                    "calib_s": calib, "busy_other": [r["busy_other"] for r in runs],
                    "shared_machine": any(r["busy_other"] > BUSY for r in runs),
                    "workers": sum(r["tries"] for r in runs), "iterations": [r["iterations"] for r in runs],
                    "waited_quiet_s": round(sum(r["waited_s"] for r in runs), 1),
                }, d))
                print_row(rows[-1])
                save(False)
    s = summary(rows)
    if s:
        print_summary(s, f"; {time.time() - t_start:.0f} s" + (f" ({n_kept} rows kept from {a.json})" if n_kept else ""))
    if failed:
        print(f"{len(failed)} configurations failed: " + ", ".join(f"{f['name']} {f['input']} b{f['batch']}" for f in failed))
    save(not failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
