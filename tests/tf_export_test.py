#!/usr/bin/python3
"""collector/tf_export.py on small Keras models built here (make check-collector runs it).

    ABACUS=build/release/abacus /usr/bin/python3 tests/tf_export_test.py

Re-executes itself under .runtimes/tf-2.21.0/bin/python; skips (exit 0, saying so) when that is missing.
Checks, per model, with numbers worked out beside each:
  - the parameters Abacus counts (`abacus inspect --format json`) equal the trainable variables and
    count_params() less the non-trainable weights; no op outside the op table;
  - BatchNormalization is one ONNX node in training mode, Dropout one training-mode Dropout, LSTM/GRU/
    Bidirectional one ONNX LSTM/GRU node, a grouped convolution one Conv with `group`;
  - the batch dim is `batch`, the metadata names the runtime and the layers that train;
  - two exports of one model in one process are byte-identical.
About 30 s.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = os.path.join(ROOT, ".runtimes", "tf-2.21.0", "bin", "python")
ABACUS = os.path.abspath(os.environ.get("ABACUS", os.path.join(ROOT, "build/release/abacus")))
FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def inspect(path):
    r = subprocess.run([ABACUS, "inspect", path, "--format", "json", "--runtime", "tf-2.21.0"],
                       capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr}


def main():
    try:
        import tensorflow  # noqa: F401
    except ImportError:
        if not os.path.exists(PY):
            print("skip: .runtimes/tf-2.21.0 is missing (bash scripts/setup.sh installs it)")
            return 0
        os.execv(PY, [PY] + sys.argv)
    sys.path.insert(0, ROOT)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    import onnx
    from collector import tf_export
    L = keras.layers

    def cnn():
        # Conv2D 3→8 3×3: 216 + 8; BN(8): γ, β 16 trainable + 16 statistics; Dropout; Conv2D 8→16 3×3 in
        # 2 groups: 4·3·3·16 + 16 = 592; GAP; Dense 16→10: 170. Trainable 216+8+16+592+170 = 1,002;
        # count_params 1,018.
        i = keras.Input((16, 16, 3))
        x = L.Conv2D(8, 3, padding="same")(i)
        x = L.BatchNormalization()(x)
        x = L.ReLU()(x)
        x = L.Dropout(0.25)(x)
        x = L.Conv2D(16, 3, padding="same", groups=2)(x)
        x = L.GlobalAveragePooling2D()(x)
        return keras.Model(i, L.Dense(10)(x)), 1002, 1018

    def rnn():
        # Embedding 100×8: 800; LSTM(12): 4·12·(8+12) + 48 = 1,008; GRU(6, reset_after): 3·6·(12+6) + 2·18
        # = 360; Bidirectional(LSTM(4)) on 6: 2·(4·4·(6+4) + 16) = 352; Dense 8→5: 45. 2,565.
        i = keras.Input((10,), dtype="int32")
        x = L.Embedding(100, 8)(i)
        x = L.LSTM(12, return_sequences=True)(x)
        x = L.GRU(6, return_sequences=True)(x)
        x = L.Bidirectional(L.LSTM(4, return_sequences=True))(x)
        return keras.Model(i, L.Dense(5)(x)), 2565, 2565

    tmp = tempfile.mkdtemp(prefix="abacus-tf-export-")
    for name, build, kind, ops in (("cnn", cnn, "image", {"BatchNormalization": 1, "Dropout": 1}),
                                   ("rnn", rnn, "tokens", {"LSTM": 2, "GRU": 1})):
        paths = []
        for k in range(2):
            keras.backend.clear_session()
            keras.utils.set_random_seed(0)
            model, trainable, count = build()
            check(model.count_params() == count, f"{name}: count_params() {model.count_params()} == {count}")
            path = os.path.join(tmp, f"{name}-{k}.onnx")
            info = tf_export.export_built(model, path, name, 16, kind)
            paths.append(path)
        d = inspect(paths[0])
        check("error" not in d, f"{name}: abacus loads it {d.get('error', '')}")
        if "error" in d:
            continue
        check(d["totals"]["params"] == trainable == info["params"] == info["count_params"] - info["non_trainable"],
              f"{name}: abacus params {d['totals']['params']} == trainable {trainable} == count_params - non-trainable")
        check(d["totals"]["unknown"] == 0, f"{name}: no unknown ops")
        m = onnx.load(paths[0])
        got = {}
        for n in m.graph.node:
            got[n.op_type] = got.get(n.op_type, 0) + 1
        for op, c in ops.items():
            check(got.get(op, 0) == c, f"{name}: {c} {op} node(s), got {got.get(op, 0)}")
        for n in m.graph.node:
            if n.op_type == "BatchNormalization":
                check(any(a.name == "training_mode" and a.i == 1 for a in n.attribute), f"{name}: BN in training mode")
            if n.op_type == "Dropout":
                check(len(n.input) == 3, f"{name}: Dropout has ratio and training_mode inputs")
        if name == "cnn":
            groups = [a.i for n in m.graph.node if n.op_type == "Conv" for a in n.attribute if a.name == "group"]
            check(2 in groups, f"{name}: the grouped convolution is a Conv with group 2 ({groups})")
        check(m.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch", f"{name}: batch dim named batch")
        meta = {e.key: e.value for e in m.metadata_props}
        check(meta.get("abacus.runtime") == "tf-2.21.0", f"{name}: metadata names the runtime")
        if name == "cnn":
            check(meta.get("abacus.tf.batchnorm", "").endswith(":8:fused"), f"{name}: metadata lists the BN")
            check(meta.get("abacus.tf.dropout", "").endswith(":0.25"), f"{name}: metadata lists the dropout")
            check(len(meta.get("abacus.buffers", "").split(",")) == 2, f"{name}: BN statistics are buffers")
        with open(paths[0], "rb") as f0, open(paths[1], "rb") as f1:
            check(f0.read() == f1.read(), f"{name}: two exports are byte-identical")
    print(f"{len(FAILS)} failed" if FAILS else "all passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
