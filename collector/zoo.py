"""Abacus network zoo: every network the collector measures and exports.

Each entry of REGISTRY is a `Net`:
  name        unique name (also the graph file stem)
  kind        'image' (input torch.randn(B, C, H, W), H = W = size)
              'tokens' (input torch.randint(0, vocab, (B, L)), L = size)
  build(size) -> nn.Module (random weights, auxiliary heads off)
  channels    input channels (images)
  sizes       valid input sizes (images: among IMAGE_SIZES, tokens: sequence lengths
              among TOKEN_LENGTHS), determined once by running forward + backward at batch 1
              (see `probe`) and kept as data in valid_sizes.json
  vocab       vocabulary size (tokens)
  make_input(batch, size) -> the input tensor, per docs/PROTOCOL.md

Usage:
  from collector.zoo import REGISTRY, get
  net = get('resnet18'); m = net.build(224); x = net.make_input(8, 224)

  all_sizes   sizes plus BATCH2_SIZES (sizes where batch 1 fails only because a BatchNorm sees a
              single value per channel, 1x1 map; they train at batch >= 2); min_batch(size)

`/usr/bin/python3 collector/zoo.py --probe [--write] [names]` re-determines the valid sizes, prints them
and with --write merges them into valid_sizes.json (slow: ~1 h on 2 cores for every network).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
from typing import Callable, Dict, List, Optional, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision.models as tvm
import torchvision.models.segmentation as tvseg

IMAGE_SIZES = (32, 48, 64, 96, 128, 160, 224)
TOKEN_LENGTHS = (32, 64, 128, 256, 512)

# Valid sizes per network: data, in valid_sizes.json beside this file, determined by `probe`
# (forward + backward at batch 1, float32, train mode) and written by `zoo.py --probe --write`.
SIZES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "valid_sizes.json")


def _load_sizes(path: str = SIZES_FILE):
    with open(path) as f:
        d = json.load(f)
    return d["valid"], d["batch2"]


VALID_SIZES: Dict[str, List[int]]
BATCH2_SIZES: Dict[str, List[int]]
VALID_SIZES, BATCH2_SIZES = _load_sizes()


def write_sizes(valid: Dict[str, List[int]], batch2: Dict[str, List[int]], path: str = SIZES_FILE) -> None:
    """Merges probed sizes into the sizes file (networks not probed keep theirs), atomically."""
    old_valid, old_batch2 = _load_sizes(path) if os.path.exists(path) else ({}, {})
    old_valid.update(valid)
    for n in valid:
        old_batch2.pop(n, None)
    old_batch2.update(batch2)
    with open(path) as f:
        comment = json.load(f).get("_comment", "")
    lines = ["{", ' "_comment": %s,' % json.dumps(comment)]
    for key, table in (("valid", old_valid), ("batch2", old_batch2)):
        items = sorted(table.items())
        lines.append(' "%s": {' % key)
        lines += ['  %s: %s%s' % (json.dumps(k), json.dumps(v), "," if i + 1 < len(items) else "")
                  for i, (k, v) in enumerate(items)]
        lines.append(" }" + ("," if key == "valid" else ""))
    lines.append("}")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)



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
        """Valid sizes: forward + backward works at batch 1."""
        if self.name in VALID_SIZES:
            return list(VALID_SIZES[self.name])
        return list(self.candidates)

    @property
    def all_sizes(self) -> List[int]:
        """Valid sizes plus the sizes that train at batch >= 2 only (BATCH2_SIZES)."""
        return sorted(set(self.sizes) | set(BATCH2_SIZES.get(self.name, [])))

    def min_batch(self, size: int) -> int:
        """Smallest batch that trains at this size (1, or 2 for BATCH2_SIZES); 0 if invalid."""
        if size in self.sizes:
            return 1
        return 2 if size in BATCH2_SIZES.get(self.name, []) else 0

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


class GPTSmall(nn.Module):
    """Decoder-only language model: pre-LayerNorm blocks with GELU and a causal mask, logits over the
    vocabulary per token ([B, L, V]). Other dims than transformer_enc (d 192, 6 heads, ff 768)."""

    def __init__(self, vocab=TOKEN_VOCAB, d_model=192, nhead=6, layers=3, ff=768, max_len=512,
                 dropout=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, ff, dropout, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, x):
        L = x.shape[1]
        pos = torch.arange(L, device=x.device)
        causal = torch.triu(torch.full((L, L), float("-inf"), device=x.device), diagonal=1)
        h = self.blocks(self.tok(x) + self.pos(pos), mask=causal)
        return self.head(self.norm(h))


class BiLSTMTagger(nn.Module):
    """Sequence labelling: embedding, one bidirectional LSTM layer, a tag per token ([B, L, 32])."""

    def __init__(self, vocab=TOKEN_VOCAB, emb=128, hidden=256, tags=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.rnn = nn.LSTM(emb, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, tags)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h)


class GRUClassifier(nn.Module):
    """Sequence classifier: embedding, one GRU layer with H 128, classes from the last hidden state."""

    def __init__(self, vocab=TOKEN_VOCAB, emb=64, hidden=128, classes=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.rnn = nn.GRU(emb, hidden, batch_first=True)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x):
        _, h = self.rnn(self.emb(x))
        return self.out(h[-1])


class ElmanRNN(nn.Module):
    """Plain tanh RNN, two layers with H 192, mean over time, classes."""

    def __init__(self, vocab=TOKEN_VOCAB, emb=96, hidden=192, classes=6):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.rnn = nn.RNN(emb, hidden, num_layers=2, batch_first=True)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h.mean(dim=1))


class TextCNN(nn.Module):
    """Sentence classifier: embedding, 1-D convolutions of widths 3, 4, 5 over time, max over time."""

    def __init__(self, vocab=TOKEN_VOCAB, emb=128, filters=128, classes=10, dropout=0.5):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.convs = nn.ModuleList([nn.Conv1d(emb, filters, k) for k in (3, 4, 5)])
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(3 * filters, classes)

    def forward(self, x):
        h = self.emb(x).transpose(1, 2)
        pooled = [torch.relu(c(h)).amax(dim=2) for c in self.convs]
        return self.fc(self.drop(torch.cat(pooled, dim=1)))


class MixerBlock(nn.Module):
    def __init__(self, tokens, dim, token_hidden, channel_hidden):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, token_hidden), nn.GELU(), nn.Linear(token_hidden, tokens))
        self.norm2 = nn.LayerNorm(dim)
        self.channel_mlp = nn.Sequential(nn.Linear(dim, channel_hidden), nn.GELU(), nn.Linear(channel_hidden, dim))

    def forward(self, x):
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


class MLPMixer(nn.Module):
    """MLP-Mixer (Tolstikhin et al. 2021), small: patch 8 (4 below 64), 4 blocks of width 192."""

    def __init__(self, size, channels=3, dim=192, depth=4, classes=10):
        super().__init__()
        patch = 8 if size >= 64 else 4
        tokens = (size // patch) ** 2
        self.stem = nn.Conv2d(channels, dim, patch, stride=patch)
        self.blocks = nn.Sequential(*[MixerBlock(tokens, dim, 4 * tokens // 2 + 1, 4 * dim) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        h = self.stem(x).flatten(2).transpose(1, 2)
        return self.head(self.norm(self.blocks(h)).mean(dim=1))


class ConvMixer(nn.Module):
    """ConvMixer (Trockman & Kolter 2022), small: patch embedding, depthwise 5x5 + pointwise blocks
    with GELU and BatchNorm, width 256, depth 6."""

    def __init__(self, size, channels=3, dim=256, depth=6, kernel=5, classes=10):
        super().__init__()
        patch = 4 if size >= 64 else 2
        self.stem = nn.Sequential(nn.Conv2d(channels, dim, patch, stride=patch), nn.GELU(), nn.BatchNorm2d(dim))
        self.dw = nn.ModuleList([nn.Sequential(nn.Conv2d(dim, dim, kernel, groups=dim, padding=kernel // 2),
                                               nn.GELU(), nn.BatchNorm2d(dim)) for _ in range(depth)])
        self.pw = nn.ModuleList([nn.Sequential(nn.Conv2d(dim, dim, 1), nn.GELU(), nn.BatchNorm2d(dim))
                                 for _ in range(depth)])
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        h = self.stem(x)
        for dw, pw in zip(self.dw, self.pw):
            h = pw(h + dw(h))
        return self.head(h.mean(dim=(2, 3)))


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


class WaveNetSmall(nn.Module):
    """WaveNet-style stack over embedded tokens: causal dilated 1-D convolutions (kernel 2, dilations
    1..8 twice) with gated tanh x sigmoid units, residual and skip 1x1 convolutions, [B, 64, L] out."""

    def __init__(self, vocab=TOKEN_VOCAB, emb=64, channels=64, skip=128, out=64, dilations=(1, 2, 4, 8) * 2):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.inp = nn.Conv1d(emb, channels, 1)
        self.dilations = dilations
        self.filt = nn.ModuleList([nn.Conv1d(channels, channels, 2, dilation=d) for d in dilations])
        self.gate = nn.ModuleList([nn.Conv1d(channels, channels, 2, dilation=d) for d in dilations])
        # The last layer feeds only the skip sum: a residual convolution there would be a weight that
        # never gets a gradient (and that the exported graph drops).
        self.res = nn.ModuleList([nn.Conv1d(channels, channels, 1) for _ in dilations[:-1]])
        self.skip = nn.ModuleList([nn.Conv1d(channels, skip, 1) for _ in dilations])
        self.post = nn.Sequential(nn.ReLU(), nn.Conv1d(skip, skip, 1), nn.ReLU(), nn.Conv1d(skip, out, 1))

    def forward(self, x):
        h = self.inp(self.emb(x).transpose(1, 2))
        total = 0
        for i, (d, f, g, s) in enumerate(zip(self.dilations, self.filt, self.gate, self.skip)):
            p = F.pad(h, (d, 0))  # causal: the output at t sees t and t - d only
            z = torch.tanh(f(p)) * torch.sigmoid(g(p))
            total = total + s(z)
            if i < len(self.res):
                h = h + self.res[i](z)
        return self.post(total)


class VAE(nn.Module):
    """Fully connected variational autoencoder over the flattened image: encoder 512-256, a 32-d latent
    drawn by reparameterisation (randn_like), decoder 256-512, sigmoid reconstruction [B, C, H, W]."""

    def __init__(self, size, channels=3, hidden=(512, 256), latent=32):
        super().__init__()
        d = channels * size * size
        self.shape = (channels, size, size)
        self.enc = nn.Sequential(nn.Flatten(), nn.Linear(d, hidden[0]), nn.ReLU(), nn.Linear(hidden[0], hidden[1]), nn.ReLU())
        self.mu = nn.Linear(hidden[1], latent)
        self.logvar = nn.Linear(hidden[1], latent)
        self.dec = nn.Sequential(nn.Linear(latent, hidden[1]), nn.ReLU(), nn.Linear(hidden[1], hidden[0]), nn.ReLU(),
                                 nn.Linear(hidden[0], d), nn.Sigmoid())

    def forward(self, x):
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.dec(z).view(x.shape[0], *self.shape)


class Seq2SeqTransformer(nn.Module):
    """Encoder-decoder nn.Transformer (d 128, 4 heads, 2 + 2 layers, ff 512): the sequence is the source
    and, shifted right by one token under a causal mask, the target; logits over 1000 tokens."""

    def __init__(self, vocab=TOKEN_VOCAB, d_model=128, nhead=4, layers=2, ff=512, max_len=512, out=1000):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.tf = nn.Transformer(d_model, nhead, layers, layers, ff, dropout=0.1, batch_first=True)
        self.head = nn.Linear(d_model, out)

    def forward(self, x):
        L = x.shape[1]
        pos = self.pos(torch.arange(L, device=x.device))
        src = self.tok(x) + pos
        tgt = self.tok(F.pad(x[:, :-1], (1, 0))) + pos
        causal = torch.triu(torch.full((L, L), float("-inf"), device=x.device), diagonal=1)
        return self.head(self.tf(src, tgt, tgt_mask=causal))


class LSTMSeq2Seq(nn.Module):
    """Encoder LSTM whose final state starts a decoder LSTM (teacher forcing on the reversed sequence),
    logits over 1000 tokens per step ([B, L, 1000])."""

    def __init__(self, vocab=TOKEN_VOCAB, emb=128, hidden=192, out=1000):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.enc = nn.LSTM(emb, hidden, batch_first=True)
        self.dec = nn.LSTM(emb, hidden, batch_first=True)
        self.head = nn.Linear(hidden, out)

    def forward(self, x):
        _, state = self.enc(self.emb(x))
        h, _ = self.dec(self.emb(torch.flip(x, dims=[1])), state)
        return self.head(h)


class DeepSpeechSmall(nn.Module):
    """Speech-recogniser shape over embedded tokens: two 1-D convolutions (the first with stride 2) with
    BatchNorm and clipped ReLU, a 2-layer bidirectional GRU (H 128), 29 characters per frame."""

    def __init__(self, vocab=TOKEN_VOCAB, feats=80, channels=128, hidden=128, chars=29):
        super().__init__()
        self.emb = nn.Embedding(vocab, feats)
        self.conv = nn.Sequential(
            nn.Conv1d(feats, channels, 5, stride=2, padding=2), nn.BatchNorm1d(channels), nn.Hardtanh(0, 20),
            nn.Conv1d(channels, channels, 5, padding=2), nn.BatchNorm1d(channels), nn.Hardtanh(0, 20))
        self.rnn = nn.GRU(channels, hidden, num_layers=2, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, chars)

    def forward(self, x):
        h = self.conv(self.emb(x).transpose(1, 2)).transpose(1, 2)
        h, _ = self.rnn(h)
        return self.out(h)


class GMLPBlock(nn.Module):
    def __init__(self, tokens, dim, ff):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.proj_in = nn.Linear(dim, 2 * ff)
        self.sgu_norm = nn.LayerNorm(ff)
        self.spatial = nn.Linear(tokens, tokens)
        self.proj_out = nn.Linear(ff, dim)

    def forward(self, x):
        u, v = F.gelu(self.proj_in(self.norm(x))).chunk(2, dim=-1)
        v = self.spatial(self.sgu_norm(v).transpose(1, 2)).transpose(1, 2)
        return x + self.proj_out(u * v)


class GMLP(nn.Module):
    """gMLP (Liu et al. 2021), small: patch embedding, 4 blocks of width 128 whose spatial gating unit
    mixes tokens with a Linear across the token axis, mean pool, 10 classes."""

    def __init__(self, size, channels=3, dim=128, ff=256, depth=4, classes=10):
        super().__init__()
        patch = 8 if size >= 64 else 4
        tokens = (size // patch) ** 2
        self.stem = nn.Conv2d(channels, dim, patch, stride=patch)
        self.blocks = nn.Sequential(*[GMLPBlock(tokens, dim, ff) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        h = self.stem(x).flatten(2).transpose(1, 2)
        return self.head(self.norm(self.blocks(h)).mean(dim=1))


def _cbm(cin, cout, k=3, stride=1):
    """Convolution, BatchNorm, Mish: the unit of YOLOv4's CSPDarknet."""
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), nn.BatchNorm2d(cout), nn.Mish())


