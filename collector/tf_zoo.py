"""The Keras zoo: every network the TensorFlow collector (collector/tf_worker.py, runtime tf-2.21.0) measures.

The counterpart of collector/zoo.py for TensorFlow 2.21 with Keras 3. Names start with `keras_`, so that they
never collide with the PyTorch zoo's (`keras_resnet50` is Keras's ResNet50, `resnet50` torchvision's).

Each entry of REGISTRY is a `Net`:
  name        unique name (also the graph file stem: keras_resnet50-64.onnx, keras_lstm_lm-L128.onnx)
  kind        'image' (input NHWC float32 of shape [B, size, size, channels]; the CSV's input_shape still
              says B x C x H x W, as for PyTorch rows, so that equal configurations read alike)
              'tokens' (input int32 [B, L] in [0, vocab), L = size)
  build(size) -> keras.Model, random weights (weights=None), float32, logits out (classifier_activation
              None: the loss takes logits, as PyTorch's CrossEntropyLoss does)
  family, channels, vocab as in zoo.py
  sizes       valid input sizes: for keras.applications every IMAGE_SIZES entry >= the network's minimum
              input (Keras's own check: 32, Xception 71, InceptionV3 / InceptionResNetV2 75), with the minimum
              itself first where it is not one of them; for sequence models TOKEN_LENGTHS. `--probe` builds
              and trains each network once at batch 1 on its smallest size and checks that one pixel less
              is refused (docs/COLLECTOR.md records the run).
  make_input(batch, size) -> the input tensor (stateless random ops: the same tensor in every process)
  torch_twin  the PyTorch zoo's name of the same architecture, where there is one ("" otherwise): for the
              side-by-side comparison of the two frameworks, not an identity (parameter counts differ
              slightly: Keras's LSTM has one bias vector per gate, PyTorch's two)

Nothing is imported from TensorFlow or Keras until a network is built, so `--list` is fast:
  .runtimes/tf-2.21.0/bin/python -m collector.tf_zoo            # the table
  .runtimes/tf-2.21.0/bin/python -m collector.tf_zoo --probe    # check the minimum sizes (slow, ~10 min)
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Sequence

IMAGE_SIZES = (32, 48, 64, 96, 128, 160, 224)  # as collector/zoo.py
TOKEN_LENGTHS = (32, 64, 128, 256, 512)
TOKEN_VOCAB = 8192
CLASSES = 1000  # keras.applications' (and torchvision's) default head


@dataclasses.dataclass
class Net:
    name: str
    kind: str  # 'image' | 'tokens'
    build: Callable[[int], object]
    family: str = ""
    channels: int = 3
    vocab: int = 0
    sizes: Sequence[int] = ()
    torch_twin: str = ""

    def make_input(self, batch: int, size: int):
        import tensorflow as tf
        if self.kind == "image":
            return tf.random.stateless_normal([batch, size, size, self.channels], seed=[0, 0], dtype=tf.float32)
        return tf.random.stateless_uniform([batch, size], seed=[0, 1], minval=0, maxval=self.vocab, dtype=tf.int32)

    def graph_file(self, size: int) -> str:
        return f"{self.name}-{size}.onnx" if self.kind == "image" else f"{self.name}-L{size}.onnx"


# ---------------------------------------------------------------------------------------------------
# keras.applications: (zoo name, constructor, family, minimum input side, PyTorch twin)
# ---------------------------------------------------------------------------------------------------
APPLICATIONS = [
    ("keras_convnext_tiny", "ConvNeXtTiny", "convnext", 32, "convnext_tiny"),
    ("keras_convnext_small", "ConvNeXtSmall", "convnext", 32, "convnext_small"),
    ("keras_convnext_base", "ConvNeXtBase", "convnext", 32, "convnext_base"),
    ("keras_convnext_large", "ConvNeXtLarge", "convnext", 32, "convnext_large"),
    ("keras_convnext_xlarge", "ConvNeXtXLarge", "convnext", 32, ""),
    ("keras_densenet121", "DenseNet121", "densenet", 32, "densenet121"),
    ("keras_densenet169", "DenseNet169", "densenet", 32, "densenet169"),
    ("keras_densenet201", "DenseNet201", "densenet", 32, "densenet201"),
    ("keras_efficientnet_b0", "EfficientNetB0", "efficientnet", 32, "efficientnet_b0"),
    ("keras_efficientnet_b1", "EfficientNetB1", "efficientnet", 32, "efficientnet_b1"),
    ("keras_efficientnet_b2", "EfficientNetB2", "efficientnet", 32, "efficientnet_b2"),
    ("keras_efficientnet_b3", "EfficientNetB3", "efficientnet", 32, "efficientnet_b3"),
    ("keras_efficientnet_b4", "EfficientNetB4", "efficientnet", 32, "efficientnet_b4"),
    ("keras_efficientnet_b5", "EfficientNetB5", "efficientnet", 32, "efficientnet_b5"),
    ("keras_efficientnet_b6", "EfficientNetB6", "efficientnet", 32, "efficientnet_b6"),
    ("keras_efficientnet_b7", "EfficientNetB7", "efficientnet", 32, "efficientnet_b7"),
    ("keras_efficientnet_v2_b0", "EfficientNetV2B0", "efficientnet_v2", 32, ""),
    ("keras_efficientnet_v2_b1", "EfficientNetV2B1", "efficientnet_v2", 32, ""),
    ("keras_efficientnet_v2_b2", "EfficientNetV2B2", "efficientnet_v2", 32, ""),
    ("keras_efficientnet_v2_b3", "EfficientNetV2B3", "efficientnet_v2", 32, ""),
    ("keras_efficientnet_v2_s", "EfficientNetV2S", "efficientnet_v2", 32, "efficientnet_v2_s"),
    ("keras_efficientnet_v2_m", "EfficientNetV2M", "efficientnet_v2", 32, "efficientnet_v2_m"),
    ("keras_efficientnet_v2_l", "EfficientNetV2L", "efficientnet_v2", 32, "efficientnet_v2_l"),
    ("keras_inception_v3", "InceptionV3", "inception", 75, "inception_v3"),
    ("keras_inception_resnet_v2", "InceptionResNetV2", "inception", 75, ""),
    ("keras_mobilenet", "MobileNet", "mobilenet", 32, ""),
    ("keras_mobilenet_v2", "MobileNetV2", "mobilenet_v2", 32, "mobilenet_v2"),
    ("keras_mobilenet_v3_small", "MobileNetV3Small", "mobilenet_v3", 32, "mobilenet_v3_small"),
    ("keras_mobilenet_v3_large", "MobileNetV3Large", "mobilenet_v3", 32, "mobilenet_v3_large"),
    ("keras_nasnet_mobile", "NASNetMobile", "nasnet", 32, ""),
    ("keras_nasnet_large", "NASNetLarge", "nasnet", 32, ""),
    ("keras_resnet50", "ResNet50", "resnet", 32, "resnet50"),
    ("keras_resnet101", "ResNet101", "resnet", 32, "resnet101"),
    ("keras_resnet152", "ResNet152", "resnet", 32, "resnet152"),
    ("keras_resnet50_v2", "ResNet50V2", "resnet_v2", 32, ""),
    ("keras_resnet101_v2", "ResNet101V2", "resnet_v2", 32, ""),
    ("keras_resnet152_v2", "ResNet152V2", "resnet_v2", 32, ""),
    ("keras_vgg16", "VGG16", "vgg", 32, "vgg16"),
    ("keras_vgg19", "VGG19", "vgg", 32, "vgg19"),
    ("keras_xception", "Xception", "xception", 71, ""),
]


def _image_sizes(minimum: int) -> List[int]:
    sizes = [s for s in IMAGE_SIZES if s >= minimum]
    return sizes if minimum in sizes else [minimum] + sizes


def _build_app(ctor: str, size: int):
    import keras
    fn = getattr(keras.applications, ctor)
    kw = dict(weights=None, input_shape=(size, size, 3), classes=CLASSES, classifier_activation=None)
    # MobileNetV3's constructor also asks for its preprocessing and minimalistic flags; the defaults stand.
    return fn(**kw)


# ---------------------------------------------------------------------------------------------------
# Sequence models written with Keras layers (the same sizes as collector/zoo.py's PyTorch ones)
# ---------------------------------------------------------------------------------------------------
def _tokens(L: int):
    import keras
    return keras.Input(shape=(L,), dtype="int32", name="tokens")


def _rnn_lm(cell: str, L: int, emb=256, hidden=512, layers=2):
    """Embedding, two LSTM/GRU layers with H 512, logits over the vocabulary per token ([B, L, V])."""
    import keras
    x = inp = _tokens(L)
    x = keras.layers.Embedding(TOKEN_VOCAB, emb)(x)
    rnn = keras.layers.LSTM if cell == "lstm" else keras.layers.GRU
    for _ in range(layers):
        x = rnn(hidden, return_sequences=True)(x)
    return keras.Model(inp, keras.layers.Dense(TOKEN_VOCAB)(x), name=f"{cell}_lm")


def _gru_classifier(L: int, emb=64, hidden=128, classes=4):
    """Embedding, one GRU layer with H 128, classes from the last hidden state ([B, 4])."""
    import keras
    x = inp = _tokens(L)
    x = keras.layers.Embedding(TOKEN_VOCAB, emb)(x)
    x = keras.layers.GRU(hidden)(x)
    return keras.Model(inp, keras.layers.Dense(classes)(x), name="gru_classifier")


def _bilstm_tagger(L: int, emb=128, hidden=256, tags=32):
    """Embedding, one bidirectional LSTM layer, a tag per token ([B, L, 32])."""
    import keras
    x = inp = _tokens(L)
    x = keras.layers.Embedding(TOKEN_VOCAB, emb)(x)
    x = keras.layers.Bidirectional(keras.layers.LSTM(hidden, return_sequences=True))(x)
    return keras.Model(inp, keras.layers.Dense(tags)(x), name="bilstm_tagger")


def _textcnn(L: int, emb=128, filters=128, classes=10, dropout=0.5):
    """Embedding, 1-D convolutions of widths 3, 4, 5 with ReLU, max over time, dropout, classes ([B, 10])."""
    import keras
    x = inp = _tokens(L)
    h = keras.layers.Embedding(TOKEN_VOCAB, emb)(x)
    pooled = [keras.layers.GlobalMaxPooling1D()(keras.layers.Conv1D(filters, k, activation="relu")(h))
              for k in (3, 4, 5)]
    h = keras.layers.Dropout(dropout)(keras.layers.Concatenate()(pooled))
    return keras.Model(inp, keras.layers.Dense(classes)(h), name="textcnn")


_POSITION_EMBEDDING = []


def _position_embedding():
    """A layer adding learned positions (a [max_len, d] table, the first L rows) to token embeddings."""
    if not _POSITION_EMBEDDING:
        import keras

        class PositionEmbedding(keras.layers.Layer):
            def __init__(self, max_len, dim, **kw):
                super().__init__(**kw)
                self.max_len, self.dim = max_len, dim

            def build(self, input_shape):
                self.table = self.add_weight(shape=(self.max_len, self.dim), initializer="random_normal",
                                             name="positions")

            def call(self, x):
                return x + self.table[None, :keras.ops.shape(x)[1], :]

        _POSITION_EMBEDDING.append(PositionEmbedding)
    return _POSITION_EMBEDDING[0]


def _transformer_enc(L: int, d_model=256, heads=4, layers=4, ff=1024, max_len=512, classes=10, dropout=0.1):
    """Token embedding + learned positions, 4 post-LayerNorm encoder blocks (d 256, 4 heads, ff 1024, ReLU,
    dropout 0.1: PyTorch's nn.TransformerEncoderLayer defaults), LayerNorm, mean over tokens, classes."""
    import keras
    x = inp = _tokens(L)
    h = _position_embedding()(max_len, d_model)(keras.layers.Embedding(TOKEN_VOCAB, d_model)(x))
    for _ in range(layers):
        a = keras.layers.MultiHeadAttention(heads, d_model // heads, dropout=dropout)(h, h)
        h = keras.layers.LayerNormalization(epsilon=1e-5)(h + keras.layers.Dropout(dropout)(a))
        f = keras.layers.Dense(ff, activation="relu")(h)
        f = keras.layers.Dense(d_model)(keras.layers.Dropout(dropout)(f))
        h = keras.layers.LayerNormalization(epsilon=1e-5)(h + keras.layers.Dropout(dropout)(f))
    h = keras.layers.LayerNormalization(epsilon=1e-5)(h)
    h = keras.layers.GlobalAveragePooling1D()(h)
    return keras.Model(inp, keras.layers.Dense(classes)(h), name="transformer_enc")


def _mlp(size: int, channels=3, widths=(256, 256, 128), classes=10):
    """The image flattened, Dense+ReLU layers, 10 classes: collector/zoo.py's mlp (886,666 parameters at 32)."""
    import keras
    x = inp = keras.Input(shape=(size, size, channels), name="image")
    x = keras.layers.Flatten()(x)
    for w in widths:
        x = keras.layers.Dense(w, activation="relu")(x)
    return keras.Model(inp, keras.layers.Dense(classes)(x), name="mlp")


def _make_registry() -> Dict[str, Net]:
    import functools
    reg: Dict[str, Net] = {}
    for name, ctor, family, minimum, twin in APPLICATIONS:
        reg[name] = Net(name, "image", functools.partial(_build_app, ctor), family=family,
                        sizes=_image_sizes(minimum), torch_twin=twin)
    tokens = dict(kind="tokens", vocab=TOKEN_VOCAB, sizes=TOKEN_LENGTHS)
    custom = [
        Net("keras_mlp", "image", _mlp, family="mlp", sizes=IMAGE_SIZES, torch_twin="mlp"),
        Net("keras_lstm_lm", build=functools.partial(_rnn_lm, "lstm"), family="rnn", torch_twin="lstm_lm", **tokens),
        Net("keras_gru_lm", build=functools.partial(_rnn_lm, "gru"), family="rnn", torch_twin="gru_lm", **tokens),
        Net("keras_gru_classifier", build=_gru_classifier, family="rnn", torch_twin="gru_classifier", **tokens),
        Net("keras_bilstm_tagger", build=_bilstm_tagger, family="rnn", torch_twin="bilstm_tagger", **tokens),
        Net("keras_textcnn", build=_textcnn, family="textcnn", torch_twin="textcnn", **tokens),
        Net("keras_transformer_enc", build=_transformer_enc, family="transformer", torch_twin="transformer_enc",
            **tokens),
    ]
    for net in custom:
        reg[net.name] = net
    return reg


REGISTRY: Dict[str, Net] = _make_registry()
_APP_NAMES = {a[0] for a in APPLICATIONS}
NAMES: List[str] = list(REGISTRY)


def get(name: str) -> Net:
    return REGISTRY[name]


def listing(net: Net) -> dict:
    """The --list line of a network (the same fields as collector/worker.py's, plus torch_twin)."""
    return {"name": net.name, "kind": net.kind, "family": net.family, "channels": net.channels, "vocab": net.vocab,
            "sizes": [int(s) for s in net.sizes], "torch_twin": net.torch_twin}


def try_size(net: Net, size: int, batch: int = 1):
    """Builds the network and trains it one step eagerly at `size`; None if it works, else the error text."""
    import keras
    import tensorflow as tf
    try:
        keras.utils.set_random_seed(0)
        model = net.build(size)
        x = net.make_input(batch, size)
        with tf.GradientTape() as tape:
            out = model(x, training=True)
            loss = tf.reduce_mean(tf.square(out))
        grads = tape.gradient(loss, model.trainable_variables)
        if any(g is None for g in grads):
            return "a trainable variable got no gradient"
        return None
    except Exception as e:  # noqa: BLE001 - any failure means the size is not valid
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
    finally:
        keras.backend.clear_session()


def probe(names: Sequence[str], log=print) -> int:
    """Checks each network's smallest listed size trains and, for keras.applications, that one pixel less is
    refused (2026-12-05: all 40 train at their minimum and refuse one pixel less; the 7 others train at 32)."""
    bad = 0
    for n in names:
        net = REGISTRY[n]
        lo = min(net.sizes)
        err = try_size(net, lo)
        # keras.applications refuse inputs below their minimum; the networks written here have none.
        below = try_size(net, lo - 1) if net.name in _APP_NAMES else "n/a"
        ok = err is None and below is not None
        bad += not ok
        log(f"{n}: {lo} {'trains' if err is None else 'FAILS: ' + err}; {lo - 1}: "
            f"{'refused (' + below[:80] + ')' if below and below != 'n/a' else below or 'TRAINS'}", flush=True)
    return bad


if __name__ == "__main__":
    import argparse
    import sys

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--probe", action="store_true", help="check the smallest size of each network (slow)")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    if a.probe:
        sys.exit(1 if probe(a.names or NAMES, log=lambda *x, **k: print(*x, **k)) else 0)
    for n, net in REGISTRY.items():
        print(n, net.kind, net.family, list(net.sizes), net.torch_twin or "-", sep="\t")
