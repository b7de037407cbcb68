"""Abacus network zoo: every network the collector measures and exports.

Each entry of REGISTRY is a `Net`:
  name        unique name (also the graph file stem)
  kind        'image' (input torch.randn(B, C, H, W), H = W = size)
              'tokens' (input torch.randint(0, vocab, (B, L)), L = size)
  build(size) -> nn.Module (random weights, auxiliary heads off)
  channels    input channels (images)
  sizes       valid input sizes (images: among IMAGE_SIZES, tokens: sequence lengths
              among TOKEN_LENGTHS), determined once by running forward + backward at batch 1
              (see `probe`) and cached below as literals in VALID_SIZES
  vocab       vocabulary size (tokens)
  make_input(batch, size) -> the input tensor, per PROTOCOL.md

Usage:
  from collector.zoo import REGISTRY, get
  net = get('resnet18'); m = net.build(224); x = net.make_input(8, 224)

`/usr/bin/python3 collector/zoo.py --probe [names]` re-determines the valid sizes and prints
the VALID_SIZES literal (slow: runs every network at every size).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Dict, List, Optional, Sequence

import torch
import torch.nn as nn
import torchvision
import torchvision.models as tvm
import torchvision.models.segmentation as tvseg

IMAGE_SIZES = (32, 48, 64, 96, 128, 160, 224)
TOKEN_LENGTHS = (32, 64, 128, 256, 512)

# ---------------------------------------------------------------------------------------------
# Valid sizes, determined by `probe` (forward + backward at batch 1, float32, train mode) with
# torch 1.13.1 / torchvision 0.14.1. Generated; do not edit by hand (rerun --probe).
# BEGIN VALID_SIZES
VALID_SIZES: Dict[str, List[int]] = {}
# END VALID_SIZES
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Net:
    name: str
    kind: str  # 'image' | 'tokens'
    build: Callable[[int], nn.Module]
    family: str = ""
    channels: int = 3
    vocab: int = 0
    candidates: Sequence[int] = ()  # sizes that are probed

    @property
    def sizes(self) -> List[int]:
        if self.name in VALID_SIZES:
            return list(VALID_SIZES[self.name])
        return list(self.candidates)

    def make_input(self, batch: int, size: int) -> torch.Tensor:
        if self.kind == "image":
            return torch.randn(batch, self.channels, size, size)
        return torch.randint(0, self.vocab, (batch, size))

    def graph_file(self, size: int) -> str:
        """File name of the exported graph (inside data/graphs/)."""
        if self.kind == "image":
            return f"{self.name}-{size}.onnx"
        return f"{self.name}-L{size}.onnx"


# ---------------------------------------------------------------------------------------------
# Custom (non-torchvision-classifier) networks
# ---------------------------------------------------------------------------------------------
TOKEN_VOCAB = 8192


class TransformerEncoderClassifier(nn.Module):
    """Token embedding + learned positions + nn.TransformerEncoder + mean pool + linear head."""

    def __init__(self, vocab=TOKEN_VOCAB, d_model=256, nhead=4, layers=4, ff=1024,
                 max_len=512, classes=10, dropout=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, ff, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, classes)

    def forward(self, x):
        pos = torch.arange(x.shape[1], device=x.device)
        h = self.tok(x) + self.pos(pos)
        h = self.encoder(h)
        return self.head(self.norm(h).mean(dim=1))


class RNNLM(nn.Module):
    """Embedding + LSTM/GRU + linear over the vocabulary (per-token logits, [B, L, V])."""

    def __init__(self, cell="lstm", vocab=TOKEN_VOCAB, emb=256, hidden=512, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(emb, hidden, num_layers=layers, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h)


class MLP(nn.Module):
    """Image flattened, Linear+ReLU layers, 10 classes."""

    def __init__(self, size, channels=3, widths=(256, 256, 128), classes=10):
        super().__init__()
        layers: List[nn.Module] = [nn.Flatten()]
        d = channels * size * size
        for w in widths:
            layers += [nn.Linear(d, w), nn.ReLU(inplace=True)]
            d = w
        layers.append(nn.Linear(d, classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def _double_conv(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
    )


class UNetSmall(nn.Module):
    """U-Net: 3 down levels (MaxPool), bottleneck, 3 up levels (ConvTranspose2d + skip concat)."""

    def __init__(self, channels=3, base=32, classes=2):
        super().__init__()
        c = [base, base * 2, base * 4, base * 8]
        self.inc = _double_conv(channels, c[0])
        self.down = nn.ModuleList([_double_conv(c[i], c[i + 1]) for i in range(3)])
        self.pool = nn.MaxPool2d(2)
        self.up = nn.ModuleList([nn.ConvTranspose2d(c[i + 1], c[i], 2, stride=2) for i in reversed(range(3))])
        self.dec = nn.ModuleList([_double_conv(c[i] * 2, c[i]) for i in reversed(range(3))])
        self.outc = nn.Conv2d(c[0], classes, 1)

    def forward(self, x):
        skips = [self.inc(x)]
        h = skips[0]
        for d in self.down:
            h = d(self.pool(h))
            skips.append(h)
        skips.pop()  # the bottleneck is h
        for up, dec in zip(self.up, self.dec):
            h = up(h)
            h = dec(torch.cat([skips.pop(), h], dim=1))
        return self.outc(h)


class SegOut(nn.Module):
    """Wrap a torchvision segmentation model whose forward returns a dict: return out['out']."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


