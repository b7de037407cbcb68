"""What estimate() and summary() return, and how they read: text like the CLI's (`abacus predict`), HTML
tables for notebooks. Formatting only: every number is the library's."""
from __future__ import annotations

import dataclasses
import html
import math
from typing import List, Optional, Tuple


def fmt_bytes(v: float) -> str:
    """Bytes in binary units, as the CLI prints them ("145.16 MiB")."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    k = 0
    v = float(v)
    while v >= 1024 and k < 6:
        v /= 1024
        k += 1
    return f"{v:.0f} B" if k == 0 else f"{v:.2f} {units[k]}"


def fmt_duration(s: float) -> str:
    """Seconds in the unit people read ("75.6 ms", "41 min", "2.9 days"), as the CLI prints them."""
    if not (s >= 0) or not math.isfinite(s):
        return "?"
    for limit, scale, unit in ((1e-3, 1e6, "µs"), (1, 1e3, "ms"), (60, 1, "s"), (3600, 1 / 60, "min"),
                               (2 * 86400, 1 / 3600, "h")):
        if s < limit:
            return f"{s * scale:.3g} {unit}"
    return f"{s / 86400:.3g} days"


@dataclasses.dataclass
class LayerRow:
    """One layer of the analysed graph (a compute node)."""
    name: str
    op: str
    category: str
    output_shape: Tuple[int, ...]
    params: int
    forward_flops: int
    backward_flops: int
    saved_bytes: int         # activation bytes this layer keeps for its backward
    output_bytes: int
    known: bool
    time_share: float = 0.0  # its share of the iteration's predicted time
    time_s: float = 0.0


@dataclasses.dataclass
class MemoryStep:
    """One step of the simulated iteration: a layer's forward or backward, the loss, or the optimizer step."""
    phase: str               # "forward", "loss", "backward" or "step"
    layer: Optional[str]     # the layer's name (None for the loss and the step)
    peak_bytes: int          # the largest live total during the step, persistent state included
    live_bytes: int          # the live total once the step is done


_BREAKDOWN = (("weights", "weights"), ("buffers", "buffers"), ("gradients", "gradients"),
              ("optimizer", "optimizer state"), ("inputs", "inputs + targets"),
              ("activations", "saved activations"), ("workspace", "transient workspace"))


