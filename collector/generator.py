"""Abacus architecture generator: networks sampled from a documented space, deterministic from a seed.

The zoo's 99 hand-picked networks are a thin sample of what people train. This module samples many more,
each a valid trainable nn.Module that exports through the collector's path (graph_export: opset 14,
training mode), so that the dataset sees many ways of combining widths, depths, kernels, strides, groups,
normalisations, activations, skips and attention (issue 23, item 1). docs/GENERATOR.md describes the
space for readers; this docstring is its reference.

Names. A generated network is named `<family>_s<seed, 6 digits>`, e.g. `gen_cnn_s000123`; everything
about it follows from the name: `spec(name)` samples its architecture (a JSON-able dict) and its one valid
input size, `build(spec)` makes the module, `net(name)` wraps both as a zoo.Net, and `zoo.get(name)`
resolves `gen_*` names through `net` (lazily: importing the zoo does not import this module, and the
zoo's REGISTRY and NAMES do not change).

Families (kind: the zoo's input kinds, docs/PROTOCOL.md; tokens are ids in [0, zoo.TOKEN_VOCAB)):
  gen_cnn     image   convolutional stages. Stem: conv k 3/5/7, stride 1/2, optional max/avg pool.
                      1-5 stages, widths w0 * growth^i (growth 1.2-2.5), 1-4 blocks per stage; per stage
                      a downsampling (stride-2 first block, max pool, avg pool, none, or dilation 2/3
                      instead), a kernel 1/3/5/7 and a block type: plain (1-2 convs), basic (two convs,
                      ResNet), bottleneck (1x1 - kxk grouped - 1x1, expansion 2/4, groups 1-32), inverted
                      residual (1x1 expand t 1-6, depthwise kxk, 1x1 project, MobileNetV2) or dense
                      (DenseNet layers, growth 6-48, optional 1x1 bottleneck, then a 1x1 transition);
                      convs dense, grouped or separable (depthwise + pointwise); skips residual add,
                      concat + 1x1 fuse, or none; squeeze-excitation (ratio 4/8/16, sigmoid or
                      hard-sigmoid gate); one normalisation per network (BatchNorm, GroupNorm, LayerNorm
                      over channels, none); head: global avg/max pool, optional hidden layer and dropout,
                      2-1000 classes, or a dense 1x1 head (a map out, MSE loss).
  gen_tfm     tokens  Transformers over tokens: encoder classifier (mean/max/CLS pooling), decoder-only
                      language model (causal mask, logits over 256-8192 tokens), encoder-decoder (source =
                      the tokens, target = the tokens shifted right, cross attention), tagger (a small
                      label per token). Width = heads (1-16) x head size (8-80), depth 1-12 (decoder 1-6),
                      MLP ratio 1-6 (plain or gated GLU), pre- or post-norm, LayerNorm or RMSNorm, learned,
                      sinusoidal or no positions, nn.TransformerEncoderLayer/DecoderLayer or attention
                      written out (q/k/v projections fused or not, MatMul + Softmax).
  gen_mlp     image   fully connected: the flattened image (side 8-64), or (tokens) an embedding bag
              tokens  (mean over the sequence, or the sequence flattened); 1-8 hidden layers of constant,
                      funnel or diamond widths, LayerNorm or none, dropout, optional residual blocks.
  gen_mixer   image   patch embedding (patch 2-16, 4-1024 tokens) then MLP-Mixer, gMLP (spatial gating),
                      ResMLP (affine norm, linear token mixing, layer scale), PoolFormer (avg-pool token
                      mixing, GroupNorm) or ConvMixer (depthwise + pointwise convs) blocks; width 24-512,
                      depth 1-12.
  gen_rnn     tokens  embedding, optional 1-D conv front (k 3/5), LSTM, GRU or Elman RNN (tanh/relu),
                      1-4 layers of hidden 16-768, uni- or bidirectional, stacked in one module or as
                      separate modules (with LayerNorm, dropout or residual between); head from the last
                      hidden state, mean or max over time, a tag per token, or logits over the vocabulary.
  gen_hybrid  image   a convolutional stem (1-3 stages from the gen_cnn space), then attention: ViT-style
                      tokens (a patch projection down to at most 28x28 tokens, learned positions, CLS or
                      mean pool), or 1-2 MobileViT-style blocks (local conv, global attention over the
                      map's pixels, pooled to at most 28x28 first, fold back, concat fuse).
Everywhere: activations ReLU, ReLU6, GELU, SiLU, Mish, Hardswish, PReLU (some in place); channel counts
rounded to 1 (not aligned: e.g. 37, 53), 4, 8 or 16 per network; integers, kernels and flags drawn by a
random.Random keyed by the name (never torch's generator, so weights still come from manual_seed(0)).

Sizes. Each sample draws a target training cost, log-uniform in [TARGET_LO_S, TARGET_HI_S] for one
iteration at batch 1 on one thread, and scales its widths (then its input size) until the estimate
(`estimate`: FLOPs and bytes of a batch-1 forward of the module on the meta device, seen by forward
hooks, priced by PRICE, fitted to the dataset's cpu1 rows) lies within a factor TOLERANCE of it. An
iteration must cost >= MIN_B1_S at batch 1 and <= MAX_B8_S at batch 8, and a network has at most
MAX_PARAMS parameters. The input size (image side or sequence length) is the network's one valid size.

Catalogue. `catalogue(total)` names seeds 0..n-1 of each family, n in proportion to FAMILY_WEIGHTS
(default total DEFAULT_TOTAL: 1,000 networks, 300 CNNs). `listing(total)` gives their `--list` lines,
from collector/generated.json (sizes and estimates of the default catalogue, written by `--write`, keyed
by a hash of this file so that a changed generator never lists stale sizes) or computed (~0.03 s each).
The worker lists them only when asked (`--list --generated [N]`, or ABACUS_GENERATED=N in the
environment of `abacus profile`): the zoo's own listing does not change.

  /usr/bin/python3 -m collector.generator --show gen_cnn_s000001     the spec and estimate as JSON
  /usr/bin/python3 -m collector.generator --list [--total N]        the catalogue's --list lines
  /usr/bin/python3 -m collector.generator --write                   rewrite collector/generated.json

Stability. Dataset rows name generated networks, so a name must keep meaning one network: once rows
exist, a change here must leave every existing spec as it is (new choices go behind new family names or
new seeds). `--write` refuses to change an entry already in generated.json unless --force, and
tests/generator_test.py fails while generated.json is not rewritten after an edit.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import random
import re
import sys
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from collector import zoo

TOKEN_VOCAB = zoo.TOKEN_VOCAB  # token inputs are ids in [0, 8192), as the zoo's

FAMILY_WEIGHTS = {"gen_cnn": 0.30, "gen_tfm": 0.15, "gen_rnn": 0.14, "gen_hybrid": 0.15, "gen_mlp": 0.13,
                  "gen_mixer": 0.13}
DEFAULT_TOTAL = 1000

# Cost bounds of one training iteration on one thread (seconds, estimated).
# MAX_B8_S leaves room under the campaign's --max-iter-seconds 3 for estimates 2-3x fast (24 networks
# timed at batch 8 beside the campaign: 0.6-2.4x the estimate, the most on large maps; docs/GENERATOR.md).
TARGET_LO_S, TARGET_HI_S = 0.002, 0.2    # the drawn target, batch 1
MIN_B1_S, MAX_B8_S = 0.001, 1.0          # hard bounds: batch 1 and batch 8
MAX_PARAMS = 50_000_000                  # and at most 200 MB of weights (~0.8 GB with Adam's state)
TOLERANCE = 1.6                          # accept an estimate within this factor of the target
WM_MAX = {"gen_mlp": 6.0}                # width multipliers are drawn in [0.15, 4] (MLPs: wider)

IMAGE_SIDES = (24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224)
SEQ_LENGTHS = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)

CATALOGUE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "generated.json")
NAME_RE = re.compile(r"^(gen_[a-z]+)_s(\d{6})$")


# ---------------------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------------------
def name_of(family: str, seed: int) -> str:
    return f"{family}_s{seed:06d}"


def parse(name: str) -> Optional[Tuple[str, int]]:
    """(family, seed) of a generated network's name, or None."""
    m = NAME_RE.match(name)
    if not m or m.group(1) not in FAMILY_WEIGHTS:
        return None
    return m.group(1), int(m.group(2))


def is_generated(name: str) -> bool:
    return parse(name) is not None


def counts(total: int = DEFAULT_TOTAL) -> Dict[str, int]:
    """Networks per family in a catalogue of `total`: in proportion to FAMILY_WEIGHTS (largest remainders)."""
    fams = list(FAMILY_WEIGHTS)
    raw = {f: total * FAMILY_WEIGHTS[f] for f in fams}
    n = {f: int(raw[f]) for f in fams}
    for f in sorted(fams, key=lambda f: (n[f] - raw[f], fams.index(f)))[:total - sum(n.values())]:
        n[f] += 1
    return n


