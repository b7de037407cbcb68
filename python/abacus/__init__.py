"""Abacus from Python: what training a network costs before you run it.

    import abacus, torchvision
    est = abacus.estimate(torchvision.models.resnet18(), input_size=(3, 64, 64), batch_size=8)
    print(est)                      # time per iteration and peak memory, 90 % intervals, breakdown, top layers
    abacus.max_batch(model, input_size=(3, 224, 224), memory="8GiB")
    abacus.plan(model, input_size=(3, 224, 224), memory="8GiB")      # records, or a DataFrame with pandas
    abacus.summary(model, input_size=(3, 224, 224), batch_size=32)   # per layer, training memory included

A thin binding to the C library (ctypes over libabacus.so): the model is exported in-process exactly as the
collector exports it, and every number is the library's. `model` may also be the path of an ONNX file
exported as docs/PROTOCOL.md says, or its bytes. Errors raise abacus.AbacusError with the library's message.
"""
from __future__ import annotations

import ctypes
import re
from typing import List, Optional, Sequence, Union

from . import _lib
from ._export import graph_bytes
from ._lib import AbacusError
from ._report import Estimate, LayerRow, MemoryStep, Summary, fmt_bytes, fmt_duration

__all__ = ["estimate", "max_batch", "plan", "summary", "AbacusError", "Estimate", "Summary", "LayerRow", "MemoryStep",
           "parse_bytes", "library_version", "fmt_bytes", "fmt_duration"]
__version__ = "0.6.0"


def library_version() -> str:
    return _lib.text(_lib.lib().abacus_version(None, None, None))


_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "kib": 1 << 10, "mib": 1 << 20,
          "gib": 1 << 30, "tib": 1 << 40, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}


def parse_bytes(size: Union[int, float, str]) -> int:
    """Bytes from an int or a string with a unit, as the CLI reads --mem: KB MB GB TB are SI (2.5GB =
    2.5e9 bytes); KiB MiB GiB TiB and a bare K M G T are binary (2GiB = 2G = 2 x 2^30 bytes)."""
    if isinstance(size, (int, float)) and not isinstance(size, bool):
        v = float(size)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][0-9]+)?)\s*([A-Za-z]*)\s*", str(size))
        if not m or m.group(2).lower() not in _UNITS:
            raise ValueError(f"memory={size!r}: give bytes or a number with a unit (512MiB, 16GiB, 8G, 2.5GB)")
        v = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not v >= 1 or v > 2**62:
        raise ValueError(f"memory={size!r}: must be at least one byte and below 4 EiB")
    return int(v)


def _optimizer_name(optimizer) -> str:
    """'sgd' or 'adam' from a name or a torch / keras optimizer object."""
    if isinstance(optimizer, str):
        return optimizer
    cls = type(optimizer).__name__.lower()
    if cls in ("adam", "adamw"):
        return "adam"
    if cls == "sgd":
        groups = getattr(optimizer, "param_groups", None)
        if groups is not None and not any(g.get("momentum", 0) for g in groups):
            import warnings
            warnings.warn("Abacus prices SGD with momentum (one buffer per parameter); this SGD has none, so the "
                          "predicted memory is high by about one copy of the weights", stacklevel=3)
        return "sgd"
    raise AbacusError(f"optimizer {type(optimizer).__name__}: Abacus prices 'sgd' (with momentum) and 'adam' "
                      "(Adam, AdamW); pass one of those names")