# ---------------------------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------------------------
def _family(name: str) -> str:
    for pre in ("efficientnet_v2", "efficientnet", "mobilenet_v3", "mobilenet_v2", "shufflenet_v2",
                "squeezenet", "wide_resnet", "resnext", "resnet", "regnet_x", "regnet_y", "convnext",
                "densenet", "mnasnet", "swin_v2", "swin", "vgg", "vit", "maxvit", "alexnet",
                "googlenet", "inception"):
        if name.startswith(pre):
            return pre
    return name


def _build_tv(name: str, size: int) -> nn.Module:
    fn = getattr(tvm, name)
    kw = {"weights": None}
    if name in ("googlenet", "inception_v3"):
        kw.update(aux_logits=False, init_weights=False)
    if name.startswith("vit_"):
        kw["image_size"] = size
    if name == "maxvit_t":
        kw["input_size"] = (size, size)
    return fn(**kw)


def _tv_classifiers() -> List[str]:
    # torchvision 0.14 has list_models in Debian's build; fall back to scanning the module.
    if hasattr(tvm, "list_models"):
        return sorted(tvm.list_models(module=tvm))
    import inspect
    return sorted(n for n, f in vars(tvm).items()
                  if inspect.isfunction(f) and n[0].islower() and not n.startswith("get_")
                  and n != "list_models")


def _build_lraspp(size: int) -> nn.Module:
    return SegOut(tvseg.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None))


def _make_registry() -> Dict[str, Net]:
    reg: Dict[str, Net] = {}
    for n in _tv_classifiers():
        reg[n] = Net(n, "image", functools.partial(_build_tv, n), family=_family(n),
                     candidates=IMAGE_SIZES)
    custom = [
        Net("transformer_enc", "tokens", lambda L: TransformerEncoderClassifier(),
            family="transformer", vocab=TOKEN_VOCAB, candidates=TOKEN_LENGTHS),
        Net("lstm_lm", "tokens", lambda L: RNNLM("lstm"), family="rnn", vocab=TOKEN_VOCAB,
            candidates=TOKEN_LENGTHS),
        Net("gru_lm", "tokens", lambda L: RNNLM("gru"), family="rnn", vocab=TOKEN_VOCAB,
            candidates=TOKEN_LENGTHS),
        Net("mlp", "image", lambda s: MLP(s), family="mlp", candidates=IMAGE_SIZES),
        Net("unet_small", "image", lambda s: UNetSmall(), family="unet", candidates=IMAGE_SIZES),
        Net("lraspp_mobilenet_v3_large", "image", _build_lraspp, family="segmentation",
            candidates=IMAGE_SIZES),
    ]
    for net in custom:
        reg[net.name] = net
    return reg


REGISTRY: Dict[str, Net] = _make_registry()
NAMES: List[str] = list(REGISTRY)


def get(name: str) -> Net:
    return REGISTRY[name]


def loss_fn(out: torch.Tensor, batch: int):
    """Loss per PROTOCOL.md: CrossEntropy for [B, classes] outputs, MSE vs zeros otherwise."""
    if out.dim() == 2:
        y = torch.randint(0, out.shape[1], (batch,))
        return nn.CrossEntropyLoss()(out, y)
    return nn.MSELoss()(out, torch.zeros_like(out))


def try_size(net: Net, size: int, batch: int = 1) -> Optional[str]:
    """Run forward + backward once; None if it works, else the error text."""
    try:
        torch.manual_seed(0)
        model = net.build(size)
        model.train()
        x = net.make_input(batch, size)
        loss = loss_fn(model(x), batch)
        loss.backward()
        return None
    except Exception as e:  # noqa: BLE001 - any failure means the size is not valid
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]


def probe(names: Sequence[str], log=print) -> Dict[str, List[int]]:
    result: Dict[str, List[int]] = {}
    for n in names:
        net = REGISTRY[n]
        ok = []
        for s in net.candidates:
            err = try_size(net, s)
            if err is None:
                ok.append(s)
            else:
                log(f"# {n} {s}: {err}")
        result[n] = ok
        log(f"# {n}: {ok}", flush=True)
    return result


if __name__ == "__main__":
    import argparse
    import sys

    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", action="store_true", help="determine valid sizes, print the literal")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    torch.set_num_threads(int(__import__("os").environ.get("OMP_NUM_THREADS", "2")))
    if a.probe:
        res = probe(a.names or NAMES, log=lambda *x, **k: print(*x, file=sys.stderr, **k))
        print("VALID_SIZES: Dict[str, List[int]] = {")
        for n, v in res.items():
            print(f"    {n!r}: {v},")
        print("}")
    else:
        for n, net in REGISTRY.items():
            print(n, net.kind, net.family, net.sizes, sep="\t")
