"""Export a Keras 3 model's graph the way Abacus reads it (docs/PROTOCOL.md, "Graphs", runtime tf-2.21.0).

  .runtimes/tf-2.21.0/bin/python -m collector.tf_export --models keras_resnet50,keras_lstm_lm \
      --sizes 32,L64 --out-dir data/graphs/tf [--force]

  export_graph(name, size, path)          # a network of collector/tf_zoo.py (its entry's build(size))
  m, info = export_model(model)           # any built Keras model: an onnx.ModelProto without weight data

tf2onnx's `from_keras` fails on Keras 3 models (KeyError 'keras_tensor_N'), so the graph is converted with
`tf2onnx.convert.from_function` from a tf.function of the model's inference call. Three things make that
graph the training graph Abacus analyses, as torch's training-mode export is for PyTorch:

- The weights are the function's inputs, not captured variables: `model.stateless_call(trainable,
  non_trainable, x, training=False)`. Captured variables are frozen into constants, and grappler's constant
  folding then folds each BatchNormalization into the preceding convolution and deletes zero biases (a
  Conv2D + BatchNormalization + Dense model came out with one Conv and one MatMul and no bias: 250 of its
  346 weights gone). As inputs nothing is folded; afterwards each becomes a data-less initializer named by
  its variable path (`conv2d/kernel`), and the non-trainable ones are listed in the metadata key
  abacus.buffers (Abacus counts them as buffers, not parameters).
- BatchNormalization on a 4-D input (axis -1) is traced as TensorFlow's fused kernel
  (`tf.compat.v1.nn.fused_batch_norm`, the same arithmetic), which tf2onnx turns into one ONNX
  BatchNormalization node; it is marked `training_mode = 1`, as in torch's graphs. Keras 3 itself runs an
  unfused batch norm in training (docs/COSTS.md, "TensorFlow 2.21"): what it keeps is the runtime's business
  (src/runtime_tf_cpu.c), the graph only says where the layer is. Other batch norms (2-D, another axis, no
  scale or centre) stay decomposed (a Mul and an Add per element) and are named in abacus.tf.decomposed_bn.
- Dropout is traced as TensorFlow's stateful dropout spelt the way tf2onnx's dropout rewriter knows it
  (Mul(Mul(x, 1/(1-rate)), Cast(RandomUniform >= rate))), which becomes one ONNX Dropout, then opset 12's
  training Dropout(x, ratio, training_mode = true) -> (y, mask), the node torch's training-mode export
  writes. A Dropout with a noise_shape (EfficientNet's per-sample drop connect) gets a full-size Dropout;
  abacus.tf.dropout lists every one with its rate and noise shape.
- LSTM, GRU, SimpleRNN and Bidirectional layers, which Keras 3 runs as tf.while_loop (tf2onnx: an ONNX
  Loop), are traced as markers and replaced by one ONNX LSTM/GRU/RNN node over the layer's own weights
  (_rnn_nodes). Keras' single LSTM bias of 4H is ONNX's B with 4H zeros (a Constant) concatenated.
- A grouped convolution, which Keras 3 runs as a nested XLA function on the CPU (a PartitionedCall to
  tf2onnx), is traced as a plain Conv2D with a grouped kernel: one ONNX Conv with `group`. TensorFlow's
  exact GELU uses Erfc, which ONNX lacks: it becomes 1 - Erf.

Then: the batch dim is renamed `batch` (input and output; Abacus binds a symbolic first axis or one named
like a batch), float constants tf2onnx made initializers (epsilons, scales) become Constant nodes (a float
initializer is a parameter to Abacus), opset 14 as torch's graphs, and tf2onnx's generated names are
reset per export so that two exports of the same network in one process are byte-identical (across processes
tf2onnx's optimizer may keep a different one of the duplicate nodes it merges: other names for a shared
constant, once one view Reshape fewer in MobileNetV2; FLOPs, parameters and memory alike). metadata_props: abacus.network,
abacus.kind, abacus.size, abacus.params (trainable), abacus.count_params (Keras' count_params(), trainable
and non-trainable), abacus.non_trainable, abacus.buffers, abacus.runtime (tf-2.21.0), tensorflow, keras,
tf2onnx, abacus.tf.layers (layer class counts), abacus.tf.batchnorm (each BatchNormalization: name,
channels, fused or decomposed), abacus.tf.dropout, abacus.notes.

Files: {out-dir}/{name}-{size}.onnx (images) and {out-dir}/{name}-L{len}.onnx (token models), by default in
data/graphs/tf, apart from torch's graphs (data/graphs): a Keras network is not the torchvision one of the
same name, and a torch worker must never find it.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import time
import traceback
from collections import Counter
from typing import Dict, List, Optional, Sequence, Tuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RUNTIME = "tf-2.21.0"
OPSET = 14
KEEP_INT_ELEMS = 1024
DROPOUT_SCOPE = "abacus_dropout"
FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16}


def _tf():
    import tensorflow as tf
    return tf


# ---------------------------------------------------------------------------------------------
# Tracing patches (batch norm, dropout, grouped convolution, recurrent layers), active only inside
# export_model().
# ---------------------------------------------------------------------------------------------
def _bn_fusable(layer, inputs) -> bool:
    axis = layer.axis if isinstance(layer.axis, int) else (layer.axis[0] if len(layer.axis) == 1 else None)
    rank = len(inputs.shape)
    return (rank == 4 and axis is not None and axis in (-1, 3) and layer.scale and layer.center
            and not getattr(layer, "synchronized", False) and not getattr(layer, "renorm", False))


@contextlib.contextmanager
def _tracing_patches(record: Dict[str, list]):
    import keras
    import numpy as np
    tf = _tf()
    BN = keras.layers.BatchNormalization
    DO = keras.layers.Dropout
    bn_call, do_call = BN.call, DO.call

    def bn(self, inputs, training=None, mask=None):
        ch = int(inputs.shape[-1]) if inputs.shape[-1] is not None else -1
        if not _bn_fusable(self, inputs):
            record["bn"].append((self.name, ch, "decomposed"))
            return bn_call(self, inputs, training=False, mask=mask)
        record["bn"].append((self.name, ch, "fused"))
        cv = keras.ops.convert_to_tensor
        y, _, _ = tf.compat.v1.nn.fused_batch_norm(
            inputs, cv(self.gamma), cv(self.beta), mean=cv(self.moving_mean),
            variance=cv(self.moving_variance), epsilon=self.epsilon, is_training=False, data_format="NHWC")
        return y

    def dropout(self, inputs, training=False):
        ns = getattr(self, "noise_shape", None)
        record["dropout"].append((self.name, float(self.rate), "x".join("N" if d is None else str(d)
                                                                   for d in ns) if ns else ""))
        if self.rate <= 0:
            return inputs
        # Spelt as tf2onnx's dropout rewriter knows it, Mul(Mul(x, 1/(1-rate)), Cast(RandomUniform >= rate)),
        # which it turns into one ONNX Dropout node (Keras 3's stateless random ops it would not)
        with tf.name_scope(DROPOUT_SCOPE):
            shape = tf.shape(inputs)
            if ns:
                shape = tf.stack([shape[k] if d is None else tf.constant(d, tf.int32) for k, d in enumerate(ns)])
            u = tf.raw_ops.RandomUniform(shape=shape, dtype=inputs.dtype)
            keep = tf.cast(tf.greater_equal(u, tf.constant(float(self.rate), inputs.dtype)), inputs.dtype)
            return tf.multiply(tf.multiply(inputs, tf.constant(1.0 / (1.0 - self.rate), inputs.dtype)), keep)

    # Keras 3 runs a grouped convolution (ConvNeXt's depthwise 7x7, RegNet's groups) as a nested
    # tf.function(jit_compile=True), XLA on the CPU (TensorFlow has no grouped kernel there): tf2onnx cannot
    # look into it (a PartitionedCall). Traced plainly it is one Conv2D with a grouped kernel, which tf2onnx
    # writes as a Conv with `group`.
    from keras.src.backend.tensorflow import nn as knn
    conv = knn.conv

    def plain_conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
        fmt = knn._convert_data_format(data_format, len(inputs.shape))
        return tf.nn.convolution(inputs, kernel, strides, padding.upper(), data_format=fmt,
                                 dilations=dilation_rate)

    # Keras 3 runs LSTM/GRU/SimpleRNN as a tf.while_loop, which tf2onnx turns into an ONNX Loop (its LSTM
    # rewriter matches Keras 3's LSTM only with constant weights, its GRU rewriter not at all). Each
    # recurrent layer is traced as a marker instead, x @ C with a constant C of the output's width inside
    # a name scope abacus_rnnK, which _rnn_nodes() replaces with the ONNX LSTM/GRU/RNN node over the
    # layer's own weights (the node torch's export writes for nn.LSTM/GRU/RNN).
    classes = {keras.layers.LSTM: "LSTM", keras.layers.GRU: "GRU", keras.layers.SimpleRNN: "RNN"}
    saved = {c: c.call for c in list(classes) + [keras.layers.Bidirectional]}

    def marker(layer, sequences, cells, dirs, backwards, ret_seq, merge="concat"):
        k = len(record["rnn"])
        units = cells[0].units
        width = units * (dirs if merge == "concat" else 1)
        record["rnn"].append({"layer": layer.name, "op": classes[type(cells[0])], "cells": cells, "dirs": dirs,
                              "reverse": backwards, "units": units, "merge": merge,
                              "input": int(sequences.shape[-1])})
        with tf.name_scope(f"abacus_rnn{k}"):
            c = tf.constant(np.full((int(sequences.shape[-1]), width), 0.5, np.float32))
            y = tf.matmul(sequences, c)
        return y if ret_seq else y[:, -1, :]

    def rnn(self, sequences, initial_state=None, mask=None, training=False):
        if initial_state is not None or mask is not None or self.return_state or self.stateful:
            raise NotImplementedError(f"{self.name}: initial_state, mask, return_state or stateful")
        return marker(self, sequences, [self], 1, self.go_backwards, self.return_sequences)

    def bidirectional(self, sequences, initial_state=None, mask=None, training=None):
        f, b = self.forward_layer, self.backward_layer
        if (initial_state is not None or mask is not None or self.return_state or type(f) not in classes
                or self.merge_mode not in ("concat", "sum", "ave", "mul")):
            raise NotImplementedError(f"{self.name}: this Bidirectional")
        return marker(self, sequences, [f, b], 2, False, f.return_sequences, self.merge_mode)

    for c in classes:
        c.call = rnn
    keras.layers.Bidirectional.call = bidirectional
    BN.call, DO.call, knn.conv = bn, dropout, plain_conv
    try:
        yield
    finally:
        BN.call, DO.call, knn.conv = bn_call, do_call, conv
        for c, f in saved.items():
            c.call = f


def _erfc_handler(ctx, node, name, args):
    """TensorFlow's exact GELU is 0.5·x·erfc(−x/√2); ONNX has Erf only: erfc(x) = 1 − erf(x)."""
    from tf2onnx import utils
    node.type = "Erf"
    dtype = ctx.get_dtype(node.output[0])
    np_dtype = utils.map_onnx_to_numpy_type(dtype)
    one = ctx.make_const(utils.make_name(node.name + "_one"), np.array(1, dtype=np_dtype))
    neg = ctx.insert_new_node_on_output("Neg", node.output[0], name=utils.make_name(node.name + "_neg"))
    add = ctx.insert_new_node_on_output("Add", neg.output[0], name=utils.make_name(node.name + "_add"),
                                        inputs=[neg.output[0], one.output[0]])
    for n in (neg, add):
        ctx.set_dtype(n.output[0], dtype)
        ctx.copy_shape(node.output[0], n.output[0])


