"""The Python package against the CLI of the same checkout: the same graph must give the same numbers.

Run: python -m pytest python/tests (from the repository root, with the package installed or not: from a
checkout it loads build/release/libabacus.so). Needs torch and torchvision (Debian's python3-torch) and the
CLI (make); $ABACUS names another CLI binary.
"""
import json
import os
import subprocess
import sys
import warnings

import pytest
import torch
import torchvision

import abacus

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.environ.get("ABACUS") or os.path.join(REPO, "build", "release", "abacus")


def cli_json(*args):
    out = subprocess.run([CLI, *args, "--format", "json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def collector_export(tmp_path, net, size):
    """The collector's own export of a zoo network (what `abacus profile` writes to data/graphs)."""
    env = dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS="1")
    subprocess.run([sys.executable, "-m", "collector.export_onnx", "--models", net, "--sizes", str(size), "--out",
                    str(tmp_path), "--no-ops-table"], check=True, cwd=REPO, env=env, capture_output=True)
    name = f"{net}-{size}.onnx" if isinstance(size, int) else f"{net}-{size}.onnx"
    return str(tmp_path / name)


def g6(x):
    return f"{x:.6g}"


@pytest.fixture(scope="module")
def resnet_graph(tmp_path_factory):
    return collector_export(tmp_path_factory.mktemp("graphs"), "resnet18", 64)


def test_estimate_equals_cli_on_the_collectors_export(resnet_graph):
    torch.manual_seed(0)
    est = abacus.estimate(torchvision.models.resnet18(), input_size=(3, 64, 64), batch_size=8)
    ref = cli_json("predict", resnet_graph, "--batch", "8")
    # The CLI prints times with %.6g and bytes exactly: the same numbers to its last digit.
    assert (g6(est.time_s), g6(est.time_interval[0]), g6(est.time_interval[1])) == \
        (g6(ref["time_s"]), g6(ref["time_lo_s"]), g6(ref["time_hi_s"]))
    assert (est.memory_bytes, *est.memory_interval) == \
        (ref["memory_bytes"], ref["memory_lo_bytes"], ref["memory_hi_bytes"])
    assert est.breakdown == ref["memory_breakdown"]
    assert est.hw == ref["hw"] == "cpu1"
    assert [l.name for l in est.top_layers] == [l["name"] for l in ref["top_time_layers"]]
    assert g6(est.optimizer_step_share) == g6(ref["optimizer_step_share"])
    # The text reads as `abacus predict` does.
    text = subprocess.run([CLI, "predict", resnet_graph, "--batch", "8"], check=True, capture_output=True,
                          text=True).stdout.splitlines()
    assert abs(est.novelty - ref["novelty"]) <= 1e-3 * ref["novelty"] + 1e-6  # (the CLI prints 4 digits)
    # time, memory, the distance from the training graphs when the bundle gives one, and
    # "memory at the peak (simulated: in the backward of ...):"
    head = 6 if est.novelty > 0 else 5
    assert repr(est).splitlines()[1:head] == text[1:head]
    assert text[head - 1].startswith("memory at the peak")


def test_the_timeline_is_the_clis(resnet_graph):
    """estimate().timeline is `abacus inspect --timeline`: the same steps, layers and bytes; its peak step holds
    the simulated peak."""
    torch.manual_seed(0)
    est = abacus.estimate(torchvision.models.resnet18(), input_size=(3, 64, 64), batch_size=8)
    ref = cli_json("inspect", resnet_graph, "--batch", "8", "--timeline")
    assert [(e.phase, e.layer, e.peak_bytes, e.live_bytes) for e in est.timeline] == \
        [(e["phase"], e["layer"], e["peak"], e["live"]) for e in ref["timeline"]]
    pk = est.peak_step
    assert pk.peak_bytes == ref["memory"]["peak"] and pk.layer == ref["peak_step"]["layer"]
    assert pk.peak_bytes == est.breakdown["weights"] + est.breakdown["buffers"] + est.breakdown["optimizer"] + \
        est.breakdown["inputs"] + est.breakdown["gradients"] + est.breakdown["activations"] + \
        est.breakdown["workspace"]


def test_a_machine_without_avx_holds_more_for_convolutions(resnet_graph):
    # The hardware id names the machine's ISA and threads: two threads capped at SSE4.1 run the backward
    # of resnet18's convolutions through oneDNN's gemm path, whose per-thread scratchpad the simulation
    # holds (docs/COSTS.md "Capped ISA"); the binding passes them as the CLI does.
    hw = "cpu2@amd-f25m17-sse41-t2-8ed9a3b6"
    capped = abacus.estimate(resnet_graph, batch_size=4, hw=hw)
    ref = cli_json("predict", resnet_graph, "--batch", "4", "--hw", hw)
    assert capped.hw == ref["hw"] == hw
    assert (capped.memory_bytes, *capped.memory_interval) == \
        (ref["memory_bytes"], ref["memory_lo_bytes"], ref["memory_hi_bytes"])
    plain = abacus.estimate(resnet_graph, batch_size=4, hw="cpu2@amd-f25m17-avx512-t2-5ebe210b")
    assert capped.breakdown["workspace"] > plain.breakdown["workspace"]


def test_a_file_and_its_bytes_give_the_same_estimate(resnet_graph):
    a = abacus.estimate(resnet_graph, batch_size=4, optimizer="adam")
    with open(resnet_graph, "rb") as f:
        b = abacus.estimate(f.read(), batch_size=4, optimizer="adam")
    ref = cli_json("predict", resnet_graph, "--batch", "4", "--optimizer", "adam")
    assert a.memory_bytes == b.memory_bytes == ref["memory_bytes"]
    assert g6(a.time_s) == g6(b.time_s) == g6(ref["time_s"])


def test_token_model_equals_cli_on_the_collectors_export(tmp_path):
    sys.path.insert(0, REPO)
    try:
        from collector import zoo
    finally:
        sys.path.remove(REPO)
    path = collector_export(tmp_path, "lstm_lm", "L32")
    torch.manual_seed(0)
    est = abacus.estimate(zoo.get("lstm_lm").build(32), seq_len=32, batch_size=2, optimizer="adam")
    ref = cli_json("predict", path, "--batch", "2", "--optimizer", "adam")
    assert est.memory_bytes == ref["memory_bytes"] and g6(est.time_s) == g6(ref["time_s"])


def test_max_batch_and_plan_equal_cli(resnet_graph):
    ref = cli_json("plan", resnet_graph, "--mem", "512MiB")
    model = torchvision.models.resnet18()
    assert abacus.max_batch(model, input_size=(3, 64, 64), memory="512MiB") == ref["max_batch"] > 1
    rows = abacus.plan(model, input_size=(3, 64, 64), memory=512 << 20, as_dataframe=False)
    assert [r["batch"] for r in rows] == [r["batch"] for r in ref["batches"]]
    for mine, theirs in zip(rows, ref["batches"]):
        assert mine["memory_hi_bytes"] == theirs["memory_hi_bytes"] and mine["verdict"] == theirs["verdict"]
        assert g6(mine["epoch_s"]) == g6(theirs["epoch_s"])
    assert [r["batch"] for r in rows if r["largest_fitting"]] == [ref["max_batch"]]


def test_summary_counts_every_layer_and_parameter(resnet_graph):
    model = torchvision.models.resnet18()
    s = abacus.summary(model, input_size=(3, 64, 64), batch_size=8)
    ref = cli_json("inspect", resnet_graph, "--batch", "8")
    assert len(s.layers) == len(ref["layers"])
    assert sum(l.params for l in s.layers) == sum(p.numel() for p in model.parameters()) == 11689512
    first = s.layers[0]
    assert (first.op, first.output_shape, first.params) == ("Conv", (8, 64, 32, 32), 3 * 64 * 7 * 7)
    assert 0.99 < sum(l.time_share for l in s.layers) + s.estimate.optimizer_step_share < 1.01
    text = repr(s)
    assert "saved for backward" in text and "11,689,512" in text
    assert "<table>" in s._repr_html_()


def test_optimizer_objects():
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    by_name = abacus.estimate(model, input_size=(64,), batch_size=16, optimizer="adam")
    by_obj = abacus.estimate(model, input_size=(64,), batch_size=16, optimizer=torch.optim.AdamW(model.parameters()))
    assert by_obj.memory_bytes == by_name.memory_bytes and by_obj.optimizer == "adam"
    sgd = abacus.estimate(model, input_size=(64,), batch_size=16, optimizer=torch.optim.SGD(model.parameters(), 0.1,
                                                                                            momentum=0.9))
    assert sgd.breakdown["optimizer"] * 2 == by_name.breakdown["optimizer"] == 2 * 4 * (64 * 256 + 256 + 2570)
    with pytest.warns(UserWarning, match="momentum"):
        abacus.estimate(model, input_size=(64,), optimizer=torch.optim.SGD(model.parameters(), 0.1))
    with pytest.raises(abacus.AbacusError, match="'sgd'.*'adam'"):
        abacus.estimate(model, input_size=(64,), optimizer=torch.optim.RMSprop(model.parameters()))
    with pytest.raises(abacus.AbacusError, match="rmsprop"):
        abacus.estimate(model, input_size=(64,), optimizer="rmsprop")


def test_the_users_model_is_left_as_it_was():
    model = torchvision.models.resnet18()
    model.eval()
    before = model.bn1.running_mean.clone(), int(model.bn1.num_batches_tracked)
    rng = torch.get_rng_state()
    abacus.estimate(model, input_size=(3, 32, 32), batch_size=2)
    assert not model.training and not model.bn1.training
    assert torch.equal(model.bn1.running_mean, before[0]) and int(model.bn1.num_batches_tracked) == before[1]
    assert torch.equal(torch.get_rng_state(), rng)


def test_errors_say_what_and_where():
    model = torchvision.models.resnet18()
    with pytest.raises(abacus.AbacusError, match="exporting the model to ONNX failed.*input_size"):
        abacus.estimate(model, input_size=(1, 64, 64))       # 1 channel into a 3-channel stem
    with pytest.raises(abacus.AbacusError, match="exactly one of input_size"):
        abacus.estimate(model, input_size=(3, 64, 64), seq_len=8)
    with pytest.raises(abacus.AbacusError, match="no nn.Embedding"):
        abacus.estimate(model, seq_len=8)
    with pytest.raises(abacus.AbacusError, match="unsupported model object"):
        abacus.estimate(42, input_size=(3, 64, 64))
    with pytest.raises(abacus.AbacusError, match="cannot read the ONNX file"):
        abacus.estimate("/nonexistent/model.onnx")
    with pytest.raises(abacus.AbacusError) as e:
        abacus.estimate(b"\x08\x07garbage that is not a protobuf")
    assert e.value.code == -3  # ABACUS_EPARSE
    with pytest.raises(ValueError, match="batch_size"):
        abacus.estimate(model, input_size=(3, 64, 64), batch_size=0)
    with pytest.raises(ValueError, match="512MiB"):
        abacus.max_batch(model, input_size=(3, 64, 64), memory="12 parsecs")
    with pytest.raises(abacus.AbacusError, match="unknown hardware id 'gpu9'.*cpu1"):
        abacus.estimate(model, input_size=(3, 64, 64), hw="gpu9")
    # A budget smaller than the weights: no batch fits, and plan says so.
    assert abacus.max_batch(model, input_size=(3, 64, 64), memory="16MiB") == 0
    with pytest.raises(abacus.AbacusError, match="batch 1 does not fit in 16.00 MiB"):
        abacus.plan(model, input_size=(3, 64, 64), memory="16MiB")


def test_keras_models_are_refused_with_a_way_forward():
    Fake = type("Model", (), {"__module__": "keras.src.models.model"})
    with pytest.raises(abacus.AbacusError, match="TensorFlow runtime"):
        abacus.estimate(Fake(), input_size=(3, 32, 32))


def test_units():
    assert abacus.parse_bytes("2GiB") == abacus.parse_bytes("2G") == 2 << 30
    assert abacus.parse_bytes("2.5GB") == 2_500_000_000 and abacus.parse_bytes(4096) == 4096
    assert [abacus.fmt_duration(s) for s in (3.665e5, 2460, 6.26, 0.0756, 4e-5)] == \
        ["4.24 days", "41 min", "6.26 s", "75.6 ms", "40 µs"]
    assert abacus.fmt_bytes(152207091) == "145.16 MiB" and abacus.fmt_bytes(100) == "100 B"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert abacus.library_version() == abacus.__version__


class _TwiceAndDetached(torch.nn.Module):
    """One Linear applied twice to the same input (torch.onnx's common-subexpression pass merged the two),
    one of them detached (torch.onnx dropped the detach)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 32)

    def forward(self, x):
        return self.a(x) * self.a(x).detach()


def test_the_graph_is_the_step_training_runs():
    import onnx
    from abacus import _export
    data, _ = _export.graph_bytes(_TwiceAndDetached(), (16,), None, 0)
    m = onnx.load_from_string(data)
    ops = [(n.domain, n.op_type) for n in m.graph.node]
    assert ops.count(("", "Gemm")) + ops.count(("", "MatMul")) == 2, ops
    assert ops.count(("ai.abacus", "StopGradient")) == 1, ops
    # The Mul saves the detached operand only (2 × 32 floats at batch 2), not both (the gradient reaches
    # one side): the same graph without the StopGradient would save 512 B.
    est = abacus.estimate(_TwiceAndDetached(), input_size=(16,), batch_size=2)
    mul = [layer for layer in est.layers if layer.op == "Mul"]
    assert len(mul) == 1 and mul[0].saved_bytes == 256, mul
