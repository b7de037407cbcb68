"""Export Keras networks with collector/tf_export.py and check that Abacus reads each graph whole: every op
known, and its trainable parameters equal to Keras' (docs/PROTOCOL.md, "Graphs", runtime tf-2.21.0).

  .runtimes/tf-2.21.0/bin/python scripts/tf_graph_check.py [--models a,b] [--out-dir DIR] [--abacus BIN]

Networks come from collector/tf_zoo.py when it has the name, otherwise from the list below
(keras.applications with weights=None at their smallest input, and sequence models written with Keras
layers). The relation checked, per graph:

  abacus params  ==  model.count_params() - non-trainable weights  ==  sum of trainable variables

Keras' count_params() sums model.weights, which include the non-trainable ones (BatchNormalization's
moving mean and variance, a Normalization layer's mean, variance and count); the export lists those in
abacus.buffers and Abacus counts them as buffers, not parameters. Prints a table; exits 1 if a graph
fails to export, fails to load, has an op outside the op table or its count differs.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _apps(cls, size):
    import keras
    return lambda: getattr(keras.applications, cls)(weights=None, input_shape=(size, size, 3))


def _lstm_lm(kind="LSTM", vocab=8192, emb=256, hidden=512, seq=64):
    import keras
    def build():
        inp = keras.Input((seq,), dtype="int32")
        x = keras.layers.Embedding(vocab, emb)(inp)
        x = getattr(keras.layers, kind)(hidden, return_sequences=True)(x)
        x = keras.layers.Dropout(0.2)(x)
        return keras.Model(inp, keras.layers.Dense(vocab)(x))
    return build


def _transformer_encoder(vocab=8192, d=256, heads=4, ff=1024, layers=2, seq=64, classes=10):
    import keras
    def build():
        inp = keras.Input((seq,), dtype="int32")
        x = keras.layers.Embedding(vocab, d)(inp)
        for _ in range(layers):
            a = keras.layers.MultiHeadAttention(heads, d // heads)(x, x)
            x = keras.layers.LayerNormalization(epsilon=1e-5)(x + keras.layers.Dropout(0.1)(a))
            f = keras.layers.Dense(ff, activation="gelu")(x)
            f = keras.layers.Dense(d)(f)
            x = keras.layers.LayerNormalization(epsilon=1e-5)(x + keras.layers.Dropout(0.1)(f))
        x = keras.layers.GlobalAveragePooling1D()(x)
        return keras.Model(inp, keras.layers.Dense(classes)(x))
    return build


def _text_cnn(vocab=8192, emb=128, seq=64, classes=10):
    import keras
    def build():
        inp = keras.Input((seq,), dtype="int32")
        x = keras.layers.Embedding(vocab, emb)(inp)
        pools = []
        for k in (3, 4, 5):
            c = keras.layers.Conv1D(100, k, activation="relu")(x)
            pools.append(keras.layers.GlobalMaxPooling1D()(c))
        x = keras.layers.Concatenate()(pools)
        x = keras.layers.Dropout(0.5)(x)
        return keras.Model(inp, keras.layers.Dense(classes)(x))
    return build


# name -> (size, kind, builder factory): used for names collector/tf_zoo.py does not have
APPS = [("MobileNetV2", 32), ("ResNet50", 32), ("VGG16", 32), ("DenseNet121", 32), ("EfficientNetB0", 32),
        ("InceptionV3", 75), ("ConvNeXtTiny", 32), ("Xception", 71), ("NASNetMobile", 32),
        ("MobileNetV3Small", 32), ("MobileNet", 32), ("ResNet50V2", 32), ("EfficientNetV2B0", 32),
        ("InceptionResNetV2", 75), ("MobileNetV3Large", 32), ("VGG19", 32), ("ResNet101", 32),
        ("DenseNet169", 32), ("EfficientNetB3", 32), ("ConvNeXtSmall", 32), ("RegNetX002", 32)]
FALLBACK = {f"keras_{c.lower()}": (s, "image", (lambda c=c, s=s: _apps(c, s))) for c, s in APPS}
FALLBACK.update({
    "keras_lstm_lm": (64, "tokens", lambda: _lstm_lm("LSTM")),
    "keras_gru_lm": (64, "tokens", lambda: _lstm_lm("GRU")),
    "keras_transformer_enc": (64, "tokens", lambda: _transformer_encoder()),
    "keras_text_cnn": (64, "tokens", lambda: _text_cnn()),
})
DEFAULT = ["keras_mobilenet_v2", "keras_resnet50", "keras_vgg16", "keras_densenet121", "keras_efficientnet_b0",
           "keras_inception_v3", "keras_convnext_tiny", "keras_xception", "keras_nasnet_mobile",
           "keras_mobilenet_v3_small", "keras_lstm_lm", "keras_gru_lm", "keras_gru_classifier",
           "keras_bilstm_tagger", "keras_transformer_enc", "keras_textcnn"]


def _entry(name):
    """(size, kind, build()) from collector/tf_zoo.py when it knows the name, else from FALLBACK."""
    try:
        from collector import tf_zoo
        net = tf_zoo.get(name)
        sizes = list(getattr(net, "sizes", []) or getattr(net, "candidates", []))
        size = min(sizes) if sizes else FALLBACK[name][0]
        return size, getattr(net, "kind", "image"), (lambda: net.build(size)), "tf_zoo"
    except Exception:  # noqa: BLE001 - not (yet) in the zoo
        if name not in FALLBACK:
            raise
        size, kind, factory = FALLBACK[name]
        return size, kind, factory(), "built-in"


def _inspect(abacus, path):
    r = subprocess.run([abacus, "inspect", path, "--format", "json"], capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"rc {r.returncode}"
    return json.loads(r.stdout), ""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(DEFAULT),
                    help="comma list, 'zoo' (every network of collector/tf_zoo.py) or 'builtin' (the list here)")
    ap.add_argument("--out-dir", default=None, help="where graphs go (default: a temporary folder)")
    ap.add_argument("--abacus", default="build/release/abacus")
    a = ap.parse_args(argv)
    import keras
    from collector import tf_export
    if a.models == "zoo":
        from collector import tf_zoo
        names = list(tf_zoo.NAMES)
    elif a.models == "builtin":
        names = list(FALLBACK)
    else:
        names = [n.strip() for n in a.models.split(",") if n.strip()]
    out = a.out_dir or tempfile.mkdtemp(prefix="tf-graphs-")
    os.makedirs(out, exist_ok=True)
    hdr = f"{'network':26} {'size':>5} {'count_params':>13} {'non_train':>10} {'trainable':>11} {'abacus':>11} " \
          f"{'unknown':>7} {'layers':>6} {'GFLOP f+b':>9} {'s':>5}  result"
    print(hdr)
    bad = 0
    for name in names:
        t0 = time.time()
        try:
            size, kind, build, src = _entry(name)
            keras.backend.clear_session()
            keras.utils.set_random_seed(0)
            model = build()
            path = os.path.join(out, tf_export.graph_file(name, size, kind))
            info = tf_export.export_built(model, path, name, size, kind)
            del model
        except Exception as e:  # noqa: BLE001
            bad += 1
            print(f"{name:26} {'':>5} export failed: {type(e).__name__}: {' '.join(str(e).split())[:150]}",
                  flush=True)
            continue
        d, err = _inspect(a.abacus, path)
        if d is None:
            bad += 1
            print(f"{name:26} {size:>5} {info['count_params']:>13} {info['non_trainable']:>10} "
                  f"{info['params']:>11} {'-':>11} load failed: {err}", flush=True)
            continue
        tot = d["totals"]
        unknown = sorted({u.get("op", str(u)) if isinstance(u, dict) else str(u) for u in d.get("unknown_ops", [])})
        ok = tot["params"] == info["params"] == info["count_params"] - info["non_trainable"] and not unknown
        bad += not ok
        gf = (tot["forward_flops"] + tot["backward_flops"]) / 1e9
        print(f"{name:26} {size:>5} {info['count_params']:>13} {info['non_trainable']:>10} {info['params']:>11} "
              f"{tot['params']:>11} {tot['unknown']:>7} {tot['layers']:>6} {gf:>9.3f} {time.time() - t0:>5.1f}  "
              f"{'ok' if ok else 'MISMATCH'}{' unknown ' + ','.join(unknown) if unknown else ''}"
              f"{' [' + info['notes'] + ']' if info['notes'] else ''}", flush=True)
    print(f"graphs in {out}; {bad} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