def _reset_names():
    """tf2onnx names what it makes with a process-wide counter; restart it so that exports repeat."""
    from tf2onnx import utils
    utils.INTERNAL_NAME = 1


# ---------------------------------------------------------------------------------------------
# Post-processing of the converted graph.
# ---------------------------------------------------------------------------------------------
def _producers(g: onnx.GraphProto) -> Dict[str, onnx.NodeProto]:
    return {o: n for n in g.node for o in n.output}


def _rename_everywhere(g: onnx.GraphProto, old: str, new: str):
    for n in g.node:
        for k, x in enumerate(n.input):
            if x == old:
                n.input[k] = new
        for k, x in enumerate(n.output):
            if x == old:
                n.output[k] = new
    for coll in (g.input, g.output, g.value_info):
        for vi in coll:
            if vi.name == old:
                vi.name = new


def _set_batch(vi: onnx.ValueInfoProto) -> Optional[str]:
    dims = vi.type.tensor_type.shape.dim
    if not len(dims) or dims[0].HasField("dim_value"):
        return None
    old = dims[0].dim_param
    dims[0].dim_param = "batch"
    return old


def _rnn_nodes(g: onnx.GraphProto, rnns: List[dict], var_input: Dict[int, str], notes: List[str]) -> int:
    """Replaces each recurrent layer's marker (tracing patches) with Transpose → LSTM/GRU/RNN → Transpose →
    Reshape over the layer's weights, reshaped to ONNX's layouts: W [dirs, G·H, I] (Keras' kernel [I, G·H]),
    R [dirs, G·H, H], B [dirs, 2·G·H]. Keras has one bias of G·H (LSTM, SimpleRNN, GRU without reset_after),
    so B is that bias and G·H zeros (a Constant, not a parameter); a GRU with reset_after (Keras' default)
    has both, [2, 3H], and runs linear_before_reset. A Bidirectional's two directions are concatenated on
    axis 0 and its merge is a Concat (reshape), Add, Mean or Mul of the two directions."""
    inits = {t.name: t for t in g.initializer}
    done = 0
    out_nodes = []
    extra_consts = []
    by_marker = {}
    for n in g.node:
        for k in range(len(rnns)):
            if n.op_type == "MatMul" and f"abacus_rnn{k}/" in n.name:
                by_marker[k] = n
    for k, r in enumerate(rnns):
        mk = by_marker.get(k)
        if mk is None:
            notes.append(f"rnn-marker-missing:{r['layer']}")
            continue
        op, H, dirs = r["op"], r["units"], r["dirs"]
        G = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
        base = f"abacus_rnn{k}"
        Ws, Rs, Bs = [], [], []
        lbr = 0
        for cell_layer in r["cells"]:
            cell = getattr(cell_layer, "cell", cell_layer)
            for var, dims, lst in ((cell.kernel, [1, G * H, r["input"]], Ws),
                                   (cell.recurrent_kernel, [1, G * H, H], Rs)):
                t = inits[var_input[id(var)]]
                del t.dims[:]
                t.dims.extend(dims)
                lst.append(t.name)
            if getattr(cell, "bias", None) is not None:
                t = inits[var_input[id(cell.bias)]]
                full = op == "GRU" and getattr(cell, "reset_after", False)
                lbr = 1 if full else lbr
                del t.dims[:]
                t.dims.extend([1, 2 * G * H if full else G * H])
                if full:
                    Bs.append(t.name)
                else:
                    z = numpy_helper.from_array(np.zeros((1, G * H), np.float32), f"{base}_bias_zeros_{len(Bs)}")
                    extra_consts.append(helper.make_node("Constant", [], [z.name], name=z.name, value=z))
                    out_nodes.append(helper.make_node("Concat", [t.name, z.name], [f"{base}_B{len(Bs)}"], axis=1,
                                                      name=f"{base}_B{len(Bs)}"))
                    Bs.append(f"{base}_B{len(Bs)}")
            elif op == "GRU" and getattr(cell, "reset_after", False):
                lbr = 1
        pre = []

        def cat(names, what):
            if len(names) == 1:
                return names[0]
            pre.append(helper.make_node("Concat", names, [f"{base}_{what}"], axis=0, name=f"{base}_{what}"))
            return f"{base}_{what}"
        x = mk.input[0]
        w, rr = cat(Ws, "W"), cat(Rs, "R")
        b = cat(Bs, "Bd") if len(Bs) == len(r["cells"]) else ""
        pre.append(helper.make_node("Transpose", [x], [f"{base}_x"], perm=[1, 0, 2], name=f"{base}_x"))
        attrs = {"hidden_size": H, "direction": "bidirectional" if dirs == 2 else
                 ("reverse" if r["reverse"] else "forward")}
        if op == "GRU":
            attrs["linear_before_reset"] = lbr
        pre.append(helper.make_node(op, [f"{base}_x", w, rr] + ([b] if b else []), [f"{base}_Y"], name=f"{base}_{op}",
                                    **attrs))
        y = mk.output[0]
        if dirs == 1 or r["merge"] == "concat":
            pre.append(helper.make_node("Transpose", [f"{base}_Y"], [f"{base}_Yt"], perm=[2, 0, 1, 3], name=f"{base}_Yt"))
            shp = numpy_helper.from_array(np.array([0, 0, -1], np.int64), f"{base}_shape")
            pre.append(helper.make_node("Constant", [], [shp.name], name=shp.name, value=shp))
            pre.append(helper.make_node("Reshape", [f"{base}_Yt", shp.name], [y], name=f"{base}_out"))
        else:
            pre.append(helper.make_node("Split", [f"{base}_Y"], [f"{base}_f", f"{base}_b"], axis=1, name=f"{base}_split"))
            merge = {"sum": "Add", "ave": "Mean", "mul": "Mul"}[r["merge"]]
            pre.append(helper.make_node(merge, [f"{base}_f", f"{base}_b"], [f"{base}_m"], name=f"{base}_merge"))
            ax = numpy_helper.from_array(np.array([1], np.int64), f"{base}_axes")
            pre.append(helper.make_node("Constant", [], [ax.name], name=ax.name, value=ax))
            pre.append(helper.make_node("Squeeze", [f"{base}_m", ax.name], [f"{base}_sq"], name=f"{base}_sq"))
            pre.append(helper.make_node("Transpose", [f"{base}_sq"], [y], perm=[1, 0, 2], name=f"{base}_out"))
        by_marker[k] = (mk, pre)
        done += 1
    nodes = []
    for n in g.node:
        rep = next((v for v in by_marker.values() if isinstance(v, tuple) and v[0] is n), None)
        if rep is None:
            nodes.append(n)
        else:
            nodes.extend(extra_consts + out_nodes)
            extra_consts, out_nodes = [], []
            nodes.extend(rep[1])
    del g.node[:]
    g.node.extend(nodes)
    # the markers' constant operands are read by nothing now
    used = {x for n in g.node for x in n.input}
    keep = [n for n in g.node if not (n.op_type == "Constant" and not any(o in used for o in n.output))]
    del g.node[:]
    g.node.extend(keep)
    return done


