"""Export the training-mode ONNX graphs that Abacus reads (docs/PROTOCOL.md, "Graphs").

  /usr/bin/python3 -m collector.export_onnx --models all|a,b,c --sizes 224|all|32,64|L128 \
      --out data/graphs [--force]

--models also takes generated networks (gen_cnn_s000001, ...: collector/generator.py); `all` is the zoo.

Per (network, size): model.train(); torch.onnx.export(..., training=TRAINING,
do_constant_folding=False, opset_version=14, dynamic batch axis); then the weights are stripped:
floating-point initializers lose their data (dims and data_type kept), integer initializers with
at most 1024 elements are kept as they are (shape constants), larger ones lose their data too.

Files: {out}/{name}-{size}.onnx (images), {out}/{name}-L{len}.onnx (token models); written
atomically (temp file + rename); existing files are skipped unless --force.
Each graph carries metadata_props: abacus.network, abacus.kind, abacus.size, abacus.params,
abacus.trace_batch, torch, torchvision, abacus.notes, abacus.export (graph_export.EXPORT_VERSION).
Also maintained in {out}: index.tsv (one line per exported graph), failures.tsv (exports that
failed, with the error) and ops.tsv (op_type, graphs containing it, an example graph).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
import warnings
from typing import Dict, List, Sequence, Tuple

import onnx
import torch
import torchvision

try:
    from collector import zoo
    from collector.graph_export import EXPORT_VERSION, TRACE_BATCH, export_module, set_meta
except ModuleNotFoundError as e:  # run as a script: the package is not importable from here
    if e.name != "collector":
        raise
    sys.exit("collector/export_onnx.py is a module of the collector package: run it from the repository root "
             "as '/usr/bin/python3 -m collector.export_onnx ...'")


def export_graph(name: str, size: int, path: str, fast: bool = True) -> dict:
    """Export network `name` at input size `size` (image side or sequence length) to `path` (through
    graph_export.export_module). Raises on failure. Returns facts about the graph."""
    net = zoo.get(name)
    torch.manual_seed(0)
    model = net.build(size)
    x = net.make_input(TRACE_BATCH, size)
    notes = [f"min_batch={net.min_batch(size)}"] if net.min_batch(size) > 1 else []
    out_dir = os.path.dirname(os.path.abspath(path))
    m, info = export_module(model, x, notes=notes, fast=fast, workdir=out_dir)
    del model
    set_meta(m, {
        "abacus.network": name, "abacus.kind": net.kind, "abacus.size": size,
        "abacus.params": info["params"], "abacus.trace_batch": TRACE_BATCH,
        "abacus.min_batch": net.min_batch(size),
        "torch": torch.__version__, "torchvision": torchvision.__version__,
        "abacus.notes": ",".join(info["notes"]),
        "abacus.buffers": ",".join(info["float_buffers"]),
        "abacus.inplace_views": ",".join(info["inplace_views"]),
        "abacus.export": EXPORT_VERSION,
    })
    tmp = f"{path}.tmp.{os.getpid()}"
    onnx.save(m, tmp)
    os.replace(tmp, path)
    return {
        "file": os.path.basename(path), "name": name, "kind": net.kind, "size": size,
        "params": info["params"], "nodes": len(m.graph.node), "initializers": len(m.graph.initializer),
        "stripped": info["stripped"], "kept_int": info["kept_int"], "bytes": os.path.getsize(path),
        "seconds": info["seconds"], "notes": ",".join(info["notes"]), "ops": info["ops"],
    }


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


def _generated(name: str) -> bool:
    """A generated network's name (collector/generator.py; imported only when one is asked for)."""
    if not name.startswith("gen_"):
        return False
    from collector import generator
    return generator.is_generated(name)


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
    unknown = [n for n in names if n not in zoo.REGISTRY and not _generated(n)]
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
