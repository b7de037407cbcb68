"""Measure what one TensorFlow 2.21 training step keeps alive for tiny single-layer Keras models, and what
Abacus's memory simulation says for their exported graphs (docs/COSTS.md, "TensorFlow 2.21").

  scripts/tf_memory_rules.py [--models dense,conv,...] [--batches 4,16] [--optimizers sgd,adam]
      [--runtime tf-2.21.0] [--abacus build/release/abacus] [--out-dir /tmp/tf-rules]

Re-executes itself under the measurement environment of docs/PROTOCOL.md (the allocator tracker preloaded,
oneDNN on with the system allocator, one intra-op and one inter-op thread, the MALLOC_* settings). Each
configuration: a dry run of 2 steps, freed; baseline = live bytes; build model, inputs and optimizer (built
before tracing); 3 warm-up steps; persistent = live − baseline; reset the peak; 2 steps; peak − baseline.
The step is the TF worker's (collector/tf_worker.py): tf.function(jit_compile=False) with GradientTape,
model(x, training=True), the loss (cross-entropy from logits against random labels for [B, classes], MSE
against zeros otherwise), tape.gradient, optimizer.apply_gradients, `.numpy()` of the loss. SGD is
SGD(0.01, momentum 0.9), Adam Adam(1e-3). Prints one row per configuration: measured persistent and peak,
Abacus's (`abacus inspect --format json`, with --runtime when given) and the difference in bytes and as a
share of the measured peak, and the operations of the traced step's graph (tf_ops). The models `stack_KIND_N`
(KIND conv, convnb, dw, bn, dense, relu, add, mul, concat, pad, relu6, swish, drop, ln, maxpool, lstm, gru; N
0 to 16) are N identical layers on an 8×8×8 input, for the traced step's state per layer (docs/COSTS.md,
"State per op"; scripts/tf_persistent_memory.py --stacks reads their --json rows). dense3 and dense3_last (three
large Dense layers: "Adam's step in backward"), lstm_tT and lm1, lm2, lm2_d16, lm1_h256 (the while loop of a
recurrent layer, lstm_lm's shapes: "Recurrent layers' while loop") are in docs/COSTS.md's TensorFlow section, and
so are cnx_PARTS and gconv_N_C_HW_G (ConvNeXt's blocks and Keras 3's grouped convolutions, which it runs through
XLA: "XLA's grouped convolutions"), same_KIND_N and distinct_KIND_N (stacks of identical shapes against distinct
ones: "Shapes seen once"), gru_hH_tT and lstm_hH_tT (one recurrent layer over T steps: "Recurrent layers' while
loop: iterations in flight"), dense_stackN, dense_bn_stackN and dense_drop_stackN (many Dense(512) variables under
SGD: "Where the TensorFlow rows stand"), dwstackN_K_C_HW (DepthwiseConv2D K×K: "Depthwise convolutions beyond
3×3"), dense_blockN (DenseNet121's conv_block N times), and stack_hswish, stack_hsig, stack_sigmoid, stack_sev3,
stack_seeff (MobileNetV3's and EfficientNet's activations and squeeze-excite blocks, measured, not encoded).
"""
from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
ENV = {"TF_ONEDNN_USE_SYSTEM_ALLOCATOR": "1", "TF_ENABLE_ONEDNN_OPTS": "1", "TF_NUM_INTRAOP_THREADS": "1",
       "TF_NUM_INTEROP_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
       "MALLOC_MMAP_MAX_": "0", "MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "68719476736",
       "MALLOC_TOP_PAD_": "536870912", "TF_CPP_MIN_LOG_LEVEL": "3"}
UNSET = ("TF_CPU_ALLOCATOR_USE_BFC", "ONEDNN_DEFAULT_FPMATH_MODE", "TF_XLA_FLAGS")