def _finish_graph(m: onnx.ModelProto, weights: Sequence[Tuple[str, object, bool]], notes: List[str],
                  rnns: Optional[List[dict]] = None) -> Dict:
    """weights: (input name in the converted graph, variable, trainable). Returns counts."""
    g = m.graph
    # 1. the weight inputs become data-less initializers named by their variable paths
    by_input = {w[0]: w for w in weights}
    keep_inputs, inits = [], []
    for vi in g.input:
        if vi.name not in by_input:
            keep_inputs.append(vi)
            continue
        _, var, _ = by_input[vi.name]
        tt = vi.type.tensor_type
        inits.append((vi.name, var.path, TensorProto(name=var.path, data_type=tt.elem_type,
                                                     dims=[int(d) for d in var.shape])))
    del g.input[:]
    g.input.extend(keep_inputs)
    for old, new, t in inits:
        _rename_everywhere(g, old, new)
        g.initializer.append(t)
    missing = [w[1].path for w in weights if w[0] not in {i[0] for i in inits}]
    if missing:
        notes.append(f"unused-weights:{len(missing)}")
    # 2. float initializers that are not weights become Constant nodes (with data): to Abacus a float
    #    initializer is a parameter, tf2onnx's epsilons and scales are not
    wnames = {i[1] for i in inits}
    consts, rest = [], []
    for t in g.initializer:
        if t.name in wnames or t.data_type not in FLOAT_TYPES:
            rest.append(t)
        else:
            consts.append(helper.make_node("Constant", [], [t.name], name=f"{t.name}__const", value=t))
    del g.initializer[:]
    g.initializer.extend(rest)
    nodes = consts + list(g.node)
    del g.node[:]
    g.node.extend(nodes)
    # 2b. recurrent layers
    var_input = {id(w[1]): w[1].path for w in weights}
    n_rnn = _rnn_nodes(g, rnns or [], var_input, notes)
    # 3. dropout: tf2onnx writes opset 7's Dropout (a `ratio` attribute, no mask); make it opset 12's training
    #    Dropout(x, ratio, training_mode = true) -> (y, mask), the node torch's training-mode export writes
    n_drop = 0
    nodes = []
    for n in g.node:
        n = onnx.NodeProto.FromString(n.SerializeToString())
        if n.op_type == "Dropout":
            ratio = 0.5
            for at in list(n.attribute):
                if at.name == "ratio":
                    ratio = float(at.f)
                n.attribute.remove(at)
            base = n.name.replace("/", "_")
            r = numpy_helper.from_array(np.array(round(ratio, 6), dtype=np.float32), base + "_ratio")
            tm = numpy_helper.from_array(np.array(True), base + "_training_mode")
            nodes.append(helper.make_node("Constant", [], [r.name], name=r.name, value=r))
            nodes.append(helper.make_node("Constant", [], [tm.name], name=tm.name, value=tm))
            del n.input[1:]
            n.input.extend([r.name, tm.name])
            del n.output[1:]
            n.output.append(base + "_mask")
            n_drop += 1
        nodes.append(n)
    del g.node[:]
    g.node.extend(nodes)
    # 4. batch norms train
    n_bn = 0
    for n in g.node:
        if n.op_type == "BatchNormalization":
            for a in list(n.attribute):
                if a.name in ("training_mode", "spatial", "is_test"):
                    n.attribute.remove(a)
            n.attribute.append(helper.make_attribute("training_mode", 1))
            n_bn += 1
    # 5. the batch dim is `batch`
    olds = {o for o in (_set_batch(vi) for vi in g.input) if o}
    for vi in g.output:
        _set_batch(vi)
    for vi in g.value_info:
        dims = vi.type.tensor_type.shape.dim
        for d in dims:
            if d.HasField("dim_param") and d.dim_param in olds:
                d.dim_param = "batch"
    # 6. a fixed graph name (tf2onnx uses the traced function's, which counts up per trace) and tf2onnx's
    #    counted name suffixes (`__17`) renumbered in order of appearance: its counter's start differs
    #    between the first export of a process and later ones
    g.name = "keras"
    g.doc_string = ""
    _canonical_names(g)
    # 7. variables the inference call never reads (a dropout's seed generator state) are dropped
    used = {x for n in g.node for x in n.input}
    unused = [t for t in g.initializer if t.name not in used]
    for t in unused:
        g.initializer.remove(t)
    # 8. initializers and value_info in name order (tf2onnx emits them in an order that varies between runs)
    for field in (g.initializer, g.value_info):
        items = sorted(field, key=lambda x: x.name)
        copies = [type(x).FromString(x.SerializeToString()) for x in items]
        del field[:]
        field.extend(copies)
    return {"bn_nodes": n_bn, "dropout_nodes": n_drop, "rnn_nodes": n_rnn}


