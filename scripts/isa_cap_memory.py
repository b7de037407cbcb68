#!/usr/bin/env python3
"""What the SSE4.1 ISA cap adds to a training iteration's peak memory, per dataset configuration.

The capped machine (ONEDNN_MAX_CPU_ISA=SSE41 ATEN_CPU_CAPABILITY=default OPENBLAS_CORETYPE=Nehalem) runs
the same PyTorch 1.13.1 as the uncapped AVX-512 one, but oneDNN (2.6, bundled) has no SSE4.1 JIT kernel
for a dense or grouped convolution's backward-data and backward-weights passes: both fall back to the
gemm-based ("x64:gemm:jit") implementation, whose scratchpad ideep allocates through PyTorch's allocator
for each execution. The rule (docs/COSTS.md, "Capped ISA (SSE4.1) and threads"), per convolution that
PyTorch hands to oneDNN (not its own slow_conv2d path), with T intra-op threads, per group
C_in/G = ic, C_out/G = oc, kernel elements ks, output positions os = OH*OW, input positions is, batch N:

  col      = 4 * ic * ks * os                 im2col buffer, unless 1x1, stride 1, no padding
  backward data    S_d = n_d * col + 512 * osb + 1180 * oc         (only when the input needs a gradient)
  backward weights S_w = n_w * (col + 4 * Wb) + Wb + 4 * (ic*ks + oc) * min(osb, 256) + 32 KiB
  capped transient = max(S_d, S_w)            (Wb: the whole weight's bytes; 4 * Wb is oneDNN's
                                               weight-reduction buffer, booked as Wb floats)
  n_d = T if (os/T < 512 or ks < 64) and (N > 1 or G > 2) and (outer/inner efficiency >= 1 or
                is*ic*oc/T < 65536) else 1
  n_w = T if os/T < 256 and (N > 1 or G > 2) else 1
  col shrinks (os_block = max(4, 0.05 (w) / 0.1 (d) * avail / (4 n ic ks))) when n * col exceeds
  min(1 GiB, 15 T (src + weights + dst bytes)) less the other scratch; osb = os_block, else os (the
  gemm's packing buffers follow the block).
Unchanged by the cap: a transposed convolution and PyTorch's own path (batch 1 on a small input; a 1x1
unstrided one at batch < 16 on one thread: no oneDNN at all), a depthwise one on an NCHW input whose
channels are a multiple of 8 (jit_dw:sse41 like jit_dw:avx512_core), and a kernel of 256 elements or
more (ViT's patch embeddings: gemm:jit on AVX-512 too). A depthwise one whose channels are no multiple
of 8 runs gemm:jit in every pass and holds one input-sized buffer (+10 kB), less than AVX-512's copies;
one on a channels-last input (convnext) runs backward weights through gemm:jit (the S_w rule) instead of
AVX-512's jit:avx512_core with its 256 weights. The uncapped transient is max(blocked y + blocked x +
Wb, 2 Wb): the simulation's blocked copies of the output's and input's gradients (channels padded to
16) beside the new weight gradient.

The network's extra is where a convolution's backward runs while the simulated live memory is highest:
  extra = max(floor, max_L live_L + capped_L) - max(peak, max_L live_L + uncapped_L)
with live_L the simulation's persistent bytes + saved activations of the layers before L + the
parameter gradients made so far (not L's) + L's output and input gradients, peak the simulation's
peak, and floor that peak less its workspace where that workspace is a channels-last depthwise
convolution's 256 weights (else the peak) ('peak' mode); or simply max_L (capped_L - uncapped_L)
('local' mode).

Run from the repository root with Debian's Python (it needs the onnx package):
  /usr/bin/python3 scripts/isa_cap_memory.py [--worst N] [--mode peak|local] [--csv FILE]
"""
import argparse
import collections
import csv
import json
import os
import subprocess
import sys

MACHINES = {
    1: ("amd-f25m17-avx512-t1-97a5599e", "amd-f25m17-sse41-t1-40eadaa2"),
    2: ("amd-f25m17-avx512-t2-5ebe210b", "amd-f25m17-sse41-t2-8ed9a3b6"),
}
ABACUS = os.environ.get("ABACUS", "build/release/abacus")  # the simulation (abacus inspect)
SIMD_W = 4  # floats in an SSE register: oneDNN's simd_w under the cap
GEMM_THRESHOLD = 64 * 1024
CL_PASS = {"Conv", "BatchNormalization", "InstanceNormalization", "Relu", "LeakyRelu", "PRelu", "Elu", "Selu",
           "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Softplus", "Erf", "Clip", "Add", "Sub", "Mul", "Div",
           "Dropout", "Identity", "Neg", "Sqrt", "Pow"}


