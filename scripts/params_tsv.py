#!/usr/bin/python3
"""Writes tests/data/params.tsv: for every graph under data/graphs, the parameter count PyTorch reported
when the graph was exported (sum(p.numel() for p in model.parameters()), stored in the graph's metadata
as abacus.params by collector/export_onnx.py). The C tests compare Abacus' analytic count with it, graph
by graph: most networks have one count at every size, but not all (the MLP's first layer grows with the
image).

Usage: /usr/bin/python3 scripts/params_tsv.py [data/graphs] [tests/data/params.tsv]"""
import glob
import os
import sys

import onnx


def main(graphs="data/graphs", out="tests/data/params.tsv"):
    params = {}
    for path in sorted(glob.glob(os.path.join(graphs, "*.onnx"))):
        m = onnx.load(path, load_external_data=False)
        meta = {p.key: p.value for p in m.metadata_props}
        if "abacus.network" not in meta or "abacus.params" not in meta:
            continue
        params[os.path.basename(path)] = int(meta["abacus.params"])
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        for name in sorted(params):
            f.write(f"{name}\t{params[name]}\n")
    os.replace(tmp, out)
    print(f"{len(params)} graphs -> {out}")


if __name__ == "__main__":
    main(*sys.argv[1:])