_SUFFIX = re.compile(r"__(\d+)")


def _canonical_names(g: onnx.GraphProto):
    seen: Dict[str, str] = {}

    def fix(name: str) -> str:
        def sub(mt):
            k = mt.group(1)
            if k not in seen:
                seen[k] = str(len(seen) + 1)
            return "__" + seen[k]
        return _SUFFIX.sub(sub, name) if "__" in name else name

    for n in g.node:
        n.name = fix(n.name)
        for k, x in enumerate(n.input):
            n.input[k] = fix(x)
        for k, x in enumerate(n.output):
            n.output[k] = fix(x)
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                a.t.name = fix(a.t.name)
    for t in g.initializer:
        t.name = fix(t.name)
    for coll in (g.input, g.output, g.value_info):
        for vi in coll:
            vi.name = fix(vi.name)


def _strip(m: onnx.ModelProto) -> Tuple[int, int]:
    stripped = kept = 0
    for t in m.graph.initializer:
        n = int(np.prod(list(t.dims))) if len(t.dims) else 1
        if t.data_type not in FLOAT_TYPES and n <= KEEP_INT_ELEMS:
            kept += 1
            continue
        for f in ("raw_data", "float_data", "double_data", "int32_data", "int64_data",
                  "uint64_data", "string_data", "external_data"):
            t.ClearField(f)
        t.data_location = TensorProto.DEFAULT
        stripped += 1
    return stripped, kept


