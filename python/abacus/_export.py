"""From a framework's model object to the ONNX graph Abacus reads, in this process, with nothing left on disk.

PyTorch modules go through the collector's own export (collector/graph_export.py, vendored into the
package as _graph_export.py when it is built), so that `abacus.estimate(model)` analyses exactly the graph
`abacus predict` analyses for the collector's export of the same network. The model is traced as the
collector traces it (training mode, batch 2, dynamic batch axis); its training flags, buffers (BatchNorm's
running statistics move during a training-mode trace) and the global random state are restored afterwards.
"""
from __future__ import annotations

import importlib.util
import os
import warnings
from typing import Optional, Sequence, Tuple

from ._lib import _HERE, _REPO, AbacusError


def _graph_export():
    """The vendored export module, or the repository's when the package runs from a checkout."""
    for path in (os.path.join(_HERE, "_graph_export.py"), os.path.join(_REPO, "collector", "graph_export.py")):
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("abacus._graph_export", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod
    raise AbacusError("the graph export module is missing: reinstall the package with 'pip install ./python'")


_GE = None


def _framework(model) -> str:
    mods = [c.__module__ for c in type(model).__mro__]
    if any(m.startswith("torch.") or m == "torch" for m in mods):
        return "torch"
    if any(m.split(".")[0] in ("keras", "tf_keras", "tensorflow") for m in mods):
        return "keras"
    return ""


def _vocab(model) -> int:
    import torch
    for m in model.modules():
        if isinstance(m, torch.nn.Embedding):
            return m.num_embeddings
    raise AbacusError("seq_len= asks for a token model, but this module has no nn.Embedding to take the "
                      "vocabulary size from: pass vocab=N")


def torch_graph(model, input_size: Optional[Sequence[int]], seq_len: Optional[int],
                vocab: Optional[int]) -> Tuple[bytes, dict]:
    """The serialised training graph of a torch.nn.Module and the export's facts (params, notes...)."""
    global _GE
    import torch
    if _GE is None:
        _GE = _graph_export()
    if (input_size is None) == (seq_len is None):
        raise AbacusError("give exactly one of input_size=(C, H, W) (an input tensor's shape without the "
                          "batch) or seq_len=L (token models)")
    flags = [(m, m.training) for m in model.modules()]
    saved = [(b, b.detach().clone()) for b in model.buffers()]
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            if seq_len is not None:
                v = vocab or _vocab(model)
                x = torch.randint(0, v, (_GE.TRACE_BATCH, int(seq_len)))
            else:
                dims = tuple(int(d) for d in input_size)
                if not dims or any(d <= 0 for d in dims):
                    raise AbacusError(f"input_size={tuple(input_size)}: every dim must be a positive integer "
                                      "(the shape of one sample, without the batch)")
                x = torch.randn(_GE.TRACE_BATCH, *dims)
            try:
                with warnings.catch_warnings():  # torch.onnx's tracer warnings are about the trace, not the user
                    warnings.simplefilter("ignore")
                    m, info = _GE.export_module(model, x)
            except AbacusError:
                raise
            except Exception as e:  # noqa: BLE001 - the user's model: say what failed and what to try
                raise AbacusError(f"exporting the model to ONNX failed: {type(e).__name__}: {e}. The model must "
                                  "run forward on a batch of 2 inputs of this shape and be traceable by "
                                  "torch.onnx.export (opset 14); check input_size/seq_len") from e
    finally:
        with torch.no_grad():
            for b, v in saved:
                b.copy_(v)
        for mod, t in flags:
            mod.training = t
    _GE.set_meta(m, {"abacus.network": type(model).__name__, "abacus.params": info["params"],
                     "abacus.trace_batch": _GE.TRACE_BATCH, "torch": torch.__version__,
                     "abacus.notes": ",".join(info["notes"]), "abacus.buffers": ",".join(info["float_buffers"]),
                     "abacus.inplace_views": ",".join(info["inplace_views"])})
    return m.SerializeToString(), info


def graph_bytes(model, input_size, seq_len, vocab) -> Tuple[bytes, str]:
    """ONNX bytes and a display name for a model object, an ONNX file path or ONNX bytes."""
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        try:
            with open(path, "rb") as f:
                return f.read(), path
        except OSError as e:
            raise AbacusError(f"cannot read the ONNX file: {e.strerror}", path) from e
    if isinstance(model, (bytes, bytearray)):
        return bytes(model), "<onnx bytes>"
    fw = _framework(model)
    if fw == "torch":
        import torch
        if not isinstance(model, torch.nn.Module):
            raise AbacusError(f"{type(model).__name__} is a torch object but not a torch.nn.Module")
        data, _ = torch_graph(model, input_size, seq_len, vocab)
        return data, type(model).__name__
    if fw == "keras":
        raise AbacusError("Keras models are priced by the TensorFlow runtime from their exported graph: in the "
                          "project's TensorFlow environment (.runtimes/tf-2.21.0, scripts/setup.sh), "
                          "collector.tf_export.export_model(model) gives the ONNX graph; save it and call "
                          "abacus.estimate(path, runtime='tf-2.21.0')")
    raise AbacusError(f"unsupported model object {type(model).__module__}.{type(model).__name__}: give a "
                      "torch.nn.Module, the path of an ONNX file exported as docs/PROTOCOL.md says, or its bytes")
