#!/usr/bin/python3
"""Writes the seed corpus for fuzz_onnx: small hand-built ONNX graphs covering the op families
(convolution, pooling, matmul, normalisation, shape folding, recurrent). Run once; seeds are committed.
Usage: /usr/bin/python3 fuzz/make_seeds.py fuzz/corpus/onnx"""
import os
import sys

from onnx import TensorProto, helper


def model(name, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    return m.SerializeToString()


def inp(name, dims, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, dims)


def w(name, dims):
    # Graph-only: dims and type, no data (as Abacus' exported graphs are).
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.extend(dims)
    return t


def ints(name, vals):
    return helper.make_tensor(name, TensorProto.INT64, [len(vals)], vals)


def main(out):
    os.makedirs(out, exist_ok=True)
    seeds = {
        "conv_bn_relu_pool": model("a", [
            helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
            helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n", "rm", "rv"], training_mode=1),
            helper.make_node("Relu", ["n"], ["r"]),
            helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
            helper.make_node("GlobalAveragePool", ["p"], ["y"]),
        ], [inp("x", ["batch", 3, 16, 16])], [inp("y", None)],
            [w("w", [8, 3, 3, 3]), w("s", [8]), w("b", [8]), w("m", [8]), w("v", [8])]),
        "view_fold": model("b", [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
            helper.make_node("Concat", ["n", "m1"], ["shape"], axis=0),
            helper.make_node("Reshape", ["x", "shape"], ["f"]),
            helper.make_node("Gemm", ["f", "w"], ["y"], transB=1),
        ], [inp("x", ["batch", 2, 4, 4])], [inp("y", None)], [ints("zero", [0]), ints("m1", [-1]), w("w", [5, 32])]),
        "attention": model("c", [
            helper.make_node("MatMul", ["x", "wq"], ["q"]),
            helper.make_node("MatMul", ["x", "wk"], ["k"]),
            helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
            helper.make_node("MatMul", ["q", "kt"], ["s"]),
            helper.make_node("Softmax", ["s"], ["p"], axis=-1),
            helper.make_node("Dropout", ["p", "ratio", "train"], ["d", "mask"]),
            helper.make_node("MatMul", ["d", "x"], ["y"]),
        ], [inp("x", ["batch", 6, 8])], [inp("y", None)],
            [w("wq", [8, 8]), w("wk", [8, 8]), helper.make_tensor("ratio", TensorProto.FLOAT, [], [0.1]),
             helper.make_tensor("train", TensorProto.BOOL, [], [True])]),
        "lstm_tokens": model("d", [
            helper.make_node("Gather", ["emb", "tok"], ["e"]),
            helper.make_node("Transpose", ["e"], ["t"], perm=[1, 0, 2]),
            helper.make_node("LSTM", ["t", "W", "R", "B"], ["y", "yh", "yc"], hidden_size=4),
        ], [inp("tok", ["batch", 5], TensorProto.INT64)], [inp("y", None)],
            [w("emb", [10, 3]), w("W", [1, 16, 3]), w("R", [1, 16, 4]), w("B", [1, 32])]),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "fuzz/corpus/onnx")