def _input_specs(model, input_shape=None, input_dtype=None):
    tf = _tf()
    if input_shape is None:
        ins = model.inputs
        if not ins or len(ins) != 1:
            raise ValueError("the model must have exactly one input (or give input_shape)")
        input_shape = tuple(ins[0].shape[1:])
        input_dtype = input_dtype or ins[0].dtype
    return tf.TensorSpec((None,) + tuple(input_shape), input_dtype or "float32", name="input")


def export_model(model, input_shape: Optional[Sequence[int]] = None, input_dtype: Optional[str] = None,
                 notes: Optional[List[str]] = None) -> Tuple[onnx.ModelProto, dict]:
    """Convert a built Keras 3 model (one input) to the graph Abacus reads, weights stripped. Returns the
    graph with its abacus.* metadata except network/kind/size, and facts about it."""
    import keras
    import tf2onnx
    tf = _tf()
    t0 = time.time()
    notes = list(notes or [])
    spec = _input_specs(model, input_shape, input_dtype)
    tv, ntv = list(model.trainable_variables), list(model.non_trainable_variables)
    wspecs = [tf.TensorSpec(v.shape, v.dtype, name=f"abacus_w{i}") for i, v in enumerate(tv + ntv)]
    nt = len(tv)
    record: Dict[str, list] = {"bn": [], "dropout": [], "rnn": []}

    @tf.function(jit_compile=False, autograph=False)
    def infer(x, *ws):
        y, _ = model.stateless_call(list(ws[:nt]), list(ws[nt:]), x, training=False)
        if isinstance(y, (list, tuple)):
            y = y[0]
        return y

    _reset_names()
    with _tracing_patches(record):
        m, _ = tf2onnx.convert.from_function(infer, input_signature=[spec] + wspecs, opset=OPSET,
                                                custom_op_handlers={"Erfc": (_erfc_handler, [])})
    weights = [(f"abacus_w{i}", v, i < nt) for i, v in enumerate(tv + ntv)]
    counts = _finish_graph(m, weights, notes, record["rnn"])
    stripped, kept = _strip(m)
    if counts["bn_nodes"] != sum(1 for b in record["bn"] if b[2] == "fused"):
        notes.append(f"bn-nodes:{counts['bn_nodes']}-of-{sum(1 for b in record['bn'] if b[2] == 'fused')}")
    if counts["dropout_nodes"] != sum(1 for d in record["dropout"] if d[1] > 0):
        notes.append(f"dropout-nodes:{counts['dropout_nodes']}")
    params = int(sum(int(np.prod(v.shape)) for v in tv))
    # Keras' count_params() sums model.weights: the trainable ones and the non-trainable *weights* (batch
    # norm statistics); seed generators' states are non-trainable variables but not weights
    non_trainable = int(sum(int(np.prod(v.shape)) for v in model.non_trainable_weights))
    layers = Counter(type(l).__name__ for l in _all_layers(model))
    meta = {
        "abacus.runtime": RUNTIME,
        "abacus.params": params,
        "abacus.count_params": model.count_params(),
        "abacus.non_trainable": non_trainable,
        "abacus.buffers": ",".join(v.path for v in model.non_trainable_weights),
        "tensorflow": tf.__version__, "keras": keras.__version__, "tf2onnx": tf2onnx.__version__,
        "abacus.tf.layers": ",".join(f"{k}:{v}" for k, v in sorted(layers.items())),
        "abacus.tf.batchnorm": ",".join(f"{n}:{c}:{how}" for n, c, how in record["bn"]),
        "abacus.tf.dropout": ",".join(f"{n}:{r:g}" + (f":{ns}" if ns else "") for n, r, ns in record["dropout"]),
    }
    ops = sorted({n.op_type for n in m.graph.node})
    return m, {"meta": meta, "params": params, "count_params": model.count_params(),
               "non_trainable": non_trainable, "stripped": stripped, "kept_int": kept, "notes": notes,
               "ops": ops, "seconds": round(time.time() - t0, 1), **counts}