def models():
    """name -> (build(), kind, loss): one layer under test, with what it needs around it."""
    import keras
    L = keras.layers

    def img(h, w, c):
        return keras.Input((h, w, c))

    def conv_then(layer_fn, c_in=16, c=64, hw=32):
        def build():
            i = img(hw, hw, c_in)
            x = L.Conv2D(c, 3, padding="same")(i)
            x = layer_fn(x)
            x = L.GlobalAveragePooling2D()(x)
            return keras.Model(i, L.Dense(10)(x))
        return build

    def two_convs(join):
        def build():
            i = img(32, 32, 16)
            a = L.Conv2D(64, 3, padding="same")(i)
            b = L.Conv2D(64, 3, padding="same")(i)
            x = join([a, b])
            x = L.GlobalAveragePooling2D()(x)
            return keras.Model(i, L.Dense(10)(x))
        return build

    def dense():
        i = keras.Input((2048,))
        return keras.Model(i, L.Dense(4096)(i))

    def mlp2():
        i = keras.Input((2048,))
        x = L.Dense(2048, activation="relu")(i)
        return keras.Model(i, L.Dense(1000)(x))

    def dense3():  # three large weights (16.8, 33.6, 8.2 MB): when the optimizer step meets each gradient
        i = keras.Input((1024,))
        x = L.Dense(4096, activation="relu")(i)
        x = L.Dense(2048, activation="relu")(x)
        return keras.Model(i, L.Dense(1000)(x))

    def dense3_last():  # the largest weight last (4.2, 4.2, 33.6 MB): its gradient is the first made
        i = keras.Input((1024,))
        x = L.Dense(1024, activation="relu")(i)
        x = L.Dense(1024, activation="relu")(x)
        return keras.Model(i, L.Dense(8192)(x))

    def logits():  # a wide output: the loss's buffers (cross-entropy)
        i = keras.Input((64,))
        return keras.Model(i, L.Dense(32768)(i))

    def logits_mse():  # the same, 3-D: MSE
        i = keras.Input((64,))
        return keras.Model(i, L.Reshape((128, 256))(L.Dense(32768)(i)))

    def lstm():
        i = keras.Input((32,), dtype="int32")
        x = L.Embedding(1000, 64)(i)
        x = L.LSTM(256, return_sequences=True)(x)
        return keras.Model(i, L.Dense(16)(x))

    def lstm_t(t):  # lstm's model over t tokens: what the while loop keeps per step
        def build():
            i = keras.Input((t,), dtype="int32")
            x = L.Embedding(1000, 64)(i)
            x = L.LSTM(256, return_sequences=True)(x)
            return keras.Model(i, L.Dense(16)(x))
        return build

    def lm(layers, vocab_out, h=512):  # lstm_lm (collector/tf_zoo.py) over 32 tokens, and parts of it
        def build():
            i = keras.Input((32,), dtype="int32")
            x = L.Embedding(8192, 256)(i)
            for _ in range(layers):
                x = L.LSTM(h, return_sequences=True)(x)
            return keras.Model(i, L.Dense(vocab_out)(x))
        return build

    def stack(kind, n):
        """n identical layers of `kind` on a tiny input (docs/COSTS.md, "State per op"): a 1×1 Conv2D first so
        that gradients flow through the stack, GlobalAveragePooling2D and Dense(10) after it."""
        def build():
            i = img(8, 8, 8)
            x = x0 = L.Conv2D(8, 1)(i)
            if kind in ("lstm", "gru"):
                x = L.Reshape((64, 8))(x)
            for _ in range(n):
                if kind == "conv":
                    x = L.Conv2D(8, 3, padding="same")(x)
                elif kind == "convnb":
                    x = L.Conv2D(8, 3, padding="same", use_bias=False)(x)
                elif kind == "dw":
                    x = L.DepthwiseConv2D(3, padding="same", use_bias=False)(x)
                elif kind == "bn":
                    x = L.BatchNormalization()(x)
                elif kind == "dense":
                    x = L.Dense(8)(x)
                elif kind == "relu":
                    x = L.ReLU()(x)
                elif kind == "add":
                    x = L.Add()([x, x0])
                elif kind == "mul":
                    x = L.Multiply()([x, x0])
                elif kind == "concat":
                    x = L.Concatenate()([x, x0])
                elif kind == "pad":
                    x = L.ZeroPadding2D(1)(x)
                elif kind in ("relu6", "swish"):
                    x = L.ReLU(6.0)(x) if kind == "relu6" else L.Activation("swish")(x)
                elif kind == "drop":
                    x = L.Dropout(0.1)(x)
                elif kind == "ln":
                    x = L.LayerNormalization()(x)
                elif kind == "maxpool":
                    x = L.MaxPooling2D(3, 1, padding="same")(x)
                elif kind in ("lstm", "gru"):
                    x = (L.LSTM if kind == "lstm" else L.GRU)(8, return_sequences=True)(x)
                elif kind == "hswish":  # MobileNetV3's hard_swish
                    x = L.Activation("hard_swish")(x)
                elif kind == "hsig":  # MobileNetV3's hard_sigmoid: ReLU(6)(x + 3) * (1 / 6)
                    x = L.ReLU(6.0)(x + 3.0) * (1.0 / 6.0)
                elif kind == "sigmoid":
                    x = L.Activation("sigmoid")(x)
                elif kind == "sev3":  # MobileNetV3's squeeze-excite block
                    from keras.src.applications import mobilenet_v3 as mv3
                    x = mv3._se_block(x, 8, 0.25, f"se{_}_")
                elif kind == "seeff":  # EfficientNet's
                    se = L.GlobalAveragePooling2D()(x)
                    se = L.Reshape((1, 1, 8))(se)
                    se = L.Conv2D(2, 1, padding="same", activation="swish")(se)
                    se = L.Conv2D(8, 1, padding="same", activation="sigmoid")(se)
                    x = L.multiply([x, se])
            x = (L.GlobalAveragePooling1D() if kind in ("lstm", "gru") else L.GlobalAveragePooling2D())(x)
            return keras.Model(i, L.Dense(10)(x))
        return build

    def cnx(parts, blocks=3, c=768, hw=1):
        """ConvNeXt's last stage (collector/tf_zoo.py's convnext_tiny at 32×32: a 1×1×768 map) as `blocks`
        blocks of Keras's ConvNeXtBlock ("full"), or of its parts only: "dense" (the two Dense layers),
        "dw" (its grouped 7×7 convolution), "mlp" (LayerNormalization, Dense, GELU, Dense, LayerScale)."""
        def build():
            from keras.src.applications import convnext
            i = img(hw, hw, c)
            x = i
            for b in range(blocks):
                if parts == "full":
                    x = convnext.ConvNeXtBlock(c, name=f"b{b}")(x)
                    continue
                y = x
                if parts == "dw":
                    y = L.Conv2D(c, 7, padding="same", groups=c)(y)
                if parts == "mlp":
                    y = L.LayerNormalization(epsilon=1e-6)(y)
                if parts in ("dense", "mlp", "dense_gconv"):
                    y = L.Dense(4 * c)(y)
                    if parts == "mlp":
                        y = L.Activation("gelu")(y)
                    y = L.Dense(c)(y)
                if parts == "mlp":
                    y = convnext.LayerScale(1e-6, c)(y)
                x = x + y
            if parts == "dense_gconv":  # the two Dense layers' blocks, then one grouped 7×7 convolution
                x = L.Conv2D(c, 7, padding="same", groups=c)(x)
            x = L.GlobalAveragePooling2D()(x)
            return keras.Model(i, L.Dense(10)(x))
        return build

    def gconv(n, c, hw, groups, k=7):
        """n grouped convolutions (Keras 3 runs them through XLA: a nested jit_compile tf.function) of c
        channels in `groups` groups on an hw×hw map."""
        def build():
            i = img(hw, hw, c)
            x = i
            for _ in range(n):
                x = L.Conv2D(c, k, padding="same", groups=groups)(x)
            x = L.GlobalAveragePooling2D()(x)
            return keras.Model(i, L.Dense(10)(x))
        return build

    def distinct(kind, n, same):
        """n 1×1 Conv2D layers (no bias; "convbn": each with a BatchNormalization, "convrelu" a ReLU, "convswish"
        a swish, "convmul" x·x, "convadd" x + x, "convbnns" a BatchNormalization(scale=False), "convcat" x
        concatenated with itself, "convpool" a 3×3 AveragePooling2D; "dw": a 3×3 DepthwiseConv2D and a 1×1 Conv2D) on an 8×8 map, of 8 + k output channels for the k-th (or all of 8 when `same`): what a
        distinct shape adds to the state between steps (oneDNN's primitives are cached per shape)."""
        def build():
            i = img(8, 8, 8)
            x = L.Conv2D(8, 1)(i)
            for k in range(1, n + 1):
                c = 8 if same else 8 + k
                if kind == "dw":
                    x = L.DepthwiseConv2D(3, padding="same", use_bias=False)(x)
                x = L.Conv2D(c, 1, use_bias=False)(x)
                if kind == "convbn":
                    x = L.BatchNormalization()(x)
                elif kind == "convrelu":
                    x = L.ReLU()(x)
                elif kind == "convswish":
                    x = L.Activation("swish")(x)
                elif kind == "convmul":
                    x = L.Multiply()([x, x])
                elif kind == "convadd":
                    x = L.Add()([x, x])
                elif kind == "convbnns":  # InceptionV3's batch norm, which the exporter does not fuse
                    x = L.BatchNormalization(scale=False)(x)
                elif kind == "convcat":
                    x = L.Concatenate()([x, x])
                elif kind == "convpool":
                    x = L.AveragePooling2D(3, 1, padding="same")(x)
            x = L.GlobalAveragePooling2D()(x)
            return keras.Model(i, L.Dense(10)(x))
        return build

    def rnn(cell, h, t, f=64, seq=False):
        """One recurrent layer of h units over t steps of f features, then Dense(4) on its last state (or on
        every step's: seq): the while loop's transient memory."""
        def build():
            i = keras.Input((t, f))
            x = (L.GRU if cell == "gru" else L.LSTM)(h, return_sequences=seq)(i)
            return keras.Model(i, L.Dense(4)(x))
        return build

    def dense_stack(n, bn=False, drop=False):
        """n Dense(512) layers with a ReLU on a [B, 512] input (1 MB of kernel each; with a BatchNormalization or
        a Dropout(0.1) after each), then Dense(10): many variables, each gradient ready early: when SGD's
        temporaries meet them."""
        def build():
            i = keras.Input((512,))
            x = i
            for _ in range(n):
                x = L.Dense(512, activation="relu")(x)
                if bn:
                    x = L.BatchNormalization()(x)
                if drop:
                    x = L.Dropout(0.1)(x)
            return keras.Model(i, L.Dense(10)(x))
        return build

    def dw_stack(k, c, hw, n=8, stride=1):
        """n DepthwiseConv2D k×k (stride) with BatchNormalization and ReLU on an hw×hw map of c channels (a 1×1
        Conv2D first): MobileNetV3's and EfficientNet's 5×5 depthwise convolutions against 3×3."""
        def build():
            i = img(hw, hw, 8)
            x = L.Conv2D(c, 1)(i)
            for _ in range(n):
                x = L.DepthwiseConv2D(k, strides=stride, padding="same", use_bias=False)(x)
                x = L.BatchNormalization()(x)
                x = L.ReLU()(x)
            x = L.GlobalAveragePooling2D()(x)
            return keras.Model(i, L.Dense(10)(x))
        return build

    def dense_block(n, hw=16, c=64, growth=32):
        """DenseNet121's dense block (keras.applications.densenet conv_block: BatchNormalization, ReLU, 1×1 Conv2D
        of 4·growth, BatchNormalization, ReLU, 3×3 Conv2D of growth, concatenated to its input) n times on an
        hw×hw map of c channels."""
        def build():
            i = img(hw, hw, c)
            x = i
            for _ in range(n):
                y = L.BatchNormalization(epsilon=1.001e-5)(x)
                y = L.Activation("relu")(y)
                y = L.Conv2D(4 * growth, 1, use_bias=False)(y)
                y = L.BatchNormalization(epsilon=1.001e-5)(y)
                y = L.Activation("relu")(y)
                y = L.Conv2D(growth, 3, padding="same", use_bias=False)(y)
                x = L.Concatenate()([x, y])
            x = L.GlobalAveragePooling2D()(x)
            return keras.Model(i, L.Dense(10)(x))
        return build

    stacks = {f"stack_{k}_{n}": (stack(k, n), "ce") for k in ("conv", "convnb", "dw", "bn", "dense", "relu", "add", "mul", "concat",
                                                          "pad", "relu6", "swish", "drop", "ln", "maxpool", "lstm", "gru",
                                                          "hswish", "hsig", "sigmoid", "sev3", "seeff")
              for n in (0, 1, 2, 4, 8, 16)}
    return stacks | {
        "dense": (dense, "ce"),
        "mlp2": (mlp2, "ce"),
        "dense3": (dense3, "ce"),
        "dense3_last": (dense3_last, "ce"),
        "conv": (conv_then(lambda x: x), "ce"),
        "conv_bn": (conv_then(lambda x: L.BatchNormalization()(x)), "ce"),
        "conv_relu": (conv_then(lambda x: L.ReLU()(x)), "ce"),
        "conv_gelu": (conv_then(lambda x: L.Activation("gelu")(x)), "ce"),
        "conv_sigmoid": (conv_then(lambda x: L.Activation("sigmoid")(x)), "ce"),
        "conv_maxpool": (conv_then(lambda x: L.MaxPooling2D(2)(x)), "ce"),
        "conv_avgpool": (conv_then(lambda x: L.AveragePooling2D(2)(x)), "ce"),
        "conv_add": (two_convs(L.Add()), "ce"),
        "conv_concat": (two_convs(L.Concatenate()), "ce"),
        "lstm": (lstm, "mse"),
        **{f"lstm_t{t}": (lstm_t(t), "mse") for t in (16, 64, 128)},
        "lm2": (lm(2, 8192), "mse"),
        "lm1": (lm(1, 8192), "mse"),
        "lm2_d16": (lm(2, 16), "mse"),
        "lm1_h256": (lm(1, 8192, 256), "mse"),
        **{f"cnx_{p}": (cnx(p), "ce") for p in ("full", "dense", "dw", "mlp")},
        "cnx_full1": (cnx("full", 1), "ce"),
        **{f"dense_block{n}": (dense_block(n), "ce") for n in (1, 6)},
        **{f"dwstack_{k}_{c}_{hw}": (dw_stack(k, c, hw), "ce") for k in (3, 5) for c in (96, 576) for hw in (4, 16)},
        **{f"dwstack{n}_{k}_{c}_{hw}": (dw_stack(k, c, hw, n), "ce") for n in (1, 2, 4) for k in (3, 5, 7)
           for c in (96, 192, 576) for hw in (1, 4, 16)},
        **{f"dwstack{n}s2_{k}_{c}_{hw}": (dw_stack(k, c, hw, n, 2), "ce") for n in (1,) for k in (5,) for c in (576,)
           for hw in (4, 16)},
        **{f"dense_stack{n}": (dense_stack(n), "ce") for n in (10, 40)},
        **{f"dense_bn_stack{n}": (dense_stack(n, bn=True), "ce") for n in (10, 40)},
        **{f"dense_drop_stack{n}": (dense_stack(n, drop=True), "ce") for n in (10, 40)},
        **{f"{c}_h{h}_t{t}": (rnn(c, h, t), "ce") for c in ("gru", "lstm") for h in (32, 128, 256, 512)
           for t in (8, 16, 24, 32, 48, 64, 128)},
        **{f"{'same' if same else 'distinct'}_{k}_{n}": (distinct(k, n, same), "ce") for k in ("conv", "convbn", "dw", "convrelu", "convswish", "convmul", "convadd",
                                                                                 "convbnns", "convcat", "convpool")
           for n in (4, 16) for same in (0, 1)},
        "cnx_dense_gconv": (cnx("dense_gconv"), "ce"),
        **{f"gconv_{n}_{c}_{hw}_{g}": (gconv(n, c, hw, g), "ce") for n in (1, 3, 12) for c in (96, 768)
           for hw in (1, 8) for g in (2, c)},
        "logits": (logits, "ce"),
        "logits_mse": (logits_mse, "mse"),
    }