def catalogue(total: int = DEFAULT_TOTAL) -> List[str]:
    """Names of the catalogue: seeds 0..n-1 of each family, families in FAMILY_WEIGHTS order."""
    return [name_of(f, s) for f, n in counts(total).items() for s in range(n)]


# ---------------------------------------------------------------------------------------------------
# Drawing
# ---------------------------------------------------------------------------------------------------
class Draw:
    """The random choices of one sample: a random.Random keyed by a string (stable across runs and
    machines; Python's string seeding hashes with SHA-512, not with the per-process hash)."""

    def __init__(self, key: str):
        self.r = random.Random(key)

    def u(self) -> float:
        return self.r.random()

    def coin(self, p: float) -> bool:
        return self.r.random() < p

    def int(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)

    def pick(self, items: Sequence, weights: Optional[Sequence[float]] = None):
        return self.r.choices(list(items), weights=weights)[0]

    def logu(self, lo: float, hi: float) -> float:
        return math.exp(self.r.uniform(math.log(lo), math.log(hi)))


def _ch(x: float, align: int, lo: int = 2) -> int:
    """A channel count near x, a multiple of `align` (1: any integer), at least lo."""
    if align <= 1:
        return max(lo, int(round(x)))
    return max(align * max(1, -(-lo // align)), align * int(round(x / align)))


def _shift(values: Sequence[int], i: int, shift: int) -> int:
    return values[min(len(values) - 1, max(0, i + shift))]


ACTS = ("relu", "relu6", "gelu", "silu", "mish", "hardswish", "prelu")
ACT_WEIGHTS = (0.30, 0.10, 0.15, 0.15, 0.10, 0.10, 0.10)
INPLACE_OK = ("relu", "relu6", "silu", "hardswish", "mish")


def make_act(name: str, ch: int = 1, inplace: bool = False) -> nn.Module:
    if name == "prelu":
        return nn.PReLU(ch)
    cls = {"relu": nn.ReLU, "relu6": nn.ReLU6, "gelu": nn.GELU, "silu": nn.SiLU, "mish": nn.Mish,
           "hardswish": nn.Hardswish}[name]
    return cls(inplace=True) if inplace and name in INPLACE_OK else cls()


# ---------------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------------
class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of a [B, C, H, W] map (ConvNeXt's), through channels-last."""

    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class RMSNorm(nn.Module):
    """x / rms(x) * weight over the last axis (LLaMA's)."""

    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Affine(nn.Module):
    """ResMLP's normalisation: alpha * x + beta per channel."""

    def __init__(self, d: int):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(d))
        self.beta = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        return self.alpha * x + self.beta


def _gn_groups(c: int, target: int) -> int:
    """The divisor of c nearest to `target` (GroupNorm groups), ties to the larger."""
    divs = [g for g in range(1, min(c, 64) + 1) if c % g == 0]
    return min(divs, key=lambda g: (abs(math.log(g / target)), -g))


def make_norm2d(kind: str, c: int, gn_target: int = 8) -> nn.Module:
    if kind == "bn":
        return nn.BatchNorm2d(c)
    if kind == "gn":
        return nn.GroupNorm(_gn_groups(c, gn_target), c)
    if kind == "ln":
        return LayerNorm2d(c)
    return nn.Identity()


def conv_unit(cin, cout, k, stride, a, groups=1, dil=1, act=True, norm=True) -> nn.Sequential:
    """Conv, norm, activation under the network's choices `a` (norm, act, inplace, gn)."""
    has_norm = norm and a["norm"] != "none"
    layers: List[nn.Module] = [nn.Conv2d(cin, cout, k, stride, dil * (k - 1) // 2, dilation=dil, groups=groups,
                                         bias=not has_norm)]
    if has_norm:
        layers.append(make_norm2d(a["norm"], cout, a["gn"]))
    if act:
        layers.append(make_act(a["act"], cout, a["inplace"] and has_norm))
    return nn.Sequential(*layers)


def _pool(kind: str) -> nn.Module:
    # k 3, stride 2, pad 1 gives ceil(s / 2), as a stride-2 conv with an odd kernel does.
    return nn.MaxPool2d(3, 2, 1) if kind == "max" else nn.AvgPool2d(3, 2, 1)


class SE(nn.Module):
    """Squeeze-excitation: global average, 1x1 reduce, activation, 1x1 expand, gate, scale."""

    def __init__(self, c: int, ratio: int, act: str, gate: str):
        super().__init__()
        r = max(2, c // ratio)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(c, r, 1)
        self.act = make_act(act, r)
        self.fc2 = nn.Conv2d(r, c, 1)
        self.gate = nn.Sigmoid() if gate == "sigmoid" else nn.Hardsigmoid()

    def forward(self, x):
        return x * self.gate(self.fc2(self.act(self.fc1(self.pool(x)))))


def kxk(cin, cout, k, stride, a, conv, groups, dil, act=True):
    """The block's spatial conv: dense, grouped (groups dividing both sides) or separable (dw + pw)."""
    if conv == "separable":
        return nn.Sequential(conv_unit(cin, cin, k, stride, a, groups=cin, dil=dil, act=False),
                             conv_unit(cin, cout, 1, 1, a, act=act))
    g = math.gcd(math.gcd(cin, cout), groups) if conv == "grouped" else 1
    return conv_unit(cin, cout, k, stride, a, groups=g, dil=dil, act=act)


class Block(nn.Module):
    """One CNN block: body (plain / basic / bottleneck / inverted), optional SE, and the skip."""

    def __init__(self, cin, cout, stride, dil, b, a):
        super().__init__()
        t, k = b["type"], b["k"]
        layers: List[nn.Module] = []
        if t == "plain":
            layers.append(kxk(cin, cout, k, stride, a, b["conv"], b["groups"], dil))
            for _ in range(b["convs"] - 1):
                layers.append(kxk(cout, cout, k, 1, a, b["conv"], b["groups"], dil))
            cbody = cout
        elif t == "basic":
            layers += [kxk(cin, cout, k, stride, a, b["conv"], b["groups"], dil),
                       kxk(cout, cout, k, 1, a, b["conv"], b["groups"], dil, act=False)]
            cbody = cout
        elif t == "bottleneck":
            g = max(1, b["groups"])
            mid = max(g, _ch(cout / b["expansion"], a["align"], 2) // g * g)
            layers += [conv_unit(cin, mid, 1, 1, a),
                       conv_unit(mid, mid, k, stride, a, groups=g, dil=dil)]
            if b["se"]:
                layers.append(SE(mid, b["se_ratio"], a["act"], b["se_gate"]))
            layers.append(conv_unit(mid, cout, 1, 1, a, act=False))
            cbody = cout
        else:  # inverted residual
            mid = _ch(cin * b["expansion"], a["align"], 2)
            if b["expansion"] > 1:
                layers.append(conv_unit(cin, mid, 1, 1, a))
            else:
                mid = cin
            layers.append(conv_unit(mid, mid, k, stride, a, groups=mid, dil=dil))
            if b["se"]:
                layers.append(SE(mid, b["se_ratio"], a["act"], b["se_gate"]))
            layers.append(conv_unit(mid, cout, 1, 1, a, act=False))
            cbody = cout
        if b["se"] and t in ("plain", "basic"):
            layers.append(SE(cbody, b["se_ratio"], a["act"], b["se_gate"]))
        self.body = nn.Sequential(*layers)
        skip = b["skip"]
        if t == "inverted":
            skip = "add" if skip != "none" and stride == 1 and cin == cout else "none"
        self.skip = skip
        self.proj = None
        self.post = None
        if skip == "add":
            if stride != 1 or cin != cout:
                self.proj = conv_unit(cin, cout, 1, stride, a, act=False)
            if t in ("basic", "bottleneck"):
                self.post = make_act(a["act"], cout)
        elif skip == "concat":
            if stride != 1:
                self.proj = _pool(b["concat_pool"])
            self.post = conv_unit(cin + cbody, cout, 1, 1, a)
        elif t in ("basic", "bottleneck"):
            self.post = make_act(a["act"], cout)

    def forward(self, x):
        y = self.body(x)
        if self.skip == "add":
            y = y + (x if self.proj is None else self.proj(x))
        elif self.skip == "concat":
            y = torch.cat([x if self.proj is None else self.proj(x), y], dim=1)
        return y if self.post is None else self.post(y)


class DenseLayer(nn.Module):
    """DenseNet layer, pre-activation: norm, act, [1x1 to 4 x growth, norm, act], kxk to growth; concat."""

    def __init__(self, cin, growth, k, dil, bottleneck, a):
        super().__init__()
        layers: List[nn.Module] = []
        if a["norm"] != "none":
            layers.append(make_norm2d(a["norm"], cin, a["gn"]))
        layers.append(make_act(a["act"], cin))
        c = cin
        if bottleneck:
            c = _ch(4 * growth, a["align"], 2)
            layers.append(conv_unit(cin, c, 1, 1, a))
        layers.append(nn.Conv2d(c, growth, k, 1, dil * (k - 1) // 2, dilation=dil, bias=a["norm"] == "none"))
        self.f = nn.Sequential(*layers)

    def forward(self, x):
        return torch.cat([x, self.f(x)], dim=1)


def _downsample_ok(side: int) -> bool:
    # A normalisation in training mode needs more than one value per channel at batch 1: keep maps >= 2.
    return (side + 1) // 2 >= 2


def cnn_stages(cin: int, side: int, st: List[dict], a: dict) -> Tuple[nn.Sequential, int, int]:
    """The stages of the gen_cnn space (also the stems of gen_hybrid). Returns (module, channels, side)."""
    mods: List[nn.Module] = []
    c = cin
    dil = 1
    for s in st:
        down = s["down"]
        if down in ("stride", "max", "avg") and not _downsample_ok(side):
            down = "none"
        if down == "dilate":
            dil = s["dil"]
        if down in ("max", "avg"):
            mods.append(_pool(down))
            side = (side + 1) // 2
        b = s["block"]
        if b["type"] == "dense":
            if down == "stride":
                mods.append(_pool(b["concat_pool"]))
                side = (side + 1) // 2
            for _ in range(s["depth"]):
                mods.append(DenseLayer(c, s["growth"], b["k"], dil, b["bottleneck"], a))
                c += s["growth"]
            cout = s["width"]
            mods.append(conv_unit(c, cout, 1, 1, a))  # transition
            c = cout
            continue
        for i in range(s["depth"]):
            stride = 2 if (i == 0 and down == "stride") else 1
            mods.append(Block(c, s["width"], stride, dil, b, a))
            c = s["width"]
            if stride == 2:
                side = (side + 1) // 2
    return nn.Sequential(*mods), c, side


def _sample_activation(d: Draw) -> dict:
    act = d.pick(ACTS, ACT_WEIGHTS)
    return {"act": act, "inplace": d.coin(0.5)}


def _sample_conv_choices(d: Draw) -> dict:
    a = _sample_activation(d)
    a["norm"] = d.pick(("bn", "gn", "ln", "none"), (0.5, 0.2, 0.15, 0.15))
    a["gn"] = d.pick((1, 2, 4, 8, 16, 32))
    a["align"] = d.pick((1, 4, 8, 16), (0.5, 0.15, 0.2, 0.15))
    return a


def _sample_block(d: Draw, btype: str) -> dict:
    """Every draw is made whatever the block type, so that the choices of one stage do not shift those
    of the next when only the widths change."""
    b = {"type": btype,
         "k": d.pick((1, 3, 5, 7), (0.08, 0.6, 0.2, 0.12)),
         "conv": d.pick(("dense", "grouped", "separable"), (0.6, 0.2, 0.2)),
         "groups": d.pick((2, 3, 4, 8, 16, 32)),
         "convs": d.pick((1, 2), (0.5, 0.5)),
         "skip": d.pick(("add", "concat", "none"), (0.55, 0.2, 0.25)),
         "concat_pool": d.pick(("max", "avg")),
         "se": d.coin(0.25),
         "se_ratio": d.pick((4, 8, 16)),
         "se_gate": d.pick(("sigmoid", "hardsigmoid")),
         "bottleneck": d.coin(0.6)}
    exp_bottleneck = d.pick((2, 4), (0.5, 0.5))
    exp_inverted = d.pick((1, 2, 3, 4, 6), (0.15, 0.15, 0.2, 0.2, 0.3))
    groups_bottleneck = d.pick((1, 1, 2, 4, 8, 32))
    if btype == "bottleneck":
        b["expansion"], b["groups"] = exp_bottleneck, groups_bottleneck
    else:
        b["expansion"] = exp_inverted
    if btype == "inverted" and b["k"] == 1:
        b["k"] = 3
    return b


BLOCK_TYPES = ("plain", "basic", "bottleneck", "inverted", "dense")
BLOCK_WEIGHTS = (0.2, 0.2, 0.2, 0.25, 0.15)


def _sample_stages(d: Draw, wm: float, a: dict, n_stages: int, w0: float) -> List[dict]:
    growth = d.r.uniform(1.2, 2.5)
    one_type = d.coin(0.75)
    btype = d.pick(BLOCK_TYPES, BLOCK_WEIGHTS)
    st = []
    for i in range(n_stages):
        own = d.pick(BLOCK_TYPES, BLOCK_WEIGHTS)
        t = btype if one_type else own
        b = _sample_block(d, t)
        down = d.pick(("stride", "max", "avg", "none", "dilate"), (0.55, 0.15, 0.1, 0.1, 0.1))
        if i == 0 and down == "dilate":
            down = "none"
        width = _ch(w0 * wm * growth ** i, a["align"], 4)
        st.append({"down": down, "dil": d.pick((2, 3)), "depth": d.int(1, 4) if t != "dense" else d.int(2, 6),
                   "width": width, "growth": _ch(d.int(6, 48) * wm, 1, 2), "block": b})
    return st


# ---------------------------------------------------------------------------------------------------
# gen_cnn
# ---------------------------------------------------------------------------------------------------
class GenCNN(nn.Module):
    def __init__(self, spec: dict, side: int):
        super().__init__()
        a = spec["a"]
        st = spec["stem"]
        layers: List[nn.Module] = [conv_unit(3, st["width"], st["k"], st["stride"], a)]
        side = (side + st["stride"] - 1) // st["stride"]
        if st["pool"] != "none" and _downsample_ok(side):
            layers.append(_pool(st["pool"]))
            side = (side + 1) // 2
        self.stem = nn.Sequential(*layers)
        self.stages, c, side = cnn_stages(st["width"], side, spec["stages"], a)
        h = spec["head"]
        if h["type"] == "dense":
            self.head = nn.Conv2d(c, h["classes"], 1)
        else:
            hl: List[nn.Module] = [nn.AdaptiveAvgPool2d(1) if h["pool"] == "avg" else nn.AdaptiveMaxPool2d(1),
                                   nn.Flatten()]
            if h["hidden"]:
                hl += [nn.Linear(c, h["hidden"]), make_act(a["act"], h["hidden"])]
                c = h["hidden"]
            if h["dropout"]:
                hl.append(nn.Dropout(h["dropout"]))
            hl.append(nn.Linear(c, h["classes"]))
            self.head = nn.Sequential(*hl)

    def forward(self, x):
        return self.head(self.stages(self.stem(x)))


def _sample_head(d: Draw, wm: float, dense_p: float) -> dict:
    return {"type": "dense" if d.coin(dense_p) else "cls",
            "pool": d.pick(("avg", "max"), (0.8, 0.2)),
            "hidden": _ch(d.int(64, 1024) * wm, 1, 8) if d.coin(0.2) else 0,
            "dropout": d.pick((0.0, 0.1, 0.2, 0.5), (0.6, 0.15, 0.15, 0.1)),
            "classes": d.pick((10, 100, 1000, d.int(2, 1000)), (0.35, 0.2, 0.15, 0.3))}


def sample_cnn(d: Draw, wm: float, shift: int) -> dict:
    side = _shift(IMAGE_SIDES, d.int(1, len(IMAGE_SIDES) - 2), shift)
    a = _sample_conv_choices(d)
    w0 = d.logu(8, 64)
    stem = {"k": d.pick((3, 5, 7), (0.6, 0.15, 0.25)), "stride": d.pick((1, 2), (0.4, 0.6)),
            "pool": d.pick(("none", "max", "avg"), (0.6, 0.3, 0.1)), "width": _ch(w0 * wm, a["align"], 4)}
    n_stages = d.int(1, 5)
    stages = _sample_stages(d, wm, a, n_stages, w0)
    return {"kind": "image", "size": side, "a": a, "stem": stem, "stages": stages,
            "head": _sample_head(d, wm, 0.1)}


# ---------------------------------------------------------------------------------------------------
# Attention (shared by gen_tfm and gen_hybrid)
# ---------------------------------------------------------------------------------------------------
class AttnCore(nn.Module):
    """softmax(q k^T / sqrt(d) [+ causal mask]) v over [B, heads, L, head] tensors (no parameters; a module
    so that the cost estimate sees its matrix products)."""

    def __init__(self, causal: bool, dropout: float):
        super().__init__()
        self.causal = causal
        self.drop = nn.Dropout(dropout) if dropout else None

    def forward(self, q, k, v):
        s = torch.matmul(q, k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
        if self.causal:
            L, S = q.shape[-2], k.shape[-2]
            s = s + torch.triu(torch.full((L, S), float("-inf"), device=q.device), diagonal=1)
        p = torch.softmax(s, dim=-1)
        if self.drop is not None:
            p = self.drop(p)
        return torch.matmul(p, v)


class Attention(nn.Module):
    """Multi-head attention written out: q, k, v projections (one fused Linear for self-attention when
    `fused`), heads x head_dim may differ from the width, output projection."""

    def __init__(self, d, heads, hd, fused, bias, causal, dropout, cross=False):
        super().__init__()
        self.h, self.hd = heads, hd
        inner = heads * hd
        self.fused = fused and not cross
        if self.fused:
            self.qkv = nn.Linear(d, 3 * inner, bias=bias)
        else:
            self.q = nn.Linear(d, inner, bias=bias)
            self.k = nn.Linear(d, inner, bias=bias)
            self.v = nn.Linear(d, inner, bias=bias)
        self.core = AttnCore(causal, dropout)
        self.out = nn.Linear(inner, d, bias=bias)

    def _heads(self, t):
        B, L = t.shape[0], t.shape[1]
        return t.reshape(B, L, self.h, self.hd).transpose(1, 2)

    def forward(self, x, mem=None):
        if self.fused:
            q, k, v = self.qkv(x).chunk(3, dim=-1)
        else:
            src = x if mem is None else mem
            q, k, v = self.q(x), self.k(src), self.v(src)
        o = self.core(self._heads(q), self._heads(k), self._heads(v))
        B, L = x.shape[0], x.shape[1]
        return self.out(o.transpose(1, 2).reshape(B, L, self.h * self.hd))


class MLPBlock(nn.Module):
    """Linear, activation, Linear; or gated (GLU family): Linear to 2 x ff, act(a) * b, Linear."""

    def __init__(self, d, ff, act, gated, dropout, bias=True):
        super().__init__()
        self.gated = gated
        self.fc1 = nn.Linear(d, 2 * ff if gated else ff, bias=bias)
        self.act = make_act(act, 1)
        self.drop = nn.Dropout(dropout) if dropout else None
        self.fc2 = nn.Linear(ff, d, bias=bias)

    def forward(self, x):
        h = self.fc1(x)
        if self.gated:
            a, b = h.chunk(2, dim=-1)
            h = self.act(a) * b
        else:
            h = self.act(h)
        if self.drop is not None:
            h = self.drop(h)
        return self.fc2(h)


def make_norm1d(kind: str, d: int) -> nn.Module:
    return RMSNorm(d) if kind == "rms" else nn.LayerNorm(d)


class TBlock(nn.Module):
    """Transformer block, written out: self-attention, optional cross-attention, MLP; pre- or post-norm."""

    def __init__(self, t: dict, causal: bool, cross: bool):
        super().__init__()
        d = t["d"]
        self.pre = t["pre"]
        self.attn = Attention(d, t["heads"], t["hd"], t["fused"], t["bias"], causal, t["dropout"])
        self.n1 = make_norm1d(t["norm"], d)
        self.cross = Attention(d, t["heads"], t["hd"], False, t["bias"], False, t["dropout"], cross=True) \
            if cross else None
        self.nc = make_norm1d(t["norm"], d) if cross else None
        self.mlp = MLPBlock(d, t["ff"], t["act"], t["gated"], t["dropout"], t["bias"])
        self.n2 = make_norm1d(t["norm"], d)

    def forward(self, x, mem=None):
        if self.pre:
            x = x + self.attn(self.n1(x))
            if self.cross is not None:
                x = x + self.cross(self.nc(x), mem)
            return x + self.mlp(self.n2(x))
        x = self.n1(x + self.attn(x))
        if self.cross is not None:
            x = self.nc(x + self.cross(x, mem))
        return self.n2(x + self.mlp(x))


class TorchLayers(nn.Module):
    """nn.TransformerEncoderLayer / DecoderLayer stacks (the fused nn.MultiheadAttention path)."""

    def __init__(self, t: dict, n: int, decoder: bool):
        super().__init__()
        act = "gelu" if t["act"] == "gelu" else "relu"
        cls = nn.TransformerDecoderLayer if decoder else nn.TransformerEncoderLayer
        self.layers = nn.ModuleList([cls(t["d"], t["heads"], t["ff"], t["dropout"], activation=act,
                                         batch_first=True, norm_first=t["pre"]) for _ in range(n)])
        self.decoder = decoder

    def forward(self, x, mem=None, mask=None):
        for layer in self.layers:
            if self.decoder:
                x = layer(x, mem, tgt_mask=mask)
            else:
                x = layer(x, src_mask=mask)
        return x


def _causal_mask(L: int, device) -> torch.Tensor:
    return torch.triu(torch.full((L, L), float("-inf"), device=device), diagonal=1)


class Stack(nn.Module):
    """n transformer blocks of either implementation, with the final norm of pre-norm stacks."""

    def __init__(self, t: dict, n: int, causal: bool, cross: bool):
        super().__init__()
        self.torch = t["impl"] == "torch"
        self.causal = causal
        if self.torch:
            self.blocks = TorchLayers(t, n, cross)
        else:
            self.blocks = nn.ModuleList([TBlock(t, causal, cross) for _ in range(n)])
        self.norm = make_norm1d(t["norm"] if not self.torch else "ln", t["d"]) if t["pre"] else None

    def forward(self, x, mem=None):
        if self.torch:
            mask = _causal_mask(x.shape[1], x.device) if self.causal else None
            x = self.blocks(x, mem, mask)
        else:
            for b in self.blocks:
                x = b(x, mem)
        return x if self.norm is None else self.norm(x)


def _sinusoid(L: int, d: int) -> torch.Tensor:
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    i = torch.arange(d, dtype=torch.float32)[None, :]
    ang = pos / torch.pow(10000.0, (2 * torch.div(i, 2, rounding_mode="floor")) / d)
    return torch.where(i.long() % 2 == 0, torch.sin(ang), torch.cos(ang))


def _sample_tfm_dims(d: Draw, wm: float, torch_ok: bool) -> dict:
    heads = d.pick((1, 2, 3, 4, 6, 8, 12, 16), (0.05, 0.15, 0.1, 0.25, 0.1, 0.2, 0.1, 0.05))
    hd0 = d.pick((8, 12, 16, 20, 24, 32, 40, 48, 64, 80))
    hd = max(4, int(round(hd0 * wm)))
    impl = d.pick(("torch", "custom"), (0.4, 0.6)) if torch_ok else "custom"
    t = {"heads": heads, "hd": hd, "d": heads * hd, "impl": impl,
         "ratio": d.pick((1, 1.5, 2, 2.5, 3, 4, 6), (0.05, 0.05, 0.2, 0.05, 0.15, 0.45, 0.05)),
         "pre": d.coin(0.6), "norm": d.pick(("ln", "rms"), (0.75, 0.25)),
         "act": d.pick(("gelu", "relu", "silu", "gelu", "mish", "hardswish", "relu6")),
         "gated": d.coin(0.25), "fused": d.coin(0.5), "bias": d.coin(0.8),
         "dropout": d.pick((0.0, 0.1), (0.4, 0.6))}
    # The custom width need not be heads x head size (as in T5): sometimes a width of its own.
    if impl == "custom" and d.coin(0.3):
        t["d"] = max(8, int(round(t["d"] * d.r.uniform(0.6, 1.6))))
    else:
        d.r.uniform(0.6, 1.6)
    if impl == "torch":
        t["gated"] = False
        t["norm"] = "ln"
        if t["act"] not in ("gelu", "relu"):
            t["act"] = "relu"
    t["ff"] = max(4, int(round(t["d"] * t["ratio"])))
    return t


# ---------------------------------------------------------------------------------------------------
# gen_tfm
# ---------------------------------------------------------------------------------------------------
class GenTransformer(nn.Module):
    def __init__(self, spec: dict, L: int):
        super().__init__()
        t, v = spec["t"], spec["variant"]
        self.variant = v
        dm = t["d"]
        self.tok = nn.Embedding(TOKEN_VOCAB, dm)
        self.pos_kind = spec["pos"]
        extra = 1 if spec["pool"] == "cls" and v == "enc_cls" else 0
        if self.pos_kind == "learned":
            self.pos = nn.Embedding(L + extra, dm)
        elif self.pos_kind == "sin":
            self.register_buffer("pos_table", _sinusoid(L + extra, dm))
        self.cls = nn.Parameter(torch.zeros(1, 1, dm)) if extra else None
        self.emb_drop = nn.Dropout(t["dropout"]) if t["dropout"] else None
        self.pool = spec["pool"]
        if v == "enc_dec":
            self.enc = Stack(t, spec["depth"], False, False)
            self.dec = Stack(t, spec["dec_depth"], True, True)
        else:
            self.enc = Stack(t, spec["depth"], v == "dec_lm", False)
        self.head = nn.Linear(dm, spec["out"])

    def _embed(self, x):
        h = self.tok(x)
        if self.cls is not None:
            h = torch.cat([self.cls.expand(x.shape[0], -1, -1), h], dim=1)
        L = h.shape[1]
        if self.pos_kind == "learned":
            h = h + self.pos(torch.arange(L, device=x.device))
        elif self.pos_kind == "sin":
            h = h + self.pos_table[:L]
        return h if self.emb_drop is None else self.emb_drop(h)

    def forward(self, x):
        if self.variant == "enc_dec":
            mem = self.enc(self._embed(x))
            y = self.dec(self._embed(F.pad(x[:, :-1], (1, 0))), mem)
            return self.head(y)
        h = self.enc(self._embed(x))
        if self.variant == "enc_cls":
            if self.pool == "cls":
                h = h[:, 0]
            elif self.pool == "max":
                h = h.amax(dim=1)
            else:
                h = h.mean(dim=1)
        return self.head(h)


def sample_tfm(d: Draw, wm: float, shift: int) -> dict:
    L = _shift(SEQ_LENGTHS, d.int(0, len(SEQ_LENGTHS) - 2), shift)
    variant = d.pick(("enc_cls", "dec_lm", "enc_dec", "tagger"), (0.35, 0.3, 0.15, 0.2))
    t = _sample_tfm_dims(d, wm, True)
    depth = d.int(1, 12)
    dec_depth = d.int(1, 6)
    if variant == "enc_dec":
        depth = max(1, depth // 2)
    out = {"enc_cls": d.pick((2, 10, 100, 1000)), "dec_lm": d.pick((TOKEN_VOCAB, 1000, 256, 4000)),
           "enc_dec": d.pick((TOKEN_VOCAB, 1000, 256)), "tagger": d.pick((5, 17, 32, 64))}[variant]
    return {"kind": "tokens", "size": L, "variant": variant, "t": t, "depth": depth, "dec_depth": dec_depth,
            "pos": d.pick(("learned", "sin", "none"), (0.6, 0.3, 0.1)),
            "pool": d.pick(("mean", "max", "cls"), (0.5, 0.15, 0.35)), "out": out}


# ---------------------------------------------------------------------------------------------------
# gen_mlp
# ---------------------------------------------------------------------------------------------------
class ResLinear(nn.Module):
    def __init__(self, w, act, norm, dropout):
        super().__init__()
        self.f = nn.Sequential(*([nn.LayerNorm(w)] if norm == "ln" else []), nn.Linear(w, w), make_act(act, w),
                               *([nn.Dropout(dropout)] if dropout else []), nn.Linear(w, w))

    def forward(self, x):
        return x + self.f(x)


class TokenBag(nn.Module):
    """Token ids to one vector: embedding then the mean over the sequence, or the sequence flattened."""

    def __init__(self, emb: int, mode: str):
        super().__init__()
        self.emb = nn.Embedding(TOKEN_VOCAB, emb)
        self.mode = mode

    def forward(self, x):
        e = self.emb(x)
        return e.mean(dim=1) if self.mode == "mean" else e.flatten(1)


class GenMLP(nn.Module):
    def __init__(self, spec: dict, size: int):
        super().__init__()
        m = spec["m"]
        if spec["kind"] == "image":
            layers: List[nn.Module] = [nn.Flatten()]
            din = 3 * size * size
        else:
            layers = [TokenBag(m["emb"], m["bag"])]
            din = m["emb"] * (1 if m["bag"] == "mean" else size)
        for i, w in enumerate(m["widths"]):
            if m["residual"] and i > 0 and w == m["widths"][i - 1]:
                layers.append(ResLinear(w, m["act"], m["norm"], m["dropout"]))
                continue
            layers.append(nn.Linear(din, w, bias=m["norm"] == "none"))
            if m["norm"] == "ln":
                layers.append(nn.LayerNorm(w))
            layers.append(make_act(m["act"], w, m["inplace"]))
            if m["dropout"]:
                layers.append(nn.Dropout(m["dropout"]))
            din = w
        layers.append(nn.Linear(din, m["classes"]))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def sample_mlp(d: Draw, wm: float, shift: int) -> dict:
    tokens = d.coin(0.3)
    side = _shift((8, 12, 16, 20, 24, 32, 40, 48, 64), d.int(0, 8), shift)
    L = _shift(SEQ_LENGTHS[:9], d.int(0, 8), shift)
    a = _sample_activation(d)
    align = d.pick((1, 8, 16), (0.6, 0.2, 0.2))
    depth = d.int(1, 8)
    shape = d.pick(("constant", "funnel", "diamond"))
    w = d.logu(32, 1536) * wm
    widths = []
    for i in range(depth):
        f = 1.0 if shape == "constant" else (0.6 ** i if shape == "funnel" else
                                             (1.6 ** min(i, depth - 1 - i)))
        widths.append(min(8192, _ch(w * f, align, 4)))
    m = {"widths": widths, "act": a["act"], "inplace": a["inplace"],
         "norm": d.pick(("none", "ln"), (0.6, 0.4)),
         "dropout": d.pick((0.0, 0.1, 0.3), (0.5, 0.3, 0.2)), "residual": shape == "constant" and d.coin(0.5),
         "classes": d.pick((10, 100, 1000, d.int(2, 500))), "emb": _ch(d.logu(8, 256) * wm ** 0.5, 1, 4),
         "bag": d.pick(("mean", "flatten"))}
    return {"kind": "tokens" if tokens else "image", "size": L if tokens else side, "m": m}


# ---------------------------------------------------------------------------------------------------
# gen_mixer
# ---------------------------------------------------------------------------------------------------
class MixerBlock(nn.Module):
    def __init__(self, tokens, dim, tok_hidden, ch_hidden, act, norm):
        super().__init__()
        self.n1 = Affine(dim) if norm == "affine" else nn.LayerNorm(dim)
        self.tok = MLPBlock(tokens, tok_hidden, act, False, 0.0)
        self.n2 = Affine(dim) if norm == "affine" else nn.LayerNorm(dim)
        self.ch = MLPBlock(dim, ch_hidden, act, False, 0.0)

    def forward(self, x):
        x = x + self.tok(self.n1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.ch(self.n2(x))


class ResMLPBlock(nn.Module):
    """ResMLP: affine norm, one Linear across tokens, layer scale; channel MLP."""

    def __init__(self, tokens, dim, ch_hidden, act):
        super().__init__()
        self.n1, self.n2 = Affine(dim), Affine(dim)
        self.tok = nn.Linear(tokens, tokens)
        self.ch = MLPBlock(dim, ch_hidden, act, False, 0.0)
        self.s1 = nn.Parameter(torch.full((dim,), 0.1))
        self.s2 = nn.Parameter(torch.full((dim,), 0.1))

    def forward(self, x):
        x = x + self.s1 * self.tok(self.n1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.s2 * self.ch(self.n2(x))


class GMLPBlock(nn.Module):
    """gMLP: LayerNorm, Linear to 2 x ff, spatial gating (LayerNorm, Linear across tokens), Linear back."""

    def __init__(self, tokens, dim, ff, act):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.proj_in = nn.Linear(dim, 2 * ff)
        self.act = make_act(act, 1)
        self.sgu_norm = nn.LayerNorm(ff)
        self.spatial = nn.Linear(tokens, tokens)
        self.proj_out = nn.Linear(ff, dim)

    def forward(self, x):
        u, v = self.act(self.proj_in(self.norm(x))).chunk(2, dim=-1)
        v = self.spatial(self.sgu_norm(v).transpose(1, 2)).transpose(1, 2)
        return x + self.proj_out(u * v)


class PoolBlock(nn.Module):
    """PoolFormer on the [B, C, H, W] map: GroupNorm(1), avg pool minus identity; GroupNorm(1), 1x1 MLP."""

    def __init__(self, dim, hidden, act, k):
        super().__init__()
        self.n1 = nn.GroupNorm(1, dim)
        self.pool = nn.AvgPool2d(k, 1, k // 2, count_include_pad=False)
        self.n2 = nn.GroupNorm(1, dim)
        self.mlp = nn.Sequential(nn.Conv2d(dim, hidden, 1), make_act(act, hidden), nn.Conv2d(hidden, dim, 1))

    def forward(self, x):
        y = self.n1(x)
        x = x + (self.pool(y) - y)
        return x + self.mlp(self.n2(x))


class ConvMixerBlock(nn.Module):
    def __init__(self, dim, k, act, norm):
        super().__init__()
        a = {"norm": norm, "act": act, "inplace": False, "gn": 8}
        self.dw = conv_unit(dim, dim, k, 1, a, groups=dim)
        self.pw = conv_unit(dim, dim, 1, 1, a)

    def forward(self, x):
        return self.pw(x + self.dw(x))


class GenMixer(nn.Module):
    def __init__(self, spec: dict, size: int):
        super().__init__()
        x = spec["x"]
        p, dim = x["patch"], x["dim"]
        self.variant = x["variant"]
        self.stem = nn.Conv2d(3, dim, p, stride=p)
        side = size // p
        tokens = side * side
        if self.variant == "mixer":
            blocks = [MixerBlock(tokens, dim, max(2, int(tokens * x["tok_ratio"])), int(dim * x["ratio"]),
                                 x["act"], x["norm"]) for _ in range(x["depth"])]
        elif self.variant == "resmlp":
            blocks = [ResMLPBlock(tokens, dim, int(dim * x["ratio"]), x["act"]) for _ in range(x["depth"])]
        elif self.variant == "gmlp":
            blocks = [GMLPBlock(tokens, dim, int(dim * x["ratio"] / 2) + 1, x["act"]) for _ in range(x["depth"])]
        elif self.variant == "pool":
            blocks = [PoolBlock(dim, int(dim * x["ratio"]), x["act"], x["k"]) for _ in range(x["depth"])]
        else:
            blocks = [ConvMixerBlock(dim, x["k"], x["act"], x["cnorm"]) for _ in range(x["depth"])]
        self.blocks = nn.Sequential(*blocks)
        self.norm = nn.LayerNorm(dim) if self.variant in ("mixer", "gmlp") else None
        self.head = nn.Linear(dim, x["classes"])

    def forward(self, inp):
        h = self.stem(inp)
        if self.variant in ("pool", "convmixer"):
            return self.head(self.blocks(h).mean(dim=(2, 3)))
        h = self.blocks(h.flatten(2).transpose(1, 2))
        if self.norm is not None:
            h = self.norm(h)
        return self.head(h.mean(dim=1))


def sample_mixer(d: Draw, wm: float, shift: int) -> dict:
    size = _shift((32, 48, 64, 96, 112, 128, 160, 192, 224), d.int(0, 7), shift)
    variant = d.pick(("mixer", "gmlp", "resmlp", "pool", "convmixer"), (0.3, 0.2, 0.15, 0.15, 0.2))
    patch = d.pick((2, 4, 7, 8, 14, 16))
    while (size // patch) ** 2 > 1024 and patch < 32:
        patch *= 2
    while size // patch < 2:
        patch //= 2
    x = {"variant": variant, "patch": patch, "dim": _ch(d.logu(24, 384) * wm, d.pick((1, 8, 16), (0.5, 0.25, 0.25)), 8),
         "depth": d.int(1, 12), "ratio": d.pick((1, 2, 3, 4), (0.15, 0.3, 0.15, 0.4)),
         "tok_ratio": d.pick((0.25, 0.5, 1.0, 2.0)), "act": d.pick(("gelu", "relu", "silu", "mish", "hardswish"),
                                                                 (0.5, 0.15, 0.15, 0.1, 0.1)),
         "norm": d.pick(("ln", "affine"), (0.8, 0.2)), "k": d.pick((3, 5, 7, 9)),
         "cnorm": d.pick(("bn", "gn", "ln", "none"), (0.6, 0.15, 0.15, 0.1)),
         "classes": d.pick((10, 100, 1000))}
    return {"kind": "image", "size": size, "x": x}


# ---------------------------------------------------------------------------------------------------
# gen_rnn
# ---------------------------------------------------------------------------------------------------
class GenRNN(nn.Module):
    def __init__(self, spec: dict, L: int):
        super().__init__()
        r = spec["r"]
        self.r = r
        self.emb = nn.Embedding(TOKEN_VOCAB, r["emb"])
        cin = r["emb"]
        if r["front"]:
            k = r["front_k"]
            self.front = nn.Sequential(nn.Conv1d(cin, r["front_ch"], k, padding=k // 2),
                                       make_act(r["act"], r["front_ch"]))
            cin = r["front_ch"]
        else:
            self.front = None
        cls = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[r["cell"]]
        kw = {"nonlinearity": r["nonlin"]} if r["cell"] == "rnn" else {}
        dirs = 2 if r["bidir"] else 1
        H = r["hidden"]
        if r["stack"] == "fused":
            self.rnns = nn.ModuleList([cls(cin, H, num_layers=r["layers"], batch_first=True,
                                           bidirectional=r["bidir"], **kw)])
            self.between = None
        else:
            self.rnns = nn.ModuleList([cls(cin if i == 0 else H * dirs, H, batch_first=True, bidirectional=r["bidir"],
                                           **kw) for i in range(r["layers"])])
            bt = r["between"]
            self.between = nn.ModuleList([nn.LayerNorm(H * dirs) if bt == "ln" else nn.Dropout(0.2)
                                          for _ in range(r["layers"] - 1)]) if bt in ("ln", "dropout") else None
        self.residual = r["stack"] == "separate" and r["between"] == "residual"
        self.head_kind = r["head"]
        out = {"last": r["classes"], "mean": r["classes"], "max": r["classes"], "tag": r["tags"],
               "lm": r["vocab_out"]}[r["head"]]
        self.head = nn.Linear(H * dirs if r["head"] != "last" else H, out)

    def forward(self, x):
        h = self.emb(x)
        if self.front is not None:
            h = self.front(h.transpose(1, 2)).transpose(1, 2)
        hn = None
        for i, rnn in enumerate(self.rnns):
            y, hn = rnn(h)
            if self.residual and i > 0:
                y = y + h
            if self.between is not None and i < len(self.rnns) - 1:
                y = self.between[i](y)
            h = y
        if self.head_kind == "last":
            if isinstance(hn, tuple):
                hn = hn[0]
            return self.head(hn[-1])
        if self.head_kind == "mean":
            return self.head(h.mean(dim=1))
        if self.head_kind == "max":
            return self.head(h.amax(dim=1))
        return self.head(h)


def sample_rnn(d: Draw, wm: float, shift: int) -> dict:
    L = _shift(SEQ_LENGTHS, d.int(0, len(SEQ_LENGTHS) - 2), shift)
    align = d.pick((1, 8, 16), (0.6, 0.2, 0.2))
    r = {"cell": d.pick(("lstm", "gru", "rnn"), (0.45, 0.4, 0.15)), "nonlin": d.pick(("tanh", "relu"), (0.7, 0.3)),
         "emb": _ch(d.logu(16, 512) * wm, align, 4), "hidden": _ch(d.logu(16, 768) * wm, align, 4),
         "layers": d.pick((1, 2, 3, 4), (0.35, 0.35, 0.2, 0.1)), "bidir": d.coin(0.35),
         "stack": d.pick(("fused", "separate"), (0.6, 0.4)),
         "between": d.pick(("none", "ln", "dropout", "residual")),
         "front": d.coin(0.2), "front_k": d.pick((3, 5)), "front_ch": _ch(d.logu(32, 256) * wm, align, 4),
         "act": d.pick(ACTS, ACT_WEIGHTS),
         "head": d.pick(("last", "mean", "max", "tag", "lm"), (0.25, 0.2, 0.1, 0.25, 0.2)),
         "classes": d.pick((2, 4, 10, 100)), "tags": d.pick((8, 17, 32, 50)),
         "vocab_out": d.pick((TOKEN_VOCAB, 1000, 256))}
    if r["stack"] == "separate" and r["between"] == "residual" and r["layers"] > 1:
        pass  # layers after the first see H * dirs in and give H * dirs out: the sum is well formed
    return {"kind": "tokens", "size": L, "r": r}


# ---------------------------------------------------------------------------------------------------
# gen_hybrid
# ---------------------------------------------------------------------------------------------------
class MobileViTBlock(nn.Module):
    """Local kxk conv, 1x1 to the attention width, the map's pixels as tokens through transformer blocks,
    back to a map, 1x1 to the channels, concat with the input and a kxk fuse."""

    def __init__(self, c: int, t: dict, depth: int, k: int, a: dict):
        super().__init__()
        self.local = conv_unit(c, c, k, 1, a)
        self.proj_in = nn.Conv2d(c, t["d"], 1, bias=False)
        self.tf = Stack(t, depth, False, False)
        self.proj_out = conv_unit(t["d"], c, 1, 1, a)
        self.fuse = conv_unit(2 * c, c, k, 1, a)

    def forward(self, x):
        h = self.proj_in(self.local(x))
        B, D, H, W = h.shape
        h = self.tf(h.flatten(2).transpose(1, 2))
        h = h.transpose(1, 2).reshape(B, D, H, W)
        return self.fuse(torch.cat([x, self.proj_out(h)], dim=1))


class GenHybrid(nn.Module):
    def __init__(self, spec: dict, size: int):
        super().__init__()
        a, st, t = spec["a"], spec["stem"], spec["t"]
        self.variant = spec["variant"]
        layers: List[nn.Module] = [conv_unit(3, st["width"], st["k"], st["stride"], a)]
        side = (size + st["stride"] - 1) // st["stride"]
        self.stem = nn.Sequential(*layers)
        self.stages, c, side = cnn_stages(st["width"], side, spec["stages"], a)
        if self.variant == "vit":
            self.proj = nn.Conv2d(c, t["d"], spec["patch"], stride=spec["patch"])
            side = side // spec["patch"]
            self.cls = nn.Parameter(torch.zeros(1, 1, t["d"])) if spec["pool"] == "cls" else None
            self.pos = nn.Parameter(torch.zeros(1, side * side + (self.cls is not None), t["d"]))
            self.tf = Stack(t, spec["depth"], False, False)
            c = t["d"]
        else:
            # Global attention over the map's pixels: pooled to at most 28 a side (784 tokens) first.
            pools: List[nn.Module] = []
            while side > 28:
                pools.append(nn.AvgPool2d(2))
                side //= 2
            self.mvit = nn.Sequential(*pools, *[MobileViTBlock(c, t, spec["depth"], spec["k"], a)
                                                for _ in range(spec["mvit_blocks"])])
        self.head = nn.Linear(c, spec["classes"])

    def forward(self, x):
        h = self.stages(self.stem(x))
        if self.variant == "vit":
            h = self.proj(h).flatten(2).transpose(1, 2)
            if self.cls is not None:
                h = torch.cat([self.cls.expand(h.shape[0], -1, -1), h], dim=1)
            h = self.tf(h + self.pos)
            return self.head(h[:, 0] if self.cls is not None else h.mean(dim=1))
        return self.head(self.mvit(h).mean(dim=(2, 3)))


def sample_hybrid(d: Draw, wm: float, shift: int) -> dict:
    size = _shift((32, 48, 64, 96, 112, 128, 160, 192, 224), d.int(0, 7), shift)
    a = _sample_conv_choices(d)
    w0 = d.logu(8, 48)
    stem = {"k": d.pick((3, 5, 7), (0.6, 0.15, 0.25)), "stride": d.pick((1, 2), (0.3, 0.7)),
            "width": _ch(w0 * wm, a["align"], 4)}
    n_stages = d.int(1, 3)
    stages = _sample_stages(d, wm, a, n_stages, w0)
    for s in stages:
        if s["down"] in ("none", "dilate"):
            s["down"] = "stride"
    t = _sample_tfm_dims(d, wm, True)
    variant = d.pick(("vit", "mobilevit"), (0.6, 0.4))
    # The map the attention sees: at most 28 a side (784 tokens), at least 3.
    side = (size + stem["stride"] - 1) // stem["stride"]
    for s in stages:
        if _downsample_ok(side):
            side = (side + 1) // 2
    patch = 1
    while side // patch > 28:
        patch *= 2
    return {"kind": "image", "size": size, "a": a, "stem": stem, "stages": stages, "t": t, "variant": variant,
            "patch": patch, "depth": d.int(1, 6), "pool": d.pick(("mean", "cls")), "k": d.pick((3, 5)),
            "mvit_blocks": d.int(1, 2), "classes": d.pick((10, 100, 1000))}


# ---------------------------------------------------------------------------------------------------
# Families
# ---------------------------------------------------------------------------------------------------
SAMPLERS = {"gen_cnn": sample_cnn, "gen_tfm": sample_tfm, "gen_mlp": sample_mlp, "gen_mixer": sample_mixer,
            "gen_rnn": sample_rnn, "gen_hybrid": sample_hybrid}
BUILDERS = {"gen_cnn": GenCNN, "gen_tfm": GenTransformer, "gen_mlp": GenMLP, "gen_mixer": GenMixer,
            "gen_rnn": GenRNN, "gen_hybrid": GenHybrid}


def build(spec: dict, size: Optional[int] = None) -> nn.Module:
    """The module of a spec, at its input size (or another one: image networks with global pooling and
    the recurrent ones take other sizes; mixers and learned positions are made for the size given)."""
    return BUILDERS[spec["family"]](spec, int(size if size is not None else spec["size"]))


def make_input(spec: dict, batch: int, size: Optional[int] = None) -> torch.Tensor:
    s = int(size if size is not None else spec["size"])
    if spec["kind"] == "image":
        return torch.randn(batch, 3, s, s)
    return torch.randint(0, TOKEN_VOCAB, (batch, s))


# ---------------------------------------------------------------------------------------------------
# Cost estimate
# ---------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _no_init():
    """Module constructors without weight initialisation (empty tensors): the estimate needs shapes only."""
    names = ("uniform_", "normal_", "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_", "xavier_normal_",
             "constant_", "zeros_", "ones_", "trunc_normal_", "orthogonal_")
    saved = {n: getattr(nn.init, n) for n in names if hasattr(nn.init, n)}
    try:
        for n in saved:
            setattr(nn.init, n, lambda t, *a, **k: t)
        yield
    finally:
        for n, f in saved.items():
            setattr(nn.init, n, f)


def _numel(t) -> int:
    if isinstance(t, torch.Tensor):
        return t.numel()
    if isinstance(t, (tuple, list)):
        return sum(_numel(x) for x in t)
    return 0


def _flops(m: nn.Module, inp, out) -> Tuple[str, float, int, float]:
    """(category, forward FLOPs, recurrent steps, recurrent weight bytes streamed) of one call of a leaf
    module (or MultiheadAttention). Each recurrent step reads the layer's weights again whatever the
    batch: at small batches that, not the FLOPs, sets an LSTM's speed."""
    if isinstance(m, (nn.Conv1d, nn.Conv2d)):
        k = 1
        for v in m.kernel_size:
            k *= v
        f = 2.0 * out.numel() * (m.in_channels // m.groups) * k
        cat = "dw" if m.groups == m.in_channels and m.groups > 1 else ("grouped" if m.groups > 1 else "dense")
        return cat, f, 0, 0.0
    if isinstance(m, nn.Linear):
        return "dense", 2.0 * out.numel() * m.in_features, 0, 0.0
    if isinstance(m, (nn.LSTM, nn.GRU, nn.RNN)):
        x = inp[0]
        B, L = (x.shape[0], x.shape[1]) if m.batch_first else (x.shape[1], x.shape[0])
        G = 4 if isinstance(m, nn.LSTM) else (3 if isinstance(m, nn.GRU) else 1)
        dirs = 2 if m.bidirectional else 1
        H = m.hidden_size
        f = w = 0.0
        for layer in range(m.num_layers):
            cin = m.input_size if layer == 0 else H * dirs
            f += 2.0 * G * (cin + H) * H * L * B * dirs
            w += 4.0 * G * (cin + H) * H * L * dirs
        return "rnn", f, L * m.num_layers * dirs, w
    if isinstance(m, nn.MultiheadAttention):
        q, k = inp[0], inp[1]
        B, Lq, Lk, dm = q.shape[0], q.shape[1], k.shape[1], m.embed_dim
        return "attn", 2.0 * B * (2 * Lq * dm * dm + 2 * Lk * dm * dm) + 4.0 * B * Lq * Lk * dm, 0, 0.0
    if isinstance(m, AttnCore):
        q, k = inp[0], inp[1]
        return "attn", 4.0 * q.shape[0] * q.shape[1] * q.shape[2] * k.shape[2] * q.shape[3], 0, 0.0
    return "elem", 0.0, 0, 0.0


def _is_leaf(m: nn.Module) -> bool:
    return next(m.children(), None) is None or isinstance(m, nn.MultiheadAttention)


def measure_module(model: nn.Module, x: torch.Tensor) -> dict:
    """Shape-derived totals of one forward on the meta device at x's batch: FLOPs per category, bytes
    read and written by leaf modules, module calls, recurrent steps, parameters and parameter tensors."""
    tot = {"dense": 0.0, "grouped": 0.0, "dw": 0.0, "rnn": 0.0, "attn": 0.0, "elem": 0.0, "bytes": 0.0,
           "calls": 0, "steps": 0, "rnn_bytes": 0.0}
    hooks = []

    def hook(m, inp, out):
        if isinstance(m, nn.Identity):
            return
        cat, f, steps, wbytes = _flops(m, inp, out)
        tot[cat] += f
        tot["rnn_bytes"] += wbytes
        tot["bytes"] += 4.0 * (_numel(inp) + _numel(out))
        tot["calls"] += 1
        tot["steps"] += steps

    for mod in model.modules():
        if _is_leaf(mod):
            hooks.append(mod.register_forward_hook(hook))
    try:
        model = model.to("meta")
        with torch.no_grad():
            model(x.to("meta"))
    finally:
        for h in hooks:
            h.remove()
    tot["params"] = sum(p.numel() for p in model.parameters())
    tot["param_tensors"] = sum(1 for _ in model.parameters())
    return tot


# Prices of one training iteration on one thread (seconds per unit of the batch-1 totals), fitted by
# non-negative least squares on relative error to the dataset's 1,930 sgd rows on cpu1 of the AVX-512
# machine (data/dataset.csv, zoo networks at every measured size and batch): forward FLOPs per category
# (the price covers forward and backward), bytes of leaf-module inputs and outputs, recurrent weight bytes
# streamed per step, a dispatch cost per module call and per recurrent step, and the optimizer's pass over
# the parameters and over each parameter tensor. On those rows the estimate is within 0.64x-1.21x of the
# measured time for 80 % of them (median 0.94x); networks whose work is in functional calls that no
# module hook sees (Swin's windows, DLRM's bmm) come out up to 7x fast. A guide for drawing sizes, not a
# predictor.
PRICE = {"dense": 2.3e-11, "grouped": 2.7e-11, "dw": 4.1e-10, "rnn": 3.7e-11, "attn": 7.4e-11,
         "bytes": 2.2e-10, "rnn_bytes": 1.25e-10, "calls": 4.2e-5, "steps": 4.4e-5, "params": 1.3e-9,
         "param_tensors": 2.25e-5}
PER_SAMPLE = ("dense", "grouped", "dw", "rnn", "attn", "bytes")


def _price(t1: dict, batch: int) -> float:
    """Estimated seconds of one iteration at `batch` from the batch-1 totals."""
    s = 0.0
    for k, p in PRICE.items():
        s += p * t1[k] * (batch if k in PER_SAMPLE else 1)
    return s


def estimate(spec: dict, size: Optional[int] = None) -> dict:
    """Batch-1 totals of the spec's module (meta device, no weight data) and the estimated iteration
    seconds at batch 1 and 8."""
    # fork_rng: the few initialisers imported by name (nn.MultiheadAttention's) still draw; put torch's
    # generator back as it was, so that sampling a spec never changes what a later manual_seed-less draw gives.
    with torch.random.fork_rng(devices=[]), _no_init():
        model = build(spec, size)
    s = int(size if size is not None else spec["size"])
    # An input on the meta device, made without drawing from torch's generator.
    x = torch.empty(1, 3, s, s, device="meta") if spec["kind"] == "image" else \
        torch.empty(1, s, dtype=torch.long, device="meta")
    t = measure_module(model, x)
    t["est_b1_s"] = _price(t, 1)
    t["est_b8_s"] = _price(t, 8)
    return t


# ---------------------------------------------------------------------------------------------------
# Sampling with sizes
# ---------------------------------------------------------------------------------------------------
def _sample_sized(family: str, seed: int) -> dict:
    """The spec of (family, seed): structure drawn from the seed, widths (then input size) scaled until
    the estimate is near the drawn target cost; up to 6 fresh draws if no scaling lands in bounds."""
    sampler = SAMPLERS[family]
    for attempt in range(6):
        key = f"{family}:{seed}:{attempt}"
        target = Draw(key + ":target").logu(TARGET_LO_S, TARGET_HI_S)
        wm, shift = 1.0, 0
        best = None
        for _ in range(10):
            spec = sampler(Draw(key), wm, shift)
            spec.update(family=family, seed=seed, attempt=attempt, wm=round(wm, 6), shift=shift)
            try:
                est = estimate(spec)
            except Exception:  # noqa: BLE001 - a structure that does not run at this size: draw again
                break
            b1 = est["est_b1_s"]
            inside = b1 >= MIN_B1_S and est["est_b8_s"] <= MAX_B8_S and est["params"] <= MAX_PARAMS
            miss = abs(math.log(b1 / target))
            if inside and (best is None or miss < best[0]):
                best = (miss, spec, est)
            if inside and miss <= math.log(TOLERANCE):
                break
            ratio = target / b1
            if est["est_b8_s"] > MAX_B8_S:  # the target may lie beyond the batch-8 bound: aim inside it
                ratio = min(ratio, 0.8 * MAX_B8_S / est["est_b8_s"])
            new_wm = min(WM_MAX.get(family, 4.0), max(0.15, wm * ratio ** 0.5))
            if abs(math.log(new_wm / wm)) < 0.05:  # widths at their bounds: change the input size
                step = 1 if ratio > 1 else -1
                if shift * step >= 4:
                    break
                shift += step
            else:
                wm = new_wm
        if best is not None:
            spec, est = best[1], best[2]
            spec["estimate"] = {"flops": int(sum(est[k] for k in ("dense", "grouped", "dw", "rnn", "attn"))),
                                "params": int(est["params"]), "est_b1_s": float(f"{est['est_b1_s']:.4g}"),
                                "est_b8_s": float(f"{est['est_b8_s']:.4g}"), "target_b1_s": float(f"{target:.4g}")}
            return spec
    raise RuntimeError(f"{name_of(family, seed)}: no draw lands in the cost bounds")


@functools.lru_cache(maxsize=4096)
def _spec_json(name: str) -> str:
    p = parse(name)
    if p is None:
        raise KeyError(name)
    return json.dumps(_sample_sized(*p), sort_keys=True)


def spec(name: str) -> dict:
    """The architecture of a generated network, from its name alone (a fresh copy)."""
    return json.loads(_spec_json(name))


_NETS: Dict[str, object] = {}


def net(name: str):
    """The zoo.Net of a generated network (cached): kind, family, its one valid size, build, inputs."""
    if name in _NETS:
        return _NETS[name]
    s = spec(name)
    n = zoo.Net(name, s["kind"], lambda size, _s=s: build(_s, size), family=s["family"],
                vocab=TOKEN_VOCAB if s["kind"] == "tokens" else 0, candidates=(s["size"],))
    _NETS[name] = n
    return n


# ---------------------------------------------------------------------------------------------------
# Catalogue and listing
# ---------------------------------------------------------------------------------------------------
def source_hash() -> str:
    with open(os.path.abspath(__file__).replace(".pyc", ".py"), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def _entry(name: str) -> dict:
    s = spec(name)
    e = s["estimate"]
    return {"kind": s["kind"], "family": s["family"], "size": s["size"], "params": e["params"],
            "flops": e["flops"], "est_b1_s": e["est_b1_s"], "est_b8_s": e["est_b8_s"]}


def _load_catalogue() -> Dict[str, dict]:
    try:
        with open(CATALOGUE_FILE) as f:
            d = json.load(f)
    except (OSError, ValueError):
        return {}
    return d.get("networks", {}) if d.get("source") == source_hash() else {}


def listing(total: int = DEFAULT_TOTAL, log=None) -> List[dict]:
    """The worker's --list lines of the catalogue of `total` (from generated.json when it is current)."""
    cached = _load_catalogue()
    names = catalogue(total)
    missing = [n for n in names if n not in cached]
    if missing and log:
        log(f"generator: sizing {len(missing)} network(s) not in {os.path.basename(CATALOGUE_FILE)} "
            f"(~0.03 s each; `python3 -m collector.generator --write` caches them)")
    out = []
    with torch.no_grad():
        for n in names:
            e = cached.get(n) or _entry(n)
            out.append({"name": n, "kind": e["kind"], "family": e["family"], "channels": 3,
                        "vocab": TOKEN_VOCAB if e["kind"] == "tokens" else 0, "sizes": [int(e["size"])]})
    return out


def write_catalogue(total: int = DEFAULT_TOTAL, path: str = CATALOGUE_FILE, log=print, force: bool = False) -> None:
    """Writes the catalogue's entries. Refuses (ValueError) when a network already in the file would
    change, unless `force`: rows measured under a name must keep meaning the same network."""
    nets = {}
    for i, n in enumerate(catalogue(total)):
        nets[n] = _entry(n)
        if log and (i + 1) % 50 == 0:
            log(f"# {i + 1} sized", flush=True)
    try:
        with open(path) as f:
            old = json.load(f).get("networks", {})
    except (OSError, ValueError):
        old = {}
    changed = [n for n in nets if n in old and old[n] != nets[n]]
    if changed and not force:
        raise ValueError(f"{len(changed)} network(s) would change ({', '.join(changed[:5])}"
                         f"{', ...' if len(changed) > 5 else ''}): rows measured under these names would "
                         "then name other networks. Keep existing specs (add a family or a new draw "
                         "behind a new name) or, if nothing was measured, rewrite with --force")
    lines = ["{", ' "_comment": %s,' % json.dumps(
        "Sizes and cost estimates of the generated networks (collector/generator.py), written by "
        "`/usr/bin/python3 -m collector.generator --write`; used only while `source` is the hash of "
        "generator.py. Generated: rerun rather than editing by hand."),
        ' "source": %s,' % json.dumps(source_hash()), ' "networks": {']
    items = list(nets.items())
    lines += ['  %s: %s%s' % (json.dumps(k), json.dumps(v, sort_keys=True), "," if i + 1 < len(items) else "")
              for i, (k, v) in enumerate(items)]
    lines += [" }", "}"]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--show", nargs="+", metavar="NAME", help="print the specs of these networks as JSON")
    ap.add_argument("--list", action="store_true", help="print the catalogue's --list lines")
    ap.add_argument("--write", action="store_true", help="rewrite collector/generated.json")
    ap.add_argument("--force", action="store_true", help="with --write: also when existing networks change")
    ap.add_argument("--total", type=int, default=DEFAULT_TOTAL, help="networks in the catalogue")
    a = ap.parse_args(argv)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    if a.show:
        for n in a.show:
            if not is_generated(n):
                ap.error(f"{n}: not a generated network's name (gen_<family>_s<6 digits>)")
            print(json.dumps(spec(n), sort_keys=True))
        return 0
    if a.write:
        try:
            write_catalogue(a.total, log=lambda *x, **k: print(*x, file=sys.stderr, **k), force=a.force)
        except ValueError as e:
            print(f"generator: {e}", file=sys.stderr)
            return 1
        return 0
    if a.list:
        for e in listing(a.total, log=lambda m: print(m, file=sys.stderr)):
            print(json.dumps(e))
        return 0
    ap.error("give --show, --list or --write")
    return 2


if __name__ == "__main__":
    sys.exit(main())