@dataclasses.dataclass
class Estimate:
    """One training iteration's predicted time and peak memory, with 90 % intervals."""
    network: str
    batch_size: int
    optimizer: str
    hw: str
    time_s: float
    time_interval: Tuple[float, float]
    memory_bytes: int
    memory_interval: Tuple[int, int]
    breakdown: dict                  # the simulation's components at the peak, and the learned correction
    params: int
    forward_flops: int
    backward_flops: int
    calib_s: float
    time_analytic_s: float
    optimizer_step_share: float      # share of the time that belongs to no layer
    layers: List[LayerRow]
    top_layers: List[LayerRow]       # by share of time
    top_activation_layers: List[LayerRow]
    unknown_ops: List[str]
    machine: Optional[str] = None
    timeline: List[MemoryStep] = dataclasses.field(default_factory=list)  # the simulated iteration, step by step
    # How far the network lies from the predictor's training graphs (0 for one it was trained on; >= 0.2:
    # unlike them, and the intervals are wider): `abacus predict`'s "distance from the training graphs".
    novelty: float = 0.0

    @property
    def peak_step(self) -> Optional[MemoryStep]:
        """The step of the timeline where the simulated memory peaks (the first of equal peaks)."""
        return max(self.timeline, key=lambda e: e.peak_bytes, default=None)

    @classmethod
    def from_library(cls, name, batch, opt, pr, mem, tot, layers, shares, step, top, unknown, machine, timeline=()):
        for lay, sh in zip(layers, shares):
            lay.time_share, lay.time_s = sh, sh * pr.time_s
        br = {k: getattr(mem, k) for k, _ in _BREAKDOWN}
        br["learned_correction"] = pr.memory_bytes - mem.peak
        by_time = sorted((l for l in layers if l.time_share > 0), key=lambda l: -l.time_share)[:top]
        by_saved = sorted((l for l in layers if l.saved_bytes > 0), key=lambda l: -l.saved_bytes)[:top]
        return cls(network=name, batch_size=batch, optimizer=opt, hw=pr.hw.decode() if pr.hw else "",
                   time_s=pr.time_s, time_interval=(pr.time_lo_s, pr.time_hi_s), memory_bytes=pr.memory_bytes,
                   memory_interval=(pr.memory_lo_bytes, pr.memory_hi_bytes), breakdown=br, params=tot.params,
                   forward_flops=tot.forward_flops, backward_flops=tot.backward_flops, calib_s=pr.calib_s,
                   time_analytic_s=pr.time_analytic_s, optimizer_step_share=step, layers=layers,
                   top_layers=by_time, top_activation_layers=by_saved, unknown_ops=unknown,
                   machine=str(machine) if machine else None, timeline=list(timeline), novelty=pr.novelty)

    def epoch_s(self, samples: int) -> float:
        """Predicted time of an epoch of `samples` samples (whole batches)."""
        return -(-samples // self.batch_size) * self.time_s

    def _peak_label(self) -> str:
        """The suffix `abacus predict` gives the breakdown's title: the step where the simulated memory peaks."""
        pk = self.peak_step
        if pk is None:
            return ""
        if pk.layer is None:
            where = "the loss" if pk.phase == "loss" else "the optimizer step"
        else:
            op = next((l.op for l in self.layers if l.name == pk.layer), "?")
            where = f"{pk.phase} of {pk.layer} ({op})"
        return f" (simulated: in the {where})"

    def __repr__(self) -> str:
        lo, hi = self.time_interval
        mlo, mhi = self.memory_interval
        out = [f"{self.network}, batch {self.batch_size}, {self.optimizer}, {self.hw}",
               f"  time per iteration  {fmt_duration(self.time_s)}   (90 % interval {fmt_duration(lo)} – "
               f"{fmt_duration(hi)})",
               f"  peak memory         {fmt_bytes(self.memory_bytes)}   (90 % interval {fmt_bytes(mlo)} – "
               f"{fmt_bytes(mhi)})"]
        if self.novelty > 0:  # as `abacus predict` prints it (cli/cmd_predict.c)
            out.append(f"  distance from the training graphs {self.novelty:.3f}"
                       + (" (unlike the networks the predictor learned from: wider intervals)"
                          if self.novelty >= 0.2 else ""))
        out += ["", f"memory at the peak{self._peak_label()}:"]
        for key, label in _BREAKDOWN:
            v = self.breakdown[key]
            out.append(f"  {label:<22} {fmt_bytes(v):>12}  {100 * v / self.memory_bytes:5.1f}%")
        c = self.breakdown["learned_correction"]
        out.append(f"  {'learned correction':<22} {'-' if c < 0 else '+'}{fmt_bytes(abs(c)):>11}  "
                   f"{100 * c / self.memory_bytes:5.1f}%")
        if self.top_layers:
            out += ["", "top layers by share of time:"]
            out += [f"  {100 * l.time_share:5.1f}%  {fmt_duration(l.time_s):<12} {l.name[:40]:<40} {l.op}"
                    for l in self.top_layers]
            out.append(f"  {100 * self.optimizer_step_share:5.1f}%  "
                       f"{fmt_duration(self.optimizer_step_share * self.time_s):<12} (the optimizer step)")
        if self.unknown_ops:
            out += ["", "ops Abacus does not know (priced as 'other'): " + ", ".join(self.unknown_ops)]
        return "\n".join(out)

    def _repr_html_(self) -> str:
        e = html.escape
        lo, hi = self.time_interval
        mlo, mhi = self.memory_interval
        rows = [("time per iteration", fmt_duration(self.time_s), f"{fmt_duration(lo)} – {fmt_duration(hi)}"),
                ("peak memory", fmt_bytes(self.memory_bytes), f"{fmt_bytes(mlo)} – {fmt_bytes(mhi)}")]
        parts = [f"<b>{e(self.network)}</b>, batch {self.batch_size}, {e(self.optimizer)}, {e(self.hw)}",
                 "<table><tr><th></th><th>predicted</th><th>90 % interval</th></tr>"]
        parts += [f"<tr><td>{a}</td><td>{e(b)}</td><td>{e(c)}</td></tr>" for a, b, c in rows]
        parts.append("</table><table><tr><th>memory at the peak</th><th></th><th>share</th></tr>")
        for key, label in _BREAKDOWN + (("learned_correction", "learned correction"),):
            v = self.breakdown[key]
            parts.append(f"<tr><td>{label}</td><td>{e(('-' if v < 0 else '') + fmt_bytes(abs(v)))}</td>"
                         f"<td>{100 * v / self.memory_bytes:.1f} %</td></tr>")
        parts.append("</table>")
        if self.top_layers:
            parts.append("<table><tr><th>layer</th><th>op</th><th>time</th><th>share</th></tr>")
            parts += [f"<tr><td>{e(l.name)}</td><td>{e(l.op)}</td><td>{e(fmt_duration(l.time_s))}</td>"
                      f"<td>{100 * l.time_share:.1f} %</td></tr>" for l in self.top_layers]
            parts.append("</table>")
        return "".join(parts)


class Summary:
    """Per-layer table (torchinfo's layout, with training memory and time per layer)."""

    def __init__(self, est: Estimate):
        self.estimate = est
        self.layers = est.layers

    def records(self) -> List[dict]:
        return [dataclasses.asdict(l) for l in self.layers]

    def __repr__(self) -> str:
        est = self.estimate
        head = f"{'layer (op)':<48} {'output shape':<22} {'params':>12} {'saved for backward':>19} {'time':>8}"
        out = ["=" * len(head), head, "=" * len(head)]
        for l in self.layers:
            label = f"{l.name} ({l.op})"
            if len(label) > 48:
                label = "…" + label[-47:]
            shape = "[" + ", ".join(str(d) for d in l.output_shape) + "]"
            out.append(f"{label:<48} {shape:<22} {l.params:>12,} {fmt_bytes(l.saved_bytes) if l.saved_bytes else '-':>19}"
                       f" {100 * l.time_share:7.1f}%")
        lo, hi = est.memory_interval
        out += ["=" * len(head),
                f"parameters: {est.params:,}   forward FLOPs: {est.forward_flops:.4g}   backward FLOPs: "
                f"{est.backward_flops:.4g}",
                f"batch {est.batch_size}, {est.optimizer}, {est.hw}: time per iteration {fmt_duration(est.time_s)}, "
                f"peak training memory {fmt_bytes(est.memory_bytes)} (90 % interval {fmt_bytes(lo)} – {fmt_bytes(hi)})",
                f"  weights {fmt_bytes(est.breakdown['weights'])}, gradients {fmt_bytes(est.breakdown['gradients'])}, "
                f"optimizer state {fmt_bytes(est.breakdown['optimizer'])}, saved activations "
                f"{fmt_bytes(est.breakdown['activations'])} at the peak",
                "=" * len(head)]
        return "\n".join(out)

    def _repr_html_(self) -> str:
        e = html.escape
        rows = "".join(f"<tr><td>{e(l.name)}</td><td>{e(l.op)}</td><td>{e(str(list(l.output_shape)))}</td>"
                       f"<td>{l.params:,}</td><td>{e(fmt_bytes(l.saved_bytes))}</td>"
                       f"<td>{100 * l.time_share:.1f} %</td></tr>" for l in self.layers)
        return ("<table><tr><th>layer</th><th>op</th><th>output shape</th><th>params</th>"
                f"<th>saved for backward</th><th>time</th></tr>{rows}</table>"
                f"<pre>{e(repr(self).splitlines()[-4])}</pre>")

    def to_dataframe(self):
        import pandas
        return pandas.DataFrame(self.records())