class CSPStage(nn.Module):
    def __init__(self, cin, cout, blocks):
        super().__init__()
        self.down = _cbm(cin, cout, 3, 2)
        half = cout // 2
        self.split_a, self.split_b = _cbm(cout, half, 1), _cbm(cout, half, 1)
        self.blocks = nn.ModuleList([nn.Sequential(_cbm(half, half, 1), _cbm(half, half, 3)) for _ in range(blocks)])
        self.merge = _cbm(2 * half, cout, 1)

    def forward(self, x):
        x = self.down(x)
        a, b = self.split_a(x), self.split_b(x)
        for blk in self.blocks:
            b = b + blk(b)
        return self.merge(torch.cat([a, b], dim=1))


class CSPMish(nn.Module):
    """A small CSPDarknet (YOLOv4's backbone): Conv-BN-Mish units, cross-stage partial stages of residual
    blocks, widths 32-256, global average pool, 10 classes. Mish costs 30x a ReLU per element here."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = _cbm(3, 32)
        self.stages = nn.Sequential(CSPStage(32, 64, 1), CSPStage(64, 128, 2), CSPStage(128, 256, 2))
        self.head = nn.Linear(256, classes)

    def forward(self, x):
        return self.head(self.stages(self.stem(x)).mean(dim=(2, 3)))


class SRResBlock(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(ch, ch, 3, 1, 1), nn.BatchNorm2d(ch), nn.PReLU(ch),
                                  nn.Conv2d(ch, ch, 3, 1, 1), nn.BatchNorm2d(ch))

    def forward(self, x):
        return x + self.body(x)


class SRResNetSmall(nn.Module):
    """SRResNet (Ledig et al. 2017), small: 9x9 head with PReLU, 4 residual blocks (conv-BN-PReLU-conv-BN)
    of 32 channels, a long skip, x2 upsampling by PixelShuffle and PReLU, 9x9 output (MSE loss)."""

    def __init__(self, ch=32, blocks=4):
        super().__init__()
        self.head = nn.Sequential(nn.Conv2d(3, ch, 9, 1, 4), nn.PReLU(ch))
        self.body = nn.Sequential(*[SRResBlock(ch) for _ in range(blocks)])
        self.mid = nn.Sequential(nn.Conv2d(ch, ch, 3, 1, 1), nn.BatchNorm2d(ch))
        self.up = nn.Sequential(nn.Conv2d(ch, 4 * ch, 3, 1, 1), nn.PixelShuffle(2), nn.PReLU(ch))
        self.tail = nn.Conv2d(ch, 3, 9, 1, 4)

    def forward(self, x):
        h = self.head(x)
        return self.tail(self.up(h + self.mid(self.body(h))))


class DLRMSmall(nn.Module):
    """Recommender shape: each of the L tokens is a categorical feature with a 32-d embedding; their
    pairwise dot products (a batched matmul) averaged per feature, with the mean embedding, feed a
    top MLP 256-64-2."""

    def __init__(self, features, vocab=TOKEN_VOCAB, emb=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.bottom = nn.Sequential(nn.Linear(emb, 64), nn.ReLU(), nn.Linear(64, emb), nn.ReLU())
        self.top = nn.Sequential(nn.Linear(features + emb, 256), nn.ReLU(), nn.Linear(256, 64), nn.ReLU(),
                                 nn.Linear(64, 2))

    def forward(self, x):
        e = self.emb(x)
        dense = self.bottom(e.mean(dim=1))
        inter = torch.bmm(e, e.transpose(1, 2)).mean(dim=2)
        return self.top(torch.cat([inter, dense], dim=1))


class ConformerBlock(nn.Module):
    def __init__(self, dim, heads, kernel, ff_mult=4, dropout=0.1):
        super().__init__()
        self.ff1 = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, ff_mult * dim), nn.SiLU(), nn.Dropout(dropout),
                                 nn.Linear(ff_mult * dim, dim))
        self.attn_norm = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, dropout=dropout, batch_first=True)
        self.conv_norm = nn.LayerNorm(dim)
        self.pw1 = nn.Conv1d(dim, 2 * dim, 1)
        self.dw = nn.Conv1d(dim, dim, kernel, padding=kernel // 2, groups=dim)
        self.bn = nn.BatchNorm1d(dim)
        self.pw2 = nn.Conv1d(dim, dim, 1)
        self.ff2 = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, ff_mult * dim), nn.SiLU(), nn.Dropout(dropout),
                                 nn.Linear(ff_mult * dim, dim))
        self.out_norm = nn.LayerNorm(dim)

    def forward(self, x):
        x = x + 0.5 * self.ff1(x)
        a = self.attn_norm(x)
        x = x + self.attn(a, a, a, need_weights=False)[0]
        c = self.conv_norm(x).transpose(1, 2)
        c = F.glu(self.pw1(c), dim=1)
        c = self.pw2(F.silu(self.bn(self.dw(c))))
        x = x + c.transpose(1, 2)
        return self.out_norm(x + 0.5 * self.ff2(x))


class ConformerSmall(nn.Module):
    """Conformer (Gulati et al. 2020), small: 3 blocks of width 144 (4 heads, depthwise kernel 15) with
    macaron feed-forwards and a GLU convolution module, mean over time, 10 classes."""

    def __init__(self, vocab=TOKEN_VOCAB, dim=144, heads=4, depth=3, kernel=15, classes=10):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.blocks = nn.Sequential(*[ConformerBlock(dim, heads, kernel) for _ in range(depth)])
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        return self.head(self.blocks(self.emb(x)).mean(dim=1))


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
        # Networks outside torchvision, sequence models first, so that leave-one-model-out has more
        # than three sequence models to learn from and be judged on.
        Net("gpt_small", "tokens", lambda L: GPTSmall(), family="transformer", vocab=TOKEN_VOCAB,
            candidates=TOKEN_LENGTHS),
        Net("bilstm_tagger", "tokens", lambda L: BiLSTMTagger(), family="rnn", vocab=TOKEN_VOCAB,
            candidates=TOKEN_LENGTHS),
        Net("textcnn", "tokens", lambda L: TextCNN(), family="textcnn", vocab=TOKEN_VOCAB,
            candidates=TOKEN_LENGTHS),
        Net("mlp_mixer", "image", lambda s: MLPMixer(s), family="mixer", candidates=IMAGE_SIZES),
        Net("convmixer", "image", lambda s: ConvMixer(s), family="convmixer", candidates=IMAGE_SIZES),
        # Recurrent networks with small cells. The three above have H 256-512, where streaming the
        # recurrent matrix dominates; at H 64-192 each step's dispatch does, and the fit would have
        # nothing to price it on (docs/COSTS.md, recurrent_steps and recurrent_bytes).
        Net("gru_classifier", "tokens", lambda L: GRUClassifier(), family="rnn", vocab=TOKEN_VOCAB,
            candidates=TOKEN_LENGTHS),
        Net("small_bilstm_tagger", "tokens", lambda L: BiLSTMTagger(emb=48, hidden=64, tags=8),
            family="rnn", vocab=TOKEN_VOCAB, candidates=TOKEN_LENGTHS),
        Net("elman_rnn", "tokens", lambda L: ElmanRNN(), family="rnn", vocab=TOKEN_VOCAB,
            candidates=TOKEN_LENGTHS),
        # More shapes of network from outside torchvision, so that what the predictor learns about
        # sequence models, generative models and recommenders is not learned from one or two examples
        # each (leave-one-model-out judges each on the others).
        Net("wavenet_small", "tokens", lambda L: WaveNetSmall(), family="wavenet", vocab=TOKEN_VOCAB,
            candidates=TOKEN_LENGTHS),
        Net("vae_mlp", "image", lambda s: VAE(s), family="vae", candidates=IMAGE_SIZES[:5]),
        Net("seq2seq_transformer", "tokens", lambda L: Seq2SeqTransformer(), family="transformer",
            vocab=TOKEN_VOCAB, candidates=TOKEN_LENGTHS),
        Net("lstm_seq2seq", "tokens", lambda L: LSTMSeq2Seq(), family="rnn", vocab=TOKEN_VOCAB,
            candidates=TOKEN_LENGTHS),
        Net("deepspeech_small", "tokens", lambda L: DeepSpeechSmall(), family="rnn", vocab=TOKEN_VOCAB,
            candidates=TOKEN_LENGTHS),
        Net("gmlp", "image", lambda s: GMLP(s), family="mixer", candidates=IMAGE_SIZES),
        Net("dlrm_small", "tokens", lambda L: DLRMSmall(L), family="recsys", vocab=TOKEN_VOCAB,
            candidates=TOKEN_LENGTHS),
        Net("conformer_small", "tokens", lambda L: ConformerSmall(), family="transformer",
            vocab=TOKEN_VOCAB, candidates=TOKEN_LENGTHS),
        # Activations that cost far more per element than a ReLU (Mish 30x, PReLU 12x, measured;
        # docs/COSTS.md), which no other zoo network has, so that their price can be learned.
        Net("csp_mish", "image", lambda s: CSPMish(), family="cspdarknet", candidates=IMAGE_SIZES),
        Net("srresnet_small", "image", lambda s: SRResNetSmall(), family="superres",
            candidates=IMAGE_SIZES[:5]),
    ]
    for net in custom:
        reg[net.name] = net
    return reg


REGISTRY: Dict[str, Net] = _make_registry()
NAMES: List[str] = list(REGISTRY)


def get(name: str) -> Net:
    """The network of this name: a REGISTRY entry, or a generated network (`gen_<family>_s<seed>`,
    collector/generator.py), which is sampled from its name on first use and is not in REGISTRY."""
    if name not in REGISTRY and name.startswith("gen_"):
        from collector import generator
        if generator.is_generated(name):
            return generator.net(name)
    return REGISTRY[name]


def loss_fn(out: torch.Tensor, batch: int):
    """Loss per docs/PROTOCOL.md: CrossEntropy for [B, classes] outputs, MSE vs zeros otherwise."""
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


BN_BATCH1_ERROR = "Expected more than 1 value per channel when training"


def probe(names: Sequence[str], log=print):
    """Returns (valid, batch2): sizes that train at batch 1, and sizes that fail at batch 1 only
    because of BatchNorm on a 1x1 map but train at batch 2."""
    result: Dict[str, List[int]] = {}
    batch2: Dict[str, List[int]] = {}
    for n in names:
        net = REGISTRY[n]
        ok = []
        for s in net.candidates:
            err = try_size(net, s)
            if err is None:
                ok.append(s)
                continue
            log(f"# {n} {s}: {err}")
            if BN_BATCH1_ERROR in err:
                err2 = try_size(net, s, batch=2)
                if err2 is None:
                    batch2.setdefault(n, []).append(s)
                else:
                    log(f"# {n} {s} batch 2: {err2}")
        result[n] = ok
        log(f"# {n}: {ok} batch>=2 also: {batch2.get(n, [])}", flush=True)
    return result, batch2


if __name__ == "__main__":
    import argparse
    import sys

    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", action="store_true", help="determine valid sizes and print them")
    ap.add_argument("--write", action="store_true", help="with --probe: merge them into valid_sizes.json")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    if a.probe:
        res, b2 = probe(a.names or NAMES, log=lambda *x, **k: print(*x, file=sys.stderr, **k))
        print(json.dumps({"valid": res, "batch2": b2}, indent=1))
        if a.write:
            write_sizes(res, b2)
    else:
        for n, net in REGISTRY.items():
            print(n, net.kind, net.family, net.sizes, BATCH2_SIZES.get(n, []), sep="\t")