def ceil_div(a, b):
    return -(-a // b)


def round_up(a, b):
    return ceil_div(a, b) * b


def blocked(shape):
    """Bytes of a float tensor in oneDNN's nChw16c layout (channels padded to 16)."""
    n = 4
    for i, d in enumerate(shape):
        n *= round_up(d, 16) if i == 1 else d
    return n


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def conv_layers(path, batch, info=None):
    """Every Conv / ConvTranspose node of the graph at this batch: name, shapes, attributes. Shapes
    from ONNX shape inference, else from the simulation's layer table (a node's output shape)."""
    import onnx
    from onnx import shape_inference
    m = onnx.load(path, load_external_data=False)
    for inp in m.graph.input:
        dims = inp.type.tensor_type.shape.dim
        if len(dims) and not dims[0].dim_value:
            dims[0].dim_value = batch
    try:
        m = shape_inference.infer_shapes(m)
    except Exception:  # noqa: BLE001 - then the layer table alone
        pass
    shapes = {}
    if info:
        layer_shape = {l["name"]: l["shape"] for l in info["layers"]}
        for n in m.graph.node:
            if n.name in layer_shape and n.output:
                shapes[n.output[0]] = list(layer_shape[n.name])
    for v in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        dims = v.type.tensor_type.shape.dim
        if v.name not in shapes and len(dims) and all(d.dim_value or d.dim_param for d in dims):
            shapes[v.name] = [d.dim_value if d.dim_value else batch for d in dims]
    for t in m.graph.initializer:
        shapes[t.name] = list(t.dims)
    graph_inputs = {i.name for i in m.graph.input} - {t.name for t in m.graph.initializer}
    # Channels-last activations, as analysis.c marks them: a Transpose with perm (0, 3, 1, 2) makes one,
    # element-wise ops, normalisations and convolutions pass it on (same number of elements).
    cl = set()
    for n in m.graph.node:
        perm = [list(x.ints) for x in n.attribute if x.name == "perm"]
        if n.op_type == "Transpose" and perm and perm[0] == [0, 3, 1, 2]:
            cl.add(n.output[0])
        elif n.op_type in CL_PASS and n.output:
            y = shapes.get(n.output[0])
            if y and len(y) == 4 and any(i in cl and numel(shapes.get(i) or [0]) == numel(y) for i in n.input):
                cl.add(n.output[0])
    out = []
    for n in m.graph.node:
        if n.op_type not in ("Conv", "ConvTranspose"):
            continue
        a = {x.name: (list(x.ints) if x.ints else x.i) for x in n.attribute}
        x, w, y = shapes.get(n.input[0]), shapes.get(n.input[1]), shapes.get(n.output[0])
        if not x or not w or not y or len(x) < 3:
            continue
        nsp = len(x) - 2
        out.append({
            "name": n.name, "transpose": n.op_type == "ConvTranspose", "x": x, "w": w, "y": y,
            "k": a.get("kernel_shape") or w[2:], "s": a.get("strides") or [1] * nsp,
            "d": a.get("dilations") or [1] * nsp, "p": a.get("pads") or [0] * (2 * nsp),
            "g": a.get("group") or 1, "x_grad": n.input[0] not in graph_inputs, "cl": n.input[0] in cl,
        })
    return out


def onednn_path(c, threads):
    """'dw' (JIT depthwise, unchanged by the cap), 'gemm' (the cap's gemm backward) or None (PyTorch's
    own path: no oneDNN, unchanged). PyTorch 1.13's ConvParams::use_mkldnn, as runtime_torch_cpu.c."""
    x, w, g = c["x"], c["w"], c["g"]
    if c["transpose"] or len(x) > 4:
        return None
    if numel(c["k"]) >= 256:
        # a kernel of 256 elements or more (ViT's patch embeddings) is gemm:jit on AVX-512 too (the
        # simulation's 4.3 weights there is this rule's n_w * 4 Wb + ...): no change under the cap
        return "both"
    if g > 1 and w[1] == 1:
        if c.get("cl"):
            # channels-last input: AVX-512's backward weights is jit:avx512_core holding 256 weights
            # (the simulation's rule), the capped one gemm:jit (768 ch 7x7: 38.9 -> 0.77 MB)
            return "dw_cl"
        # jit_dw:sse41 when the channels are a multiple of 8 (64: unchanged), else gemm (58, 116)
        return "dw" if x[1] % 8 == 0 else "gemm"
    if g > 1:
        return "gemm"
    batch = x[0]
    big_kernel = len(c["k"]) == 2 and all(k > 3 for k in c["k"])
    if not (big_kernel or batch > 1 or numel(x) > 20480):
        return None
    strided = any(s != 1 for s in c["s"])
    dilated = any(d != 1 for d in c["d"])
    one = all(k == 1 for k in c["k"])
    if threads == 1 and not (strided or dilated or batch >= 16 or not one):
        return None
    return "gemm"


def uncapped_transient(c):
    """The AVX-512 backward's transient: the simulation's blocked copies of the output's and input's
    gradients (runtime_torch_cpu.c backward_workspace) beside the new weight gradient, or two weights'
    worth for a weight-heavy layer (measured: 512 -> 512 3x3 on 2x2, 18.9 MB = 2.0 weights)."""
    wb = 4 * numel(c["w"])
    ks = numel(c["k"])
    b = max(blocked(c["y"]) + (blocked(c["x"]) if c["x_grad"] else 0) + wb, 2 * wb)
    if ks >= 256:
        b = max(b, int(4.3 * wb))
    return b


def capped_transient(c, threads):
    """Bytes the capped machine's gemm backward holds (scratchpad + gemm packing + weight gradient)."""
    x, w, g = c["x"], c["w"], c["g"]
    if g > 1 and w[1] == 1 and c.get("cl"):
        # channels-last depthwise: backward data stays jit_dw (the same on both), backward weights is
        # the gemm rule below
        return gemm_transient(dict(c, x_grad=False), threads)
    if g > 1 and w[1] == 1:
        # depthwise whose channels are no multiple of 8: gemm in every pass, one input-sized buffer
        # (measured 58 ch 3x3/s2 on 24x24 and 116 ch 3x3 on 12x12, batch 4: 1.0x the input + 10 kB)
        return 4 * numel(x) + 10240
    return gemm_transient(c, threads)


def gemm_transient(c, threads):
    """The gemm:jit backward's scratchpad, packing buffers and new weight gradient (see the module doc)."""
    x, w, y, g = c["x"], c["w"], c["y"], c["g"]
    n = x[0]
    ic, oc = x[1] // g, y[1] // g
    ks = numel(c["k"])
    os_ = numel(y[2:])
    is_ = numel(x[2:])
    wb = 4 * numel(w)
    no_im2col = ks == 1 and all(s == 1 for s in c["s"]) and not any(c["p"]) and y[2:] == x[2:]
    col_el = 0 if no_im2col else ic * ks * os_
    limit = min(1 << 30, 15 * threads * (4 * numel(x) + wb + 4 * numel(y)))

    def shrink(nthr, other, coef):
        """(column bytes, os_block): the buffer shrinks to os_block positions past the limit."""
        col = nthr * col_el * 4
        avail = limit - other
        if col_el and col > avail and avail > 0:
            os_block = min(os_, max(SIMD_W, int(coef * (avail // (4 * nthr * ic * ks)))))
            return nthr * ic * ks * os_block * 4, os_block
        return col, os_

    # backward data
    s_d = 0
    if c["x_grad"]:
        outer_work = g * n
        outer_eff = outer_work / round_up(outer_work, threads)
        inner_work = ceil_div(is_, SIMD_W) * ceil_div(ic, SIMD_W)
        inner_eff = inner_work / round_up(inner_work, threads)
        outer = ((os_ // threads < 512 or ks < 64) and (n != 1 or g > 2)
                 and (outer_eff / inner_eff >= 1 or is_ * ic * oc // threads < GEMM_THRESHOLD))
        n_d = threads if outer else 1
        col, osb = shrink(n_d, 0, 0.1)
        s_d = col + 512 * osb + 1180 * oc
    # backward weights
    mem_ok = 4 * threads * wb + 4 * threads * ic * ks * SIMD_W < limit
    n_w = threads if (os_ // threads < 256 and (n != 1 or g > 2) and mem_ok) else 1
    red = n_w * 4 * wb
    col, osb = shrink(n_w, red, 0.05)
    s_w = col + red + wb + 4 * (ic * ks + oc) * min(osb, 256) + 32768
    return max(s_d, s_w)


def inspect(graph, batch, optimizer):
    out = subprocess.run([ABACUS, "inspect", graph, "--batch", str(batch), "--optimizer", optimizer,
                          "--format", "json"], capture_output=True, text=True)
    if out.returncode:
        return None
    return json.loads(out.stdout)


def predict(graph, batch, optimizer, threads, mode, cache):
    key = (graph, batch, optimizer)
    if key not in cache:
        info = inspect(graph, batch, optimizer)
        cache[key] = (info, conv_layers(graph, batch, info))
    info, convs = cache[key]
    if info is None:
        return None, []
    by_name = {c["name"]: c for c in convs}
    layers = info["layers"]
    peak = info["memory"]["peak"]
    base = info["memory"]["persistent"]
    total_params = sum(l["params"] for l in layers)
    saved = 0
    params_before = 0
    best_cap = best_unc = 0
    local = 0
    detail = []
    dwcl = []
    for l in layers:
        c = by_name.get(l["name"])
        if c is not None:
            path = onednn_path(c, threads)
            if path in ("gemm", "dw_cl", "dw"):
                unc = 256 * 4 * numel(c["w"]) if path == "dw_cl" else uncapped_transient(c)
                cap = unc if path == "dw" else capped_transient(c, threads)
                dwcl.append((unc, path))
                grads = 4 * (total_params - params_before - l["params"])  # its own: in the transients
                live = base + saved + grads + 4 * numel(c["y"]) + (4 * numel(c["x"]) if c["x_grad"] else 0)
                best_cap = max(best_cap, live + cap)
                best_unc = max(best_unc, live + unc)
                local = max(local, cap - unc)
                detail.append((cap - unc, l["name"], live, cap, unc))
        saved += l.get("saved", 0)
        params_before += l["params"]
    if mode == "local":
        return local, detail
    # Without the AVX-512 workspace the simulation counted at its peak, the rest of that moment is a floor
    # for the capped peak; the uncapped one is the simulation's peak (or a convolution's above it).
    # Only where that workspace is a channels-last depthwise convolution's 256 weights (convnext): other
    # workspace (Adam's temporaries, matrix products) is the same on both machines.
    ws = info["memory"].get("workspace", 0)
    floor = peak - ws if ws and any(abs(u - ws) <= 0.01 * ws and p == "dw_cl" for u, p in dwcl) else peak
    return max(floor, best_cap) - max(peak, best_unc), detail


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="data/dataset.csv")
    ap.add_argument("--mode", choices=("peak", "local"), default="peak")
    ap.add_argument("--worst", type=int, default=15)
    ap.add_argument("--csv", help="write every compared configuration here")
    args = ap.parse_args()

    rows = collections.defaultdict(dict)
    graphs = {}
    wanted = {m: (t, i) for t, pair in MACHINES.items() for i, m in enumerate(pair)}
    with open(args.dataset) as f:
        for r in csv.DictReader(f):
            if r["status"] != "ok" or r["machine"] not in wanted:
                continue
            t, capped = wanted[r["machine"]]
            key = (r["network"], r["input_shape"], int(r["batch"]), r["optimizer"], t)
            rows[key].setdefault(capped, int(r["memory_bytes"]))
            graphs[key] = r["graph"]
    cache = {}
    results = []
    for key, v in sorted(rows.items()):
        if 0 not in v or 1 not in v:
            continue
        g = graphs[key]
        if not g or not os.path.exists(g):
            continue
        pred, detail = predict(g, key[2], key[3], key[4], args.mode, cache)
        if pred is None:
            continue
        meas = v[1] - v[0]
        results.append({"key": key, "uncapped": v[0], "capped": v[1], "measured": meas, "predicted": pred,
                        "err": (pred - meas) / v[1], "top": max(detail, default=(0, ""))})
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["network", "input_shape", "batch", "optimizer", "threads", "uncapped", "capped",
                        "measured_extra", "predicted_extra", "error_of_peak"])
            for r in results:
                w.writerow(list(r["key"]) + [r["uncapped"], r["capped"], r["measured"], r["predicted"],
                                             "%.4f" % r["err"]])
    for t in (1, 2):
        rs = [r for r in results if r["key"][4] == t]
        if not rs:
            continue
        big = [r for r in rs if abs(r["measured"]) > 0.01 * r["capped"]]
        ok = sum(abs(r["err"]) <= 0.01 for r in rs)
        ok_big = sum(abs(r["err"]) <= 0.01 for r in big)
        zero_ok = sum(abs(r["measured"]) <= 0.01 * r["capped"] for r in rs)
        print(f"threads {t}: {len(rs)} configurations on both machines; the rule is within 1 % of the "
              f"capped peak on {ok} (doing nothing: {zero_ok}); of the {len(big)} that differ by more than "
              f"1 %, it explains {ok_big}")
        meas_sum = sum(abs(r["measured"]) for r in big)
        resid = sum(abs(r["measured"] - r["predicted"]) for r in big)
        if meas_sum:
            print(f"  over those {len(big)}: |measured extra| {meas_sum / 1e6:.1f} MB, |residual| "
                  f"{resid / 1e6:.1f} MB ({100 * (1 - resid / meas_sum):.0f} % explained)")
        print("  worst (error in % of the capped peak; measured and predicted extra in MB; largest layer):")
        for r in sorted(rs, key=lambda r: -abs(r["err"]))[:args.worst]:
            n, shape, b, opt, _ = r["key"]
            print(f"  {100 * r['err']:+6.1f} %  {n:22s} {shape:12s} b{b} {opt:4s}  measured {r['measured'] / 1e6:+7.2f}"
                  f"  predicted {r['predicted'] / 1e6:+7.2f}  {r['top'][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