def _all_layers(model):
    out, stack = [], list(getattr(model, "layers", []))
    while stack:
        l = stack.pop(0)
        out.append(l)
        if hasattr(l, "layers") and l is not model:
            stack[:0] = list(l.layers)
    return out


def set_meta(m: onnx.ModelProto, kv: Dict[str, object]):
    del m.metadata_props[:]
    for k in sorted(kv):
        e = m.metadata_props.add()
        e.key, e.value = k, str(kv[k])


def save(m: onnx.ModelProto, path: str):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(m.SerializeToString(deterministic=True))
    os.replace(tmp, path)


def export_built(model, path: str, name: str, size: int, kind: str = "image",
                 input_shape=None, input_dtype=None, notes=None) -> dict:
    """Export an already built model to `path` with the network's metadata. Returns facts about it."""
    m, info = export_model(model, input_shape, input_dtype, notes)
    meta = dict(info["meta"])
    meta.update({"abacus.network": name, "abacus.kind": kind, "abacus.size": size,
                 "abacus.notes": ",".join(info["notes"])})
    set_meta(m, meta)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    save(m, path)
    return {"file": os.path.basename(path), "name": name, "kind": kind, "size": size,
            "params": info["params"], "count_params": info["count_params"],
            "non_trainable": info["non_trainable"], "nodes": len(m.graph.node),
            "bytes": os.path.getsize(path), "seconds": info["seconds"], "notes": ",".join(info["notes"]),
            "ops": info["ops"]}