class Tracker:
    def __init__(self):
        lib = ctypes.CDLL(None)
        self._live, self._peak, self._reset = lib.abacus_tracker_live, lib.abacus_tracker_peak, lib.abacus_tracker_reset_peak
        for f in (self._live, self._peak):
            f.restype = ctypes.c_longlong
        self._reset.restype = None

    def live(self):
        return int(self._live())

    def peak(self):
        return int(self._peak())

    def reset(self):
        self._reset()


def measure_one(tf, keras, build, batch, optim, tracker):
    objs = {}

    def setup():
        keras.utils.set_random_seed(0)
        model = build()
        shape = [batch] + [int(d) for d in model.inputs[0].shape[1:]]
        if model.inputs[0].dtype == "int32":
            x = tf.random.stateless_uniform(shape, seed=[0, 1], minval=0, maxval=1000, dtype=tf.int32)
        else:
            x = tf.random.stateless_normal(shape, seed=[0, 1])
        out = [int(d) for d in model.outputs[0].shape[1:]]
        if len(out) == 1:
            loss_obj = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            y = tf.random.stateless_uniform([batch], seed=[0, 2], minval=0, maxval=out[0], dtype=tf.int32)
        else:
            loss_obj = keras.losses.MeanSquaredError()
            y = tf.zeros([batch] + out)
        opt = (keras.optimizers.SGD(learning_rate=0.01, momentum=0.9) if optim == "sgd"
               else keras.optimizers.Adam(learning_rate=1e-3))
        variables = model.trainable_variables
        opt.build(variables)

        @tf.function(jit_compile=False)
        def train_step(x, y):
            with tf.GradientTape() as tape:
                loss = loss_obj(y, model(x, training=True))
            grads = tape.gradient(loss, variables)
            opt.apply_gradients(zip(grads, variables))
            return loss
        objs.update(model=model, x=x, y=y, opt=opt, fn=train_step)
        return lambda: train_step(x, y).numpy()

    def free():
        objs.clear()
        keras.backend.clear_session(free_memory=True)
        try:
            from tensorflow.python.framework import ops
            reg = ops._gradient_registry._registry  # noqa: SLF001 (collector/tf_worker.py drop_custom_gradients)
            for k in [k for k in reg if k.startswith("CustomGradient-")]:
                del reg[k]
        except (ImportError, AttributeError):
            pass
        gc.collect()

    step = setup()
    step(); step()
    del step
    free()
    base = tracker.live()
    step = setup()
    for _ in range(3):
        step()
    gc.collect()
    persistent = tracker.live() - base
    peaks = []
    for _ in range(2):
        tracker.reset()
        step()
        peaks.append(tracker.peak() - base)
    # The traced step's size: operations of its graph (forward, gradients and the optimizer's updates).
    objs["ops"] = len(objs["fn"].get_concrete_function(objs["x"], objs["y"]).graph.get_operations())
    ops = objs["ops"]
    del step
    free()
    return persistent, peaks, ops