class _Session:
    """One loaded graph, predictor and configuration; frees what the library allocated."""

    _predictors = {}

    def __init__(self, model, input_size, seq_len, vocab, batch_size, optimizer, hw, machine, model_file,
                 runtime):
        L = _lib.lib()
        self.L, self.err = L, _lib.Error()
        self.graph, self.machine, self.hw = ctypes.c_void_p(), ctypes.c_void_p(), hw
        data, self.name = graph_bytes(model, input_size, seq_len, vocab)
        path = model_file or _lib.default_model_path()
        self.predictor = self._predictor(path)
        self.cfg = _lib.Config()
        L.abacus_config_init(ctypes.byref(self.cfg), _lib.CONFIG_VERSION)
        if batch_size is not None:
            if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
                raise ValueError(f"batch_size={batch_size!r}: must be a positive integer")
            self.cfg.batch = batch_size
        opt = ctypes.c_int()
        self.opt_name = _optimizer_name(optimizer)
        _lib.check(L.abacus_parse_optimizer(ctypes.byref(opt), self.opt_name.encode(), ctypes.byref(self.err)),
                   self.err)
        self.cfg.optimizer = opt.value
        self._runtime = runtime.encode() if runtime else None  # kept alive: the config points at it
        self.cfg.runtime = self._runtime
        _lib.check(L.abacus_graph_load(ctypes.byref(self.graph), data, len(data), ctypes.byref(self.err)), self.err)
        if machine:
            _lib.check(L.abacus_machine_load_file(ctypes.byref(self.machine), str(machine).encode(),
                                                  ctypes.byref(self.err)), self.err)
        # The machine's threads and vector ISA (memory depends on them: without AVX a convolution's backward
        # holds an im2col scratchpad per thread); the config points into these bytes, kept alive here.
        self._machine_key = L.abacus_machine_id(self.machine) if machine else (hw.encode() if hw else None)
        L.abacus_config_hw(ctypes.byref(self.cfg), self._machine_key)
        if machine:
            self.cfg.threads = L.abacus_machine_threads(self.machine)

    def _predictor(self, path):
        p = _Session._predictors.get(path)
        if p is None:
            p = ctypes.c_void_p()
            _lib.check(self.L.abacus_predictor_load_file(ctypes.byref(p), path.encode(), ctypes.byref(self.err)),
                       self.err)
            _Session._predictors[path] = p  # bundles are immutable: kept for the process
        return p

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.L.abacus_machine_free(self.machine)
        self.L.abacus_graph_free(self.graph)

    def analyze(self, batch: Optional[int] = None):
        cfg = _lib.Config.from_buffer_copy(self.cfg)
        if batch is not None:
            cfg.batch = batch
        a = ctypes.c_void_p()
        _lib.check(self.L.abacus_analyze(ctypes.byref(a), self.graph, ctypes.byref(cfg), ctypes.byref(self.err)),
                   self.err)
        return a

    def predict(self, a) -> _lib.Prediction:
        pr = _lib.Prediction()
        if self.machine:
            rc = self.L.abacus_predict_machine(ctypes.byref(pr), self.predictor, a, self.machine, 0.0,
                                               ctypes.byref(self.err))
        else:
            rc = self.L.abacus_predict(ctypes.byref(pr), self.predictor, a,
                                       self.hw.encode() if self.hw else None, 0.0, ctypes.byref(self.err))
        _lib.check(rc, self.err)
        return pr

    def shares(self, a, pr):
        """Per-layer time shares on the hardware id of the prediction (the machine's thread count)."""
        hw = _lib.text(pr.hw)
        if self.machine:
            hw = f"cpu{self.L.abacus_machine_threads(self.machine)}"
            if not self.L.abacus_predictor_calib(self.predictor, hw.encode()) > 0:
                hw = None
        n = self.L.abacus_analysis_n_layers(a)
        share = (ctypes.c_double * max(n, 1))()
        step = ctypes.c_double()
        _lib.check(self.L.abacus_predictor_layer_shares(share, n, ctypes.byref(step), self.predictor, a,
                                                        hw.encode() if hw else None, ctypes.byref(self.err)),
                   self.err)
        return list(share)[:n], step.value

    def layers(self, a) -> List[LayerRow]:
        L = self.L
        out = []
        for i in range(L.abacus_analysis_n_layers(a)):
            lay = L.abacus_analysis_layer(a, i).contents
            out.append(LayerRow(name=_lib.text(lay.name), op=_lib.text(lay.op),
                                category=_lib.text(L.abacus_category_name(lay.category)),
                                output_shape=tuple(lay.dims[:lay.rank]), params=lay.params,
                                forward_flops=lay.forward_flops, backward_flops=lay.backward_flops,
                                saved_bytes=lay.saved_bytes, output_bytes=lay.output_bytes, known=bool(lay.known)))
        return out

    def timeline(self, a, layers: List[LayerRow]) -> List[MemoryStep]:
        L = self.L
        out = []
        for i in range(L.abacus_analysis_n_memory_steps(a)):
            e = L.abacus_analysis_memory_step(a, i).contents
            out.append(MemoryStep(phase=_lib.text(L.abacus_phase_name(e.phase)),
                                  layer=layers[e.layer].name if 0 <= e.layer < len(layers) else None,
                                  peak_bytes=e.peak, live_bytes=e.live))
        return out


def _session(model, input_size, seq_len, vocab, batch_size, optimizer, hw, machine, model_file, runtime):
    return _Session(model, input_size, seq_len, vocab, batch_size, optimizer, hw, machine, model_file, runtime)


def estimate(model, input_size: Optional[Sequence[int]] = None, seq_len: Optional[int] = None, batch_size: int = 32,
             optimizer="sgd", hw: Optional[str] = None, machine: Optional[str] = None, *, vocab: Optional[int] = None,
             model_file: Optional[str] = None, runtime: Optional[str] = None, top: int = 10) -> Estimate:
    """Predicts one training iteration of `model` (time and peak memory, each with its 90 % interval).

    model       a torch.nn.Module, the path of an ONNX training graph, or its bytes
    input_size  one sample's shape without the batch, e.g. (3, 224, 224); or seq_len=L for token models
                (the vocabulary comes from the first nn.Embedding, or vocab=N)
    optimizer   "sgd" (with momentum), "adam", or a torch.optim.SGD/Adam/AdamW object
    hw          a hardware id the predictor was trained on ("cpu1", "cpu2"; default the first)
    machine     a machine profile file (`abacus calibrate --out FILE`): priced from that machine's rates
    model_file  a predictor bundle (default: the bundled one, or $ABACUS_MODEL)
    """
    with _session(model, input_size, seq_len, vocab, batch_size, optimizer, hw, machine, model_file,
                  runtime) as s:
        a = s.analyze()
        try:
            pr = s.predict(a)
            shares, step = s.shares(a, pr)
            mem = s.L.abacus_analysis_memory(a).contents
            tot = s.L.abacus_analysis_totals(a).contents
            unknown = [_lib.text(s.L.abacus_analysis_unknown(a, i, None))
                       for i in range(s.L.abacus_analysis_n_unknown(a))]
            layers = s.layers(a)
            return Estimate.from_library(s.name, s.cfg.batch, s.opt_name, pr, mem, tot, layers, shares, step,
                                         top, unknown, machine, s.timeline(a, layers))
        finally:
            s.L.abacus_analysis_free(a)


