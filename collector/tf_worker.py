#!/usr/bin/env python3
"""Abacus collector worker for TensorFlow (runtime tf-2.21.0): measures Keras training steps under
docs/PROTOCOL.md ("Runtime tf-2.21.0").

The twin of collector/worker.py, speaking the same JSON-lines protocol to `abacus profile --runtime tf-2.21.0`
(cli/profile/cmd_profile.c), which starts it as `.runtimes/tf-2.21.0/bin/python collector/tf_worker.py --serve
--threads T` with PYTHONPATH at the repository root, the tracker preloaded and TensorFlow's environment set
before the interpreter starts (TF_NUM_INTRAOP_THREADS=T, TF_NUM_INTEROP_THREADS=1, TF_ENABLE_ONEDNN_OPTS=1,
TF_ONEDNN_USE_SYSTEM_ALLOCATOR=1, ...: cli/profile/worker.c):

  worker -> {"ready": true, "torch_version": "2.21.0" (TensorFlow), "torchvision_version": "3.15.1" (Keras),
             "runtime": "tf-2.21.0", "tracker": true, "tracker_selftest": true, "machine": ..., ...}
  C      -> {"id": 7, "network": "keras_resnet50", "size": 64, "batch": 4, "optimizer": "sgd", "graph": ...}
  worker -> {"id": 7, "status": "ok", "time_s": ..., "memory_bytes": ..., ...}
  ... until stdin closes; {"cmd": "list"} is answered with the Keras zoo, then {"listed": N}.

The CSV has no TensorFlow columns: a tf-* row's `torch_version` holds tf.__version__ and its
`torchvision_version` keras.__version__ (the framework and its model library, as for PyTorch rows; the
`runtime` column says which framework). docs/DATASET.md says so.

Modes (a module of the collector package: run from the repository root as
`.runtimes/tf-2.21.0/bin/python -m collector.tf_worker ...`):
  --list                 the Keras zoo (collector/tf_zoo.py) as JSON lines, as worker.py --list prints its zoo
  --serve --threads T    configurations as JSON lines on stdin (what `abacus profile --runtime tf-2.21.0` uses)
  --config JSON ...      the given configurations (repeatable), results on stdout
  --machine              this machine's id and descriptor for runtime tf-2.21.0
  --calibrate            the reference workload in TensorFlow, timed now

One configuration (the order of worker.py; what differs is TensorFlow's):
  dry run: build it, 2 steps (judged against --max-iter-seconds), free it, keras.backend.clear_session(),
           the reference workload once (its kernels exist again), gc.collect(); baseline = live bytes
  build again (keras.utils.set_random_seed(0)), input, targets, optimizer with its variables
  (optimizer.build), the step as one tf.function(jit_compile=False): GradientTape, forward in training
  mode, loss, gradients, optimizer.apply_gradients; 3 warm-up steps (the first traces it)
  calib_before, gc.collect(), persistent = live - baseline
  reset peak; >= 10 timed steps (until >= 1 s, at most 50), each including `.numpy()` of the loss, gc off;
  memory = peak - baseline; the step must have been traced exactly once (else an error row)
  calib_after; free everything (clear_session); export the graph if missing (collector/tf_export.py)
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import re
import statistics
import subprocess
import sys
import time
import traceback

from collector.worker import (DRY_ITERS, PROTOCOL, PROTOCOL_MALLOC, CALIB_RUNS, Skip, Tracker, _proc_cpus, emit,
                              g9, graph_status, is_oom, log, one_line, protocol_stdout, timed_pass)

RUNTIME_PREFIX = "tf-"
# The environment docs/PROTOCOL.md fixes for TensorFlow workers (set by cli/profile/worker.c before the
# interpreter starts: TensorFlow reads it once, when its runtime is created). `None`: must be unset.
def protocol_tf_env(threads: int) -> dict:
    return {"TF_NUM_INTRAOP_THREADS": str(threads), "TF_NUM_INTEROP_THREADS": "1", "TF_ENABLE_ONEDNN_OPTS": "1",
            "TF_ONEDNN_USE_SYSTEM_ALLOCATOR": "1", "TF_CPU_ALLOCATOR_USE_BFC": None,
            "ONEDNN_DEFAULT_FPMATH_MODE": None, "TF_XLA_FLAGS": None, "OMP_NUM_THREADS": str(threads)}


SELFTEST_BYTES = 256 << 20


def runtime_name(tf) -> str:
    """'tf-2.21.0': the release of the installed wheel (tensorflow-cpu's metadata), else tf.__version__."""
    ver = None
    try:
        from importlib import metadata
        for dist in ("tensorflow-cpu", "tensorflow"):
            try:
                ver = metadata.version(dist)
                break
            except metadata.PackageNotFoundError:
                continue
    except Exception:  # noqa: BLE001
        ver = None
    return RUNTIME_PREFIX + (ver or tf.__version__).split("+")[0]


def onednn_enabled() -> bool:
    """Whether TensorFlow runs its oneDNN kernels (built with them, and TF_ENABLE_ONEDNN_OPTS not 0)."""
    try:
        from tensorflow.python.util import _pywrap_util_port
        built = bool(_pywrap_util_port.IsMklEnabled())
    except Exception:  # noqa: BLE001 - older layouts
        built = True
    return built and os.environ.get("TF_ENABLE_ONEDNN_OPTS", "1") not in ("0", "false", "False")


def blas_name() -> str:
    """What runs TensorFlow's matrix products and convolutions: its bundled oneDNN (MatMul, Conv2D and
    their gradients go to oneDNN's gemm and convolution primitives, the rest to Eigen), or Eigen alone
    when oneDNN is off. Neither is a system library, hence `bundled-` as for PyPI torch's MKL."""
    return "bundled-onednn" if onednn_enabled() else "bundled-eigen"


_ISA_PROBE = r"""
import tensorflow as tf
x = tf.ones([1, 8, 8, 4]); w = tf.ones([3, 3, 4, 4])
tf.nn.conv2d(x, w, 1, "SAME")
"""


def start_capability_probe():
    """oneDNN says which instruction set it dispatches to only in its verbose log, which cannot be turned off
    again in a process: a short child process with ONEDNN_VERBOSE=1 (and this worker's environment, ISA cap
    included) runs one convolution and the first lines of its log are read (capability_of)."""
    if not onednn_enabled():
        return None
    env = dict(os.environ, ONEDNN_VERBOSE="1", TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("LD_PRELOAD", None)
    try:
        return subprocess.Popen([sys.executable, "-c", _ISA_PROBE], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
    except OSError:
        return None


def capability_of(probe) -> str:
    """'oneDNN v3.7.3 Intel AVX-512 with Intel DL Boost and bfloat16 support' (the version and the ISA oneDNN
    chose), 'Eigen (oneDNN off)', or 'oneDNN unknown' when the probe failed."""
    if probe is None:
        return "Eigen (oneDNN off)"
    try:
        out, _ = probe.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        probe.kill()
        probe.communicate()
        return "oneDNN unknown"
    ver = re.search(r"info,(oneDNN v[\d.]+)", out or "")
    isa = re.search(r"info,cpu,isa:([^\n]+)", out or "")
    if not ver or not isa:
        return "oneDNN unknown"
    return f"{ver.group(1)} {isa.group(1).strip()}"


def tf_is_oom(e: BaseException) -> bool:
    if is_oom(e):
        return True
    name = type(e).__name__
    return name == "ResourceExhaustedError" or "bad_alloc" in str(e) or " OOM " in f" {e} "


def calib(tf) -> float:
    """The protocol's reference workload in TensorFlow: the median over 7 runs of 20 x (a @ a) with a 256x256,
    then one 3x3 conv2d of 4x32x32x32 (NHWC) with 32 filters, 'SAME' padding (worker.py's calib, NCHW there)."""
    a = tf.random.stateless_normal([256, 256], seed=[1, 0])
    x = tf.random.stateless_normal([4, 32, 32, 32], seed=[1, 1])
    w = tf.random.stateless_normal([3, 3, 32, 32], seed=[1, 2])
    matmul, conv2d = tf.linalg.matmul, tf.nn.conv2d
    ts = []
    for _ in range(CALIB_RUNS):
        t0 = time.perf_counter()
        for _ in range(20):
            matmul(a, a)
        conv2d(x, w, 1, "SAME")
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def allocator_selftest(tf, tracker) -> dict:
    """The instrument checked in the worker itself: a 256 MiB tensor must raise the tracker's live bytes by
    256 MiB and give them back when freed. With oneDNN on, TensorFlow's CPU allocator keeps tensors of 4 KiB
    and more in pools that only grow unless TF_ONEDNN_USE_SYSTEM_ALLOCATOR=1 sends them to posix_memalign
    (interposed by the tracker); without that the rise is a pool step or 0 and nothing is given back."""
    res = {"ok": False, "rise": 0, "left": 0}
    if not tracker.ok:
        return res
    for _ in range(2):  # the first pass also creates the fill kernel; the second is judged
        gc.collect()
        before = tracker.live()
        t = tf.zeros([SELFTEST_BYTES // 4], dtype=tf.float32)
        rise = tracker.live() - before
        del t
        gc.collect()
        left = tracker.live() - before
    res.update(rise=rise, left=left,
               ok=SELFTEST_BYTES <= rise <= SELFTEST_BYTES + (1 << 20) and abs(left) <= (1 << 20))
    return res


class TFWorker:
    def __init__(self, threads: int):
        probe = start_capability_probe()
        import tensorflow as tf
        import keras
        self.tf, self.keras = tf, keras
        from collector import machine, tf_zoo
        self.zoo = tf_zoo
        self.threads = threads
        self.tracker = Tracker()
        self.ncpu = _proc_cpus()
        self.runtime = runtime_name(tf)
        self.blas = blas_name()
        self.export = None
        calib(tf)  # what the reference workload sets up lazily exists before the first baseline
        self.selftest = allocator_selftest(tf, self.tracker)
        gc.collect()
        self.capability = capability_of(probe)
        self.machine_descriptor = machine.describe(threads, self.runtime, self.blas, self.capability)
        self.machine = machine.machine_id(self.machine_descriptor)

    def env_ok(self) -> bool:
        want = dict(PROTOCOL_MALLOC)
        want.update(protocol_tf_env(self.threads))
        return all(os.environ.get(k) == v for k, v in want.items())

    def hello(self) -> dict:
        return {"ready": True, "pid": os.getpid(), "torch_version": self.tf.__version__,
                "torchvision_version": self.keras.__version__, "tracker": self.tracker.ok,
                "tracker_selftest": self.selftest["ok"], "tracker_selftest_rise": self.selftest["rise"],
                "tracker_selftest_left": self.selftest["left"],
                "threads": int(os.environ.get("TF_NUM_INTRAOP_THREADS") or 0), "protocol_env": self.env_ok(),
                "protocol": PROTOCOL, "python": sys.executable, "blas": self.blas, "runtime": self.runtime,
                "tf_version": self.tf.__version__, "keras_version": self.keras.__version__,
                "machine": self.machine, "machine_descriptor": self.machine_descriptor}

    # ---- one configuration ----
    def _free(self):
        """Drops Keras's global state (layer-name counters, the seed generator) and TensorFlow's eager kernel
        cache, then runs the reference workload once so that its kernels exist again: the state at a baseline
        is then the same in a fresh worker and in one that measured other configurations."""
        self.keras.backend.clear_session(free_memory=True)
        drop_custom_gradients()
        gc.collect()
        calib_once(self.tf)
        gc.collect()

    def _setup(self, net, size, batch, optim, objs):
        tf, keras = self.tf, self.keras
        keras.utils.set_random_seed(0)
        model = net.build(size)
        objs["model"] = model
        x = net.make_input(batch, size)
        out_shape = list(model.outputs[0].shape)
        if len(out_shape) == 2:  # [B, classes]: cross-entropy from logits against random labels
            loss_obj = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            y = tf.random.stateless_uniform([batch], seed=[0, 2], minval=0, maxval=int(out_shape[1]), dtype=tf.int32)
        else:  # anything else: MSE against zeros of the output's shape
            loss_obj = keras.losses.MeanSquaredError()
            y = tf.zeros([batch] + [int(d) for d in out_shape[1:]], dtype=tf.float32)
        if optim == "sgd":
            opt = keras.optimizers.SGD(learning_rate=0.01, momentum=0.9)
        elif optim == "adam":
            opt = keras.optimizers.Adam(learning_rate=1e-3)
        else:
            raise ValueError(f"unknown optimizer {optim!r}")
        variables = model.trainable_variables
        opt.build(variables)  # slots and the step counter exist before tracing
        traces = [0]

        @tf.function(jit_compile=False)
        def train_step(x, y):
            traces[0] += 1
            with tf.GradientTape() as tape:
                out = model(x, training=True)
                loss = loss_obj(y, out)
                if model.losses:
                    loss = loss + tf.add_n(model.losses)
            grads = tape.gradient(loss, variables)
            opt.apply_gradients(zip(grads, variables))
            return loss

        objs.update(x=x, y=y, opt=opt, fn=train_step, traces=traces,
                    params=sum(int(v.shape.num_elements()) for v in variables),
                    count_params=int(model.count_params()))

        def step():
            return train_step(x, y).numpy()

        return step

    def measure(self, cfg: dict) -> dict:
        res = {"id": cfg.get("id"), "status": "ok", "error": ""}
        name, size, batch = cfg["network"], int(cfg["size"]), int(cfg["batch"])
        optim = cfg.get("optimizer", "sgd")
        max_iter_s = float(cfg.get("max_iter_seconds") or 0)
        tr = self.tracker
        objs = {}
        step = None
        try:
            if not self.selftest["ok"]:
                raise RuntimeError(f"the allocator self-test failed (a {SELFTEST_BYTES >> 20} MiB tensor raised live "
                                   f"bytes by {self.selftest['rise']}, left {self.selftest['left']}): memory is not "
                                   "measurable in this environment (TF_ONEDNN_USE_SYSTEM_ALLOCATOR=1?)")
            net = self.zoo.get(name)
            self._free()
            step = self._setup(net, size, batch, optim, objs)
            dry = []
            for i in range(DRY_ITERS):
                t0 = time.perf_counter()
                step()
                dry.append(time.perf_counter() - t0)
                # The first step traces the tf.function and optimises its graph (14 s for
                # keras_mobilenet_v3_small, whose steps take 0.02 s): only the second is judged.
                if max_iter_s > 0 and i == 1 and dry[1] > max_iter_s:
                    raise Skip(f"estimated iteration time {dry[1]:.3g} s (second iteration) > "
                               f"--max-iter-seconds {max_iter_s:g}")
            objs.clear()
            step = None
            self._free()

            baseline = tr.live()
            step = self._setup(net, size, batch, optim, objs)
            res["params"] = objs["params"]
            res["count_params"] = objs["count_params"]
            # (the protocol's measured part with TensorFlow's reference workload)
            measured = timed_pass(step, lambda: calib(self.tf), tr, baseline, self.ncpu, dry)
            if objs["traces"][0] != 1:
                raise RuntimeError(f"the training step was traced {objs['traces'][0]} times, not once")
            res.update(measured, traces=objs["traces"][0])
        except Skip as e:
            res.update(status="skipped", error=str(e))
        except BaseException as e:  # noqa: BLE001 - failures are data
            if isinstance(e, KeyboardInterrupt):
                raise
            res.update(status="oom" if tf_is_oom(e) else "error", error=one_line(f"{type(e).__name__}: {e}"))
            log(f"{name} {size} b{batch} {optim}:", "".join(traceback.format_exception_only(type(e), e)).strip()[:2000])
            e.__traceback__ = None
        finally:
            if "params" in objs and "params" not in res:
                res["params"] = objs["params"]
            objs.clear()
            step = None  # noqa: F841
            self.keras.backend.clear_session(free_memory=False)
            drop_custom_gradients()
            gc.collect()

        if res["status"] in ("ok", "skipped"):
            res.update(self._export(cfg, name, size))
        return res

    def _export(self, cfg, name, size) -> dict:
        """worker.py's contract: graph_status none | exists | missing | exported | failed (+ graph_error)."""
        status = graph_status(cfg)
        if status:
            return status
        path = cfg["graph"]
        try:
            if self.export is None:
                try:
                    from collector import tf_export
                except ImportError as e:
                    if getattr(e, "name", "") != "collector.tf_export":
                        raise
                    return {"graph_status": "failed", "graph_error": "the TensorFlow graph export "
                            "(collector/tf_export.py) is not there yet: no graph for TF rows"}
                self.export = tf_export
            self.export.export_graph(name, size, path)
            return {"graph_status": "exported"}
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            log(f"graph export {name} {size} failed:", one_line(f"{type(e).__name__}: {e}"))
            return {"graph_status": "failed", "graph_error": one_line(f"{type(e).__name__}: {e}", 300)}
        finally:
            self.keras.backend.clear_session(free_memory=True)


def drop_custom_gradients():
    """Forgets the gradient functions that tf.custom_gradient registered while tracing a step.

    Inside a tf.function, Keras's optimizer sums gradients through the replica context's all_reduce, a
    tf.custom_gradient, which in graph mode registers its gradient function under a new unique name
    ("CustomGradient-N") in TensorFlow's global gradient registry, never removed. That closure keeps the traced
    graph alive, the graph its captured variable handles, and those the model's weights and the optimizer's
    slots: every configuration measured in a worker would leak its whole model (7.7 MB for keras_mlp) and the
    next baseline would grow by it. The registered names are unique per trace and the graphs that used them are
    gone once a configuration is freed, so dropping them is safe."""
    try:
        from tensorflow.python.framework import ops
        reg = ops._gradient_registry._registry  # noqa: SLF001 - no public way to unregister
    except (ImportError, AttributeError):
        return
    for k in [k for k in reg if k.startswith("CustomGradient-")]:
        del reg[k]


def calib_once(tf):
    """One pass of the reference workload (its kernels created), untimed."""
    a = tf.random.stateless_normal([256, 256], seed=[1, 0])
    x = tf.random.stateless_normal([4, 32, 32, 32], seed=[1, 1])
    w = tf.random.stateless_normal([3, 3, 32, 32], seed=[1, 2])
    tf.linalg.matmul(a, a)
    tf.nn.conv2d(x, w, 1, "SAME")


def list_zoo(out) -> int:
    from collector import tf_zoo
    for name in tf_zoo.NAMES:
        out.write(json.dumps(tf_zoo.listing(tf_zoo.get(name))) + "\n")
    out.flush()
    return len(tf_zoo.NAMES)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print the Keras zoo as JSON lines")
    ap.add_argument("--serve", action="store_true", help="read configurations as JSON lines on stdin")
    ap.add_argument("--config", action="append", default=[], help="one configuration as JSON (repeatable)")
    ap.add_argument("--threads", type=int, default=int(os.environ.get("TF_NUM_INTRAOP_THREADS")
                                                       or os.environ.get("OMP_NUM_THREADS") or "1"))
    ap.add_argument("--calibrate", action="store_true",
                    help="time the protocol's reference workload (TensorFlow's) now and print it as one JSON line")
    ap.add_argument("--machine", action="store_true",
                    help="print this machine's id and descriptor for this runtime as one JSON line")
    a = ap.parse_args(argv)

    if a.list:
        list_zoo(sys.stdout)
        return 0
    if os.environ.get("TF_NUM_INTRAOP_THREADS") != str(a.threads):
        log(f"warning: TF_NUM_INTRAOP_THREADS={os.environ.get('TF_NUM_INTRAOP_THREADS')} but --threads {a.threads}: "
            "TensorFlow reads its thread counts when it starts; abacus profile --runtime tf-2.21.0 sets them")
    if a.machine:
        probe = start_capability_probe()
        import tensorflow as tf
        from collector import machine
        d = machine.describe(a.threads, runtime_name(tf), blas_name(), capability_of(probe))
        print(json.dumps({"machine": machine.machine_id(d), "descriptor": d}), flush=True)
        return 0
    if a.calibrate:
        import tensorflow as tf
        calib(tf)
        runs = sorted(calib(tf) for _ in range(3))
        print(json.dumps({"calib_s": g9(runs[1]), "threads": a.threads, "runtime": runtime_name(tf),
                          "tf_version": tf.__version__}), flush=True)
        return 0
    if not a.serve and not a.config:
        ap.error("give --list, --serve or --config")
    out = protocol_stdout()
    import faulthandler
    faulthandler.enable()
    w = TFWorker(a.threads)
    hello = w.hello()
    if not hello["tracker"]:
        log("warning: libabacus_tracker.so is not preloaded: memory is not measured")
    elif not hello["tracker_selftest"]:
        log(f"error: the allocator self-test failed: a {SELFTEST_BYTES >> 20} MiB tensor raised live bytes by "
            f"{hello['tracker_selftest_rise']} and left {hello['tracker_selftest_left']} behind")
    if not hello["protocol_env"]:
        log("warning: the environment differs from docs/PROTOCOL.md (MALLOC_*, TF_NUM_*_THREADS, "
            "TF_ENABLE_ONEDNN_OPTS=1, TF_ONEDNN_USE_SYSTEM_ALLOCATOR=1, TF_CPU_ALLOCATOR_USE_BFC / "
            "ONEDNN_DEFAULT_FPMATH_MODE / TF_XLA_FLAGS unset)")
    log(f"pid {hello['pid']} ready: tensorflow {hello['tf_version']}, keras {hello['keras_version']}, "
        f"{a.threads} thread(s), {w.capability}")
    emit(out, hello)
    configs = (json.loads(c) for c in a.config) if a.config else \
        (json.loads(line) for line in sys.stdin if line.strip())
    for cfg in configs:
        if cfg.get("cmd") == "list":
            emit(out, {"listed": list_zoo(out)})
        else:
            emit(out, w.measure(cfg))
    return 0


if __name__ == "__main__":
    if not __package__:
        # Started as a script (collector/tf_worker.py, as abacus profile does): the package is importable from
        # PYTHONPATH, the repository root.
        try:
            import collector  # noqa: F401
        except ImportError:
            sys.exit("%s is a module of the collector package: run it from the repository root as "
                     "'.runtimes/tf-2.21.0/bin/python -m collector.tf_worker ...' (abacus profile sets PYTHONPATH)"
                     % __file__)
    sys.exit(main())