def graph_file(name: str, size: int, kind: str) -> str:
    return f"{name}-{size}.onnx" if kind == "image" else f"{name}-L{size}.onnx"


def _zoo_entry(name: str):
    from collector import tf_zoo  # written beside this file (the TF worker's zoo)
    return tf_zoo.get(name)


def export_graph(name: str, size: int, path: str) -> None:
    """Export network `name` of collector/tf_zoo.py at input size `size` (image side or sequence length) to
    `path`. Raises on failure."""
    import keras
    net = _zoo_entry(name)
    keras.backend.clear_session()  # layer names count up per session: fresh ones make exports repeat
    keras.utils.set_random_seed(0)
    model = net.build(size)
    kind = getattr(net, "kind", "image")
    export_built(model, path, name, size, kind)


# ---------------------------------------------------------------------------------------------
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", required=True, help="comma-separated names of collector/tf_zoo.py")
    ap.add_argument("--sizes", required=True, help="comma list of image sides / L-lengths (L64)")
    ap.add_argument("--out-dir", default="data/graphs/tf")
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args(argv)
    names = [n.strip() for n in a.models.split(",") if n.strip()]
    sizes = sorted({int(s[1:]) if s[0] in "Ll" else int(s) for s in (x.strip() for x in a.sizes.split(",")) if s})
    fails = 0
    for name in names:
        kind = getattr(_zoo_entry(name), "kind", "image")
        for size in sizes:
            path = os.path.join(a.out_dir, graph_file(name, size, kind))
            if os.path.exists(path) and not a.force:
                print(f"skip {path}")
                continue
            try:
                export_graph(name, size, path)
                print(f"ok   {path}", flush=True)
            except Exception as e:  # noqa: BLE001 - report and go on
                fails += 1
                print(f"FAIL {path}: {type(e).__name__}: {' '.join(str(e).split())[:300]}", flush=True)
                traceback.print_exc(file=sys.stderr)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