def max_batch(model, input_size: Optional[Sequence[int]] = None, memory: Union[int, str] = "8GiB",
              optimizer="sgd", seq_len: Optional[int] = None, hw: Optional[str] = None, *,
              largest: int = 65536, vocab: Optional[int] = None, model_file: Optional[str] = None,
              runtime: Optional[str] = None) -> int:
    """The largest batch (up to `largest`) whose predicted peak memory, at the upper end of its 90 %
    interval, fits in `memory` (bytes, or "8GiB", "512MiB", "16G", "2.5GB"); 0 when batch 1 does not fit.
    The same search as `abacus plan`."""
    budget = parse_bytes(memory)
    with _session(model, input_size, seq_len, vocab, None, optimizer, hw, None, model_file, runtime) as s:
        out = ctypes.c_int64()
        _lib.check(s.L.abacus_max_batch(ctypes.byref(out), s.predictor, s.graph, ctypes.byref(s.cfg),
                                        hw.encode() if hw else None, budget, int(largest), ctypes.byref(s.err)),
                   s.err)
        return out.value


def plan(model, input_size: Optional[Sequence[int]] = None, memory: Union[int, str] = "8GiB", optimizer="sgd",
         seq_len: Optional[int] = None, hw: Optional[str] = None, *, samples: int = 50000, largest: int = 65536,
         vocab: Optional[int] = None, model_file: Optional[str] = None, runtime: Optional[str] = None,
         as_dataframe: Optional[bool] = None):
    """The `abacus plan` table: the batches around the largest that fits `memory`, each with time per
    iteration, throughput, time per epoch of `samples`, memory with its interval and a verdict (fits: the
    upper end fits; risky: only the prediction fits; does not fit). A pandas DataFrame when pandas is
    installed (as_dataframe=None) or asked for, else a list of dicts."""
    budget = parse_bytes(memory)
    good = max_batch(model, input_size, budget, optimizer, seq_len, hw, largest=largest, vocab=vocab,
                     model_file=model_file, runtime=runtime)
    if good == 0:
        raise AbacusError(f"batch 1 does not fit in {fmt_bytes(budget)} at the upper end of its 90 % interval "
                          "(see abacus.estimate(..., batch_size=1) for what it needs)")
    batches = (ctypes.c_int64 * 66)()
    n = _lib.lib().abacus_plan_batches(batches, 66, good, int(largest))
    rows = []
    with _session(model, input_size, seq_len, vocab, None, optimizer, hw, None, model_file, runtime) as s:
        for b in batches[:n]:
            a = s.analyze(b)
            try:
                pr = s.predict(a)
            finally:
                s.L.abacus_analysis_free(a)
            epoch = -(-samples // b) * pr.time_s
            rows.append({"batch": b, "time_s": pr.time_s, "throughput": b / pr.time_s, "epoch_s": epoch,
                         "memory_bytes": pr.memory_bytes, "memory_lo_bytes": pr.memory_lo_bytes,
                         "memory_hi_bytes": pr.memory_hi_bytes,
                         "verdict": "fits" if pr.memory_hi_bytes <= budget
                         else "risky" if pr.memory_bytes <= budget else "does not fit",
                         "largest_fitting": b == good})
    if as_dataframe is False:
        return rows
    try:
        import pandas
    except ImportError:
        if as_dataframe:
            raise AbacusError("as_dataframe=True needs pandas: pip install pandas")
        return rows
    return pandas.DataFrame(rows)


def summary(model, input_size: Optional[Sequence[int]] = None, batch_size: int = 32, optimizer="sgd",
            seq_len: Optional[int] = None, hw: Optional[str] = None, *, vocab: Optional[int] = None,
            model_file: Optional[str] = None, runtime: Optional[str] = None) -> Summary:
    """Per-layer table in the spirit of torchinfo's: output shape, parameters, FLOPs, the activation bytes
    each layer keeps for backward (its training memory), its predicted share of the iteration's time; and the
    totals with the predicted peak memory."""
    est = estimate(model, input_size, seq_len, batch_size, optimizer, hw, vocab=vocab, model_file=model_file,
                   runtime=runtime, top=0)
    return Summary(est)