def abacus_memory(abacus, path, batch, optim, runtime):
    cmd = [abacus, "inspect", path, "--batch", str(batch), "--optimizer", optim, "--format", "json"]
    if runtime:
        cmd += ["--runtime", runtime]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        return None
    return json.loads(r.stdout)["memory"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="all")
    ap.add_argument("--batches", default="4,16")
    ap.add_argument("--optimizers", default="sgd")
    ap.add_argument("--runtime", default="", help="--runtime for abacus inspect (default: its default)")
    ap.add_argument("--abacus", default=os.path.join(ROOT, "build/release/abacus"))
    ap.add_argument("--out-dir", default=os.path.join(tempfile.gettempdir(), "tf-rules"))
    ap.add_argument("--json", default="", help="also write the rows here")
    ap.add_argument("--from-json", default="", help="no measuring: compare the rows of this file (written by "
                    "--json, graphs still in --out-dir) with Abacus again")
    a = ap.parse_args(argv)
    if a.from_json:
        with open(a.from_json) as f:
            rows = json.load(f)
        print(f"{'model':13} {'opt':4} {'B':>3} {'persistent':>11} {'peak':>11} {'abacus_pers':>11} "
              f"{'abacus_peak':>11} {'diff':>11} {'diff%':>7}")
        for r in rows:
            mem = abacus_memory(a.abacus, os.path.join(a.out_dir, f"{r['model']}.onnx"), r["batch"], r["optimizer"],
                                a.runtime) or {"peak": 0, "persistent": 0}
            d = mem["peak"] - r["peak"]
            print(f"{r['model']:13} {r['optimizer']:4} {r['batch']:>3} {r['persistent']:>11} {r['peak']:>11} "
                  f"{mem['persistent']:>11} {mem['peak']:>11} {d:>11} {100.0 * d / r['peak']:>+6.1f}%")
        return 0
    tracker_so = os.path.join(ROOT, "build/release/libabacus_tracker.so")
    if "libabacus_tracker" not in os.environ.get("LD_PRELOAD", ""):
        env = dict(os.environ, **ENV, LD_PRELOAD=tracker_so)
        for k in UNSET:
            env.pop(k, None)
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    import keras
    import tensorflow as tf
    from collector import tf_export
    tracker = Tracker()
    zoo = models()
    names = list(zoo) if a.models == "all" else a.models.split(",")
    os.makedirs(a.out_dir, exist_ok=True)
    print(f"{'model':13} {'opt':4} {'B':>3} {'persistent':>11} {'peak':>11} {'peak2':>11} {'abacus_pers':>11} "
          f"{'abacus_peak':>11} {'diff':>11} {'diff%':>7} {'tf_ops':>5}", flush=True)
    rows = []
    for name in names:
        build, _ = zoo[name]
        path = os.path.join(a.out_dir, f"{name}.onnx")
        keras.backend.clear_session()
        keras.utils.set_random_seed(0)
        tf_export.export_built(build(), path, name, 0, "image")
        for optim in a.optimizers.split(","):
            for b in (int(x) for x in a.batches.split(",")):
                pers, peaks, ops = measure_one(tf, keras, build, b, optim, tracker)
                mem = abacus_memory(a.abacus, path, b, optim, a.runtime) or {"peak": 0, "persistent": 0}
                d = mem["peak"] - peaks[0]
                rows.append(dict(model=name, optimizer=optim, batch=b, persistent=pers, peak=peaks[0], peak2=peaks[1],
                                 abacus=mem, tf_ops=ops))
                print(f"{name:13} {optim:4} {b:>3} {pers:>11} {peaks[0]:>11} {peaks[1]:>11} {mem['persistent']:>11} "
                      f"{mem['peak']:>11} {d:>11} {100.0 * d / peaks[0]:>+6.1f}% {ops:>5}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
