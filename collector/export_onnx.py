"""Export the training-mode ONNX graphs that Abacus reads (docs/PROTOCOL.md, "Graphs").

  /usr/bin/python3 -m collector.export_onnx --models all|a,b,c --sizes 224|all|32,64|L128 \
      --out data/graphs [--force]

Per (network, size): model.train(); torch.onnx.export(..., training=TRAINING,
do_constant_folding=False, opset_version=14, dynamic batch axis); then the weights are stripped:
floating-point initializers lose their data (dims and data_type kept), integer initializers with
at most 1024 elements are kept as they are (shape constants), larger ones lose their data too.

Files: {out}/{name}-{size}.onnx (images), {out}/{name}-L{len}.onnx (token models); written
atomically (temp file + rename); existing files are skipped unless --force.
Each graph carries metadata_props: abacus.network, abacus.kind, abacus.size, abacus.params,
abacus.trace_batch, torch, torchvision, abacus.notes.
Also maintained in {out}: index.tsv (one line per exported graph), failures.tsv (exports that
failed, with the error) and ops.tsv (op_type, graphs containing it, an example graph).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

import onnx
import onnx.numpy_helper
import torch
import torchvision
from onnx import TensorProto

try:
    from collector import zoo
except ModuleNotFoundError as e:  # run as a script: the package is not importable from here
    if e.name != "collector":
        raise
    sys.exit("collector/export_onnx.py is a module of the collector package: run it from the repository root "
             "as '/usr/bin/python3 -m collector.export_onnx ...'")

OPSET = 14
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


_REGISTERED = False


def _register_symbolics():
    global _REGISTERED
    if _REGISTERED:
        return
    torch.onnx.register_custom_op_symbolic("aten::bernoulli", _bernoulli_symbolic, OPSET)
    torch.onnx.register_custom_op_symbolic("aten::zero", _zero_symbolic, OPSET)
    torch.onnx.register_custom_op_symbolic("aten::adaptive_avg_pool2d", _adaptive_avg_pool2d_symbolic, OPSET)
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


def _set_meta(model: onnx.ModelProto, kv: Dict[str, str]):
    for k, v in kv.items():
        e = model.metadata_props.add()
        e.key, e.value = k, str(v)


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


def export_graph(name: str, size: int, path: str, fast: bool = True) -> dict:
    """Export network `name` at input size `size` (image side or sequence length) to `path`.

    fast=True traces with export_params=False and rebuilds the (data-less) initializers from the
    parameter inputs: the same file as fast=False (export with weights, then strip) but without
    serialising the weights (3 s per 100 MB here). Raises on failure. Returns facts about the graph."""
    _register_symbolics()
    net = zoo.get(name)
    torch.manual_seed(0)
    model = net.build(size)
    model.train()
    x = net.make_input(TRACE_BATCH, size)
    params = count_params(model)
    # Floating-point buffers (e.g. Swin V2's relative_coords_table) look like weights in the graph; name
    # them so that Abacus counts them as buffers, not parameters (metadata key abacus.buffers).
    float_buffers = sorted(n for n, b in model.named_buffers() if b.is_floating_point())
    out_dir = os.path.dirname(os.path.abspath(path))
    os.makedirs(out_dir, exist_ok=True)
    tmpdir = tempfile.mkdtemp(prefix=".export-", dir=out_dir)
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
        if fast:
            torch.onnx.export(model, x, raw, export_params=False, **kw)
            m = onnx.load(raw, load_external_data=False)
            if not _inputs_to_initializers(m, model):
                m = None
        if m is None:
            torch.onnx.export(model, x, raw, **kw)
            m = onnx.load(raw, load_external_data=False)
        del model
        ext = any(t.data_location == TensorProto.EXTERNAL for t in m.graph.initializer)
        stripped, kept = strip_weights(m)
        notes = []
        if net.min_batch(size) > 1:
            notes.append(f"min_batch={net.min_batch(size)}")
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
        _set_meta(m, {
            "abacus.network": name, "abacus.kind": net.kind, "abacus.size": size,
            "abacus.params": params, "abacus.trace_batch": TRACE_BATCH,
            "abacus.min_batch": net.min_batch(size),
            "torch": torch.__version__, "torchvision": torchvision.__version__,
            "abacus.notes": ",".join(notes),
            "abacus.buffers": ",".join(float_buffers),
        })
        tmp = f"{path}.tmp.{os.getpid()}"
        onnx.save(m, tmp)
        os.replace(tmp, path)
        info = {
            "file": os.path.basename(path), "name": name, "kind": net.kind, "size": size,
            "params": params, "nodes": len(m.graph.node), "initializers": len(m.graph.initializer),
            "stripped": stripped, "kept_int": kept, "bytes": os.path.getsize(path),
            "seconds": round(time.time() - t0, 1), "notes": ",".join(notes), "ops": ops,
        }
        return info
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
INDEX_COLS = ["file", "name", "kind", "size", "params", "nodes", "initializers", "stripped",
              "kept_int", "bytes", "seconds", "notes"]


def _read_tsv(path: str) -> Tuple[List[str], List[List[str]]]:
    if not os.path.exists(path):
        return [], []
    with open(path) as f:
        lines = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    return (lines[0], lines[1:]) if lines else ([], [])


def _write_tsv(path: str, header: Sequence[str], rows: Sequence[Sequence], key=None):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write("\t".join(header) + "\n")
        for r in sorted(rows, key=key) if key else rows:
            f.write("\t".join(str(c) for c in r) + "\n")
    os.replace(tmp, path)


def _upsert(path: str, header: List[str], row: List, keycols: int = 1, remove=False):
    if remove and not os.path.exists(path):
        return
    _, rows = _read_tsv(path)
    k = [str(c) for c in row[:keycols]]
    rows = [r for r in rows if r[:keycols] != k]
    if not remove:
        rows.append([str(c) for c in row])
    _write_tsv(path, header, rows, key=lambda r: r[:keycols])


def write_ops_table(out: str) -> Dict[str, Tuple[int, str]]:
    """Scan every graph in `out`; write ops.tsv (op_type, graphs, example)."""
    table: Dict[str, List] = {}
    for fn in sorted(os.listdir(out)):
        if not fn.endswith(".onnx"):
            continue
        m = onnx.load(os.path.join(out, fn), load_external_data=False)
        for op in {n.op_type if not n.domain else f"{n.domain}::{n.op_type}" for n in m.graph.node}:
            e = table.setdefault(op, [0, fn])
            e[0] += 1
    rows = sorted(([op, c, ex] for op, (c, ex) in table.items()), key=lambda r: (-r[1], r[0]))
    _write_tsv(os.path.join(out, "ops.tsv"), ["op_type", "graphs", "example"], rows)
    return {r[0]: (r[1], r[2]) for r in rows}


def _parse_sizes(spec: str, net: zoo.Net) -> List[int]:
    valid = net.all_sizes  # includes sizes that train at batch >= 2 only
    if spec == "all":
        return valid
    if spec == "valid":
        return net.sizes
    want = set()
    for s in spec.split(","):
        s = s.strip()
        if not s:
            continue
        want.add(int(s[1:]) if s[0] in "Ll" else int(s))
    return [s for s in valid if s in want]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="all", help="all or a comma-separated list")
    ap.add_argument("--sizes", default="224",
                    help="all (incl. sizes valid at batch>=2 only), valid (batch 1 works), or a comma "
                         "list of image sides / L-lengths")
    ap.add_argument("--out", default="data/graphs")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--no-ops-table", action="store_true")
    ap.add_argument("--verbose", action="store_true", help="show torch.onnx warnings")
    a = ap.parse_args(argv)
    if not a.verbose:  # torch.onnx is chatty (num_batches_tracked mutation, tracer warnings)
        warnings.filterwarnings("ignore", category=UserWarning)
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    names = zoo.NAMES if a.models == "all" else [n.strip() for n in a.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in zoo.REGISTRY]
    if unknown:
        ap.error(f"unknown networks: {unknown}")
    os.makedirs(a.out, exist_ok=True)
    index = os.path.join(a.out, "index.tsv")
    failures = os.path.join(a.out, "failures.tsv")
    n_ok = n_skip = n_fail = 0
    t_all = time.time()
    for name in names:
        net = zoo.get(name)
        for size in _parse_sizes(a.sizes, net):
            path = os.path.join(a.out, net.graph_file(size))
            if os.path.exists(path) and not a.force:
                n_skip += 1
                continue
            try:
                info = export_graph(name, size, path)
            except Exception as e:  # noqa: BLE001 - failures are data
                n_fail += 1
                msg = f"{type(e).__name__}: {' '.join(str(e).split())}"[:500]
                print(f"FAIL {net.graph_file(size)}: {msg}", flush=True)
                traceback.print_exc(file=sys.stderr)
                _upsert(failures, ["file", "name", "size", "error"], [net.graph_file(size), name, size, msg])
                continue
            n_ok += 1
            print(f"ok   {info['file']}: {info['nodes']} nodes, {info['bytes']} B, {info['seconds']} s"
                  + (f" [{info['notes']}]" if info["notes"] else ""), flush=True)
            _upsert(index, INDEX_COLS, [info[c] for c in INDEX_COLS])
            _upsert(failures, ["file", "name", "size", "error"], [info["file"]], remove=True)
    if not a.no_ops_table:
        write_ops_table(a.out)
    print(f"done: {n_ok} exported, {n_skip} skipped, {n_fail} failed in {time.time() - t_all:.0f} s")
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
