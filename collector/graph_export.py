"""Export a PyTorch module's training-mode graph the way Abacus reads it (docs/PROTOCOL.md, "Graphs").

The one place that turns an nn.Module into the graph Abacus analyses: collector/export_onnx.py uses it for
the zoo, and the Python package (python/abacus) vendors this file at build time so that
`abacus.estimate(model, ...)` sees exactly the graph `abacus predict` sees for the collector's export.
It imports only torch and onnx (never the zoo), so that it can travel on its own.

  m, info = export_module(model, example_input)   # an onnx.ModelProto with stripped weights

model.train(); torch.onnx.export(..., training=TRAINING, do_constant_folding=False, opset_version=14,
dynamic batch axis; its common-subexpression pass off, `_no_cse`, and Tensor.detach() written as
ai.abacus StopGradient, `_detach_symbolic`); then the weights are stripped: floating-point initializers lose their data (dims and
data_type kept), integer initializers with at most 1024 elements are kept as they are (shape constants),
larger ones lose their data too.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

import onnx
import onnx.numpy_helper
import torch
from onnx import TensorProto

OPSET = 14
# What a graph's metadata `abacus.export` says of the export that made it (collector/export_onnx.py writes it):
# 2 since 2026-12-06 (the common-subexpression pass off, detach() as StopGradient), 3 since 2026-12-07 (the
# info key abacus.inplace_views); graphs without the key are of the export before. A tool that reuses graphs
# it exported earlier exports again when they differ.
EXPORT_VERSION = 3
TRACE_BATCH = 2  # batch used while tracing; the batch axis is exported as dynamic ('batch')
KEEP_INT_ELEMS = 1024

FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16,
               TensorProto.COMPLEX64, TensorProto.COMPLEX128}


# ---------------------------------------------------------------------------------------------
# Symbolic for aten::bernoulli with a float probability (torchvision's StochasticDepth does
# torch.empty(shape).bernoulli_(p)). torch 1.13 only handles bernoulli(Tensor p) and opset 14 has
# no Bernoulli op, so emit the exact training-mode equivalent:
#   Cast(Less(RandomUniformLike(x, 0, 1), p), to=dtype(x))
# i.e. the same ops torch's own bernoulli(Tensor) symbolic uses.
# ---------------------------------------------------------------------------------------------
def _bernoulli_symbolic(g, input, *args):
    from torch.onnx import symbolic_helper as sh
    # aten::bernoulli(Tensor self, Generator? gen) or aten::bernoulli(Tensor self, float p, Generator?)
    p = None
    if args and not sh._is_none(args[0]):
        try:
            p = sh._maybe_get_const(args[0], "f")
        except Exception:  # noqa: BLE001
            p = args[0]
    u = g.op("RandomUniformLike", input, high_f=1.0, low_f=0.0)
    if p is None or (not isinstance(p, float) and sh._is_value(p) and
                     p.type().kind() == "GeneratorType"):
        thr = input  # bernoulli(Tensor probs)
    elif isinstance(p, (float, int)):
        thr = g.op("Constant", value_t=torch.tensor(float(p), dtype=torch.float32))
    else:
        thr = p
    return g.op("Cast", g.op("Less", u, thr), to_i=TensorProto.FLOAT)


# ---------------------------------------------------------------------------------------------
# Symbolic for aten::adaptive_avg_pool2d. torch 1.13 exports it only when the output is 1×1
# (GlobalAveragePool) or divides the input (AveragePool); AlexNet and VGG at small input sizes pool
# a 1×1 or 2×2 map to 6×6 or 7×7 and fail. Adaptive average pooling is linear and separable, so the
# exact general case is y = A_h · x · A_wᵀ with constant averaging matrices (row i of A_h averages
# input rows floor(i·H/oh) .. ceil((i+1)·H/oh) − 1, as PyTorch's kernel does).
# ---------------------------------------------------------------------------------------------
def _pool_matrix(n_in: int, n_out: int) -> torch.Tensor:
    a = torch.zeros(n_out, n_in, dtype=torch.float32)
    for i in range(n_out):
        s = (i * n_in) // n_out
        e = -((-(i + 1) * n_in) // n_out)
        a[i, s:e] = 1.0 / (e - s)
    return a


def _adaptive_avg_pool2d_symbolic(g, input, output_size):
    from torch.onnx import symbolic_helper as sh
    out = sh._parse_arg(output_size, "is")
    sizes = sh._get_tensor_sizes(input)
    if isinstance(out, int):
        out = [out, out]
    if list(out) == [1, 1]:
        return g.op("GlobalAveragePool", input)
    if not sizes or sizes[-1] is None or sizes[-2] is None:
        return sh._unimplemented("adaptive_avg_pool2d", "input spatial size unknown at export")
    h, w = sizes[-2], sizes[-1]
    oh, ow = (o if o is not None else d for o, d in zip(out, (h, w)))
    if h % oh == 0 and w % ow == 0:
        k = [h // oh, w // ow]
        return g.op("AveragePool", input, kernel_shape_i=k, strides_i=k)
    a_h = g.op("Constant", value_t=_pool_matrix(h, oh))
    a_wt = g.op("Constant", value_t=_pool_matrix(w, ow).t().contiguous())
    return g.op("MatMul", a_h, g.op("MatMul", input, a_wt))


# aten::zero (from Tensor.zero_(); Swin V2 zeroes the K part of a cloned qkv bias in every
# attention call) has no symbolic in torch 1.13: emit ConstantOfShape(Shape(x), 0) of x's dtype.
def _zero_symbolic(g, input, *args):
    from torch.onnx import symbolic_helper as sh
    dtype = sh._try_get_scalar_type(input) or "Float"
    tdt = {"Float": torch.float32, "Double": torch.float64, "Half": torch.float16,
           "Long": torch.int64, "Int": torch.int32}.get(dtype, torch.float32)
    return g.op("ConstantOfShape", g.op("Shape", input), value_t=torch.zeros(1, dtype=tdt))


# aten::detach (Tensor.detach(): a straight-through estimator's z.detach(), capsule routing's uh.detach()):
# torch 1.13's symbolic drops it (ONNX graphs are for inference), and the graph then has a gradient flow
# that training does not: every op downstream of a detached tensor looked as if it saved its inputs for a
# backward that never runs (the capsule network of scripts/outside_zoo.py, batch 4: 11.7 MiB simulated
# saved activations against 1.1 MiB saved by PyTorch). It becomes StopGradient in Abacus's own domain
# (STOP_GRADIENT_DOMAIN; torch imports it at version 1 where a graph uses it): a view whose output requires
# no gradient (src/ops.c).
STOP_GRADIENT_DOMAIN = "ai.abacus"


def _detach_symbolic(g, input):
    out = g.op(f"{STOP_GRADIENT_DOMAIN}::StopGradient", input)
    out.setType(input.type())
    return out


_REGISTERED = False


def _register_symbolics():
    global _REGISTERED
    if _REGISTERED:
        return
    torch.onnx.register_custom_op_symbolic("aten::bernoulli", _bernoulli_symbolic, OPSET)
    torch.onnx.register_custom_op_symbolic("aten::zero", _zero_symbolic, OPSET)
    torch.onnx.register_custom_op_symbolic("aten::adaptive_avg_pool2d", _adaptive_avg_pool2d_symbolic, OPSET)
    torch.onnx.register_custom_op_symbolic("aten::detach", _detach_symbolic, OPSET)
    _REGISTERED = True


# ---------------------------------------------------------------------------------------------
def strip_weights(model: onnx.ModelProto) -> Tuple[int, int]:
    """Remove initializer data in place. Returns (stripped, kept) counts."""
    stripped = kept = 0
    for t in model.graph.initializer:
        n = 1
        for d in t.dims:
            n *= d
        if t.data_type not in FLOAT_TYPES and n <= KEEP_INT_ELEMS and t.data_location != TensorProto.EXTERNAL:
            kept += 1
            continue
        for f in ("raw_data", "float_data", "double_data", "int32_data", "int64_data",
                  "uint64_data", "string_data", "external_data"):
            t.ClearField(f)
        t.data_location = TensorProto.DEFAULT
        stripped += 1
    return stripped, kept


def count_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def set_meta(model: onnx.ModelProto, kv: Dict[str, str]):
    for k, v in kv.items():
        e = model.metadata_props.add()
        e.key, e.value = k, str(v)


def inplace_view_modules(model: torch.nn.Module, x) -> List[str]:
    """Qualified names of the modules that run in place (`inplace=True`: ReLU, SiLU, Mish, ...) on a view of
    another tensor (a permute's output: LayerNorm over channels written as permute, LayerNorm, permute back).
    An ONNX graph cannot say that an operator runs in place, and PyTorch's autograd backs such an operator
    with CopySlices, whose backward holds two more tensors of the output's size (measured 2026-12-07 with the
    allocator tracker: docs/COSTS.md); in place on a tensor that is no view it costs nothing more.
    One forward pass on the example input, called as torch.onnx.export calls the model (a tuple: positional
    arguments, a trailing dict: keyword arguments), with autograd on as in the trace."""
    found = []

    def pre(mod, args, name=None):
        t = args[0] if args else None
        if isinstance(t, torch.Tensor) and t._base is not None:
            found.append(name)

    hooks = [mod.register_forward_pre_hook(lambda m, a, n=name: pre(m, a, n))
             for name, mod in model.named_modules() if getattr(mod, "inplace", False) is True]
    if not hooks:
        return []
    args, kwargs = (x, {}) if not isinstance(x, tuple) else \
        (x[:-1], x[-1]) if x and isinstance(x[-1], dict) else (x, {})
    try:
        model(*args, **kwargs) if isinstance(x, tuple) else model(x)
    finally:
        for h in hooks:
            h.remove()
    return sorted(set(found))


def node_module(node_name: str) -> str:
    """The qualified module name of an ONNX node that torch.onnx.export named by its scopes: each scope is
    written relative to the last one it extends ('/stages/stages.0/body/body.0/body.0.2/Relu' is module
    'stages.0.body.0.2'); '' for a node of the top module."""
    parts = node_name.strip("/").split("/")[:-1]
    full, last = "", ""
    for c in parts:
        if last and c.startswith(last + "."):
            full += c[len(last):]
        else:
            full = f"{full}.{c}" if full else c
        last = c
    return full


def inplace_view_nodes(m: onnx.ModelProto, modules: Sequence[str]) -> List[str]:
    """The ONNX nodes that compute the output of each module in `modules` (the last node of its scope, in
    graph order: Mul of Mish's Softplus, Tanh, Mul). Raises if a module has no node: the metadata would
    silently say less than the model does."""
    want = set(modules)
    last = {}
    for n in m.graph.node:
        mod = node_module(n.name)
        if mod in want:
            last[mod] = n.name
    missing = want - set(last)
    if missing:
        raise RuntimeError(f"in-place modules with no node in the exported graph: {sorted(missing)[:5]}")
    names = [last[mod] for mod in modules]
    if any("," in n for n in names):
        raise RuntimeError(f"a node name holds a comma, which abacus.inplace_views separates: {names}")
    return names


def _output_batch_dynamic(model: onnx.ModelProto) -> bool:
    out = model.graph.output[0].type.tensor_type.shape
    return len(out.dim) > 0 and out.dim[0].dim_param == "batch"


def _inputs_to_initializers(m: onnx.ModelProto, model: torch.nn.Module) -> bool:
    """For a graph exported with export_params=False: turn every graph input except 'input' into an
    initializer without data (dims and type from the input's type), which is exactly what the
    export with parameters followed by strip_weights gives (the node graph is the same: torch
    builds it from the same params_dict and only leaves the values out). Integer tensors of at
    most KEEP_INT_ELEMS elements get their values from the module's state_dict. Returns False
    (caller then exports with parameters) if a value cannot be recovered or a dim is not static."""
    state = dict(model.state_dict())
    keep, inits = [], []
    for vi in m.graph.input:
        if vi.name == "input":
            keep.append(vi)
            continue
        tt = vi.type.tensor_type
        dims = []
        for d in tt.shape.dim:
            if not d.HasField("dim_value"):
                return False
            dims.append(d.dim_value)
        n = 1
        for d in dims:
            n *= d
        if tt.elem_type not in FLOAT_TYPES and n <= KEEP_INT_ELEMS:
            if vi.name not in state:
                return False
            t = onnx.numpy_helper.from_array(state[vi.name].detach().cpu().numpy(), vi.name)
        else:
            t = TensorProto(name=vi.name, data_type=tt.elem_type, dims=dims)
        inits.append(t)
    del m.graph.input[:]
    m.graph.input.extend(keep)
    m.graph.initializer.extend(inits)
    return True


@contextlib.contextmanager
def _no_cse():
    """torch.onnx.export with its common-subexpression pass off. The trace records every op that training
    runs; the pass then merges ops that compute the same value from the same inputs, so a module applied
    twice to one tensor (a Perceiver's shared cross attention re-normalising and re-projecting the same
    tokens at each pass) became one node, while PyTorch runs it, and saves its tensors for backward, twice:
    the Perceiver of scripts/outside_zoo.py lost 1.3 MiB of saved activations, its peak simulated 8.6 %
    low (batch 4, L256; 1.5 % low with the pass off). The graph must be what the step runs."""
    orig = torch._C._jit_pass_cse
    torch._C._jit_pass_cse = lambda graph: False
    try:
        yield
    finally:
        torch._C._jit_pass_cse = orig


def export_module(model: torch.nn.Module, x, notes: Optional[List[str]] = None, fast: bool = True,
                  workdir: Optional[str] = None) -> Tuple[onnx.ModelProto, dict]:
    """Trace `model` in training mode on the example input `x` (batch TRACE_BATCH; the batch axis is
    exported as dynamic) and strip its weights. Returns the graph, without metadata, and facts about it:
    params, float_buffers (the floating-point buffers, which look like weights in the graph: the caller
    names them in the metadata key abacus.buffers so that Abacus counts them as buffers), stripped,
    kept_int, notes (`notes` first, then what the export saw), ops, seconds, inplace_views (the nodes of
    modules that run in place on a view: inplace_view_modules; the caller writes them, comma-separated, to the
    metadata key abacus.inplace_views).

    fast=True traces with export_params=False and rebuilds the (data-less) initializers from the
    parameter inputs: the same graph as fast=False (export with weights, then strip) but without
    serialising the weights (3 s per 100 MB here). The trace goes through a temporary folder inside
    `workdir` (default: the system's), removed afterwards. Raises on failure."""
    _register_symbolics()
    model.train()
    params = count_params(model)
    inplace_views = inplace_view_modules(model, x)
    float_buffers = sorted(n for n, b in model.named_buffers() if b.is_floating_point())
    if workdir:
        os.makedirs(workdir, exist_ok=True)
    tmpdir = tempfile.mkdtemp(prefix=".export-", dir=workdir)
    t0 = time.time()
    try:
        raw = os.path.join(tmpdir, "model.onnx")
        kw = dict(
            training=torch.onnx.TrainingMode.TRAINING,
            do_constant_folding=False,
            opset_version=OPSET,
            input_names=["input"], output_names=["output"],
            dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
        )
        m = None
        with _no_cse(), warnings.catch_warnings():
            # torch has no shape rule for StopGradient (_detach_symbolic sets its output's type itself)
            warnings.filterwarnings("ignore", message="The shape inference of ai.abacus::StopGradient")
            if fast:
                torch.onnx.export(model, x, raw, export_params=False, **kw)
                m = onnx.load(raw, load_external_data=False)
                if not _inputs_to_initializers(m, model):
                    m = None
            if m is None:
                torch.onnx.export(model, x, raw, **kw)
                m = onnx.load(raw, load_external_data=False)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    ext = any(t.data_location == TensorProto.EXTERNAL for t in m.graph.initializer)
    stripped, kept = strip_weights(m)
    notes = list(notes or [])
    if ext:
        notes.append("exported-with-external-data(>2GB)")
    ops = sorted({n.op_type if not n.domain else f"{n.domain}::{n.op_type}" for n in m.graph.node})
    for op in ("RandomUniformLike", "RandomUniform", "RandomNormalLike", "Bernoulli", "If",
               "Loop", "Scan", "ScatterND", "ScatterElements", "Einsum"):
        if op in ops:
            notes.append(op)
    try:
        inf = onnx.shape_inference.infer_shapes(m)
        if not _output_batch_dynamic(inf):
            notes.append("output-batch-not-symbolic")
    except Exception as e:  # noqa: BLE001
        notes.append(f"shape-inference-failed:{type(e).__name__}")
    return m, {"params": params, "float_buffers": float_buffers, "inplace_views": inplace_view_nodes(m, inplace_views),
               "stripped": stripped, "kept_int": kept,
               "notes": notes, "ops": ops, "seconds": round(time.time() - t0, 1)}
