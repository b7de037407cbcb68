#!/usr/bin/python3
"""Abacus collector worker: measures PyTorch training iterations under docs/PROTOCOL.md.

The C command `abacus profile` starts one worker per group of configurations, with the protocol's
environment (OMP_NUM_THREADS=T ..., MALLOC_* settings) and LD_PRELOAD of libabacus_tracker.so, and talks
to it in JSON lines:

  worker -> {"ready": true, "torch_version": ..., "torchvision_version": ..., "tracker": true, ...}
  C      -> {"id": 7, "network": "resnet18", "size": 112, "batch": 8, "optimizer": "sgd",
             "graph": "/abs/data/graphs/resnet18-112.onnx", "export": true, "max_iter_seconds": 0}
  worker -> {"id": 7, "status": "ok", "time_s": ..., "memory_bytes": ..., ...}   (one line, flushed)
  ... until stdin closes. The line {"cmd": "list"} is answered with the zoo (as --list prints it, with
  the generated networks when ABACUS_GENERATED is set), then {"listed": N}.

Modes (a module of the collector package: `/usr/bin/python3 -m collector.worker ...` from the repository
root; `abacus profile` runs collector/worker.py with PYTHONPATH at that root):
  --list                 the zoo as JSON lines (name, kind, family, channels, vocab, sizes)
  --list --generated [N] ... then the first N generated networks (collector/generator.py; default 1000)
                         too; ABACUS_GENERATED=N in the environment does the same for --list and for the
                         list command of --serve (so `ABACUS_GENERATED=N abacus profile --models gen_...`)
  --serve --threads T    configurations as JSON lines on stdin (what the C collector uses)
  --config JSON ...      the given configurations (repeatable), results on stdout

Only the protocol lines go to stdout: the worker moves file descriptor 1 onto stderr at start, so that
anything a library prints lands on stderr, and writes results to a private duplicate of the original
stdout.

Order of one measurement (docs/PROTOCOL.md):
  dry run: build the configuration, 2 iterations (judged against --max-iter-seconds), free it
  gc.collect(); baseline = live bytes
  build the model (manual_seed(0)), inputs, targets on first use, optimizer
  3 warm-up iterations
  calib_before (reference workload), gc.collect(), persistent = live - baseline
  reset peak; >= 10 timed iterations (until >= 1 s timed, at most 50), gc disabled; peak - baseline
  calib_after; calib_s = mean(calib_before, calib_after)
  free everything; export the graph if its file is missing (after ok and skipped only)
The dry run and a first run of the reference workload when the worker starts make whatever PyTorch sets
up lazily (primitive caches, thread pools, growing tables) exist before the baseline: a worker that
measures several configurations measures the same memory as a fresh one (tests/collector_test.py).
"""
from __future__ import annotations

import argparse
import ctypes
import gc
import json
import math
import os
import re
import statistics
import sys
import time
import traceback
import warnings

PROTOCOL = 2
WARMUP = 3
DRY_ITERS = 2
MIN_ITERS, MAX_ITERS, MIN_TIMED_S = 10, 50, 1.0
CALIB_RUNS = 7

# The environment the protocol fixes before the interpreter starts (the C collector sets it).
PROTOCOL_MALLOC = {
    "MALLOC_MMAP_MAX_": "0",
    "MALLOC_MMAP_THRESHOLD_": "33554432",
    "MALLOC_TRIM_THRESHOLD_": "68719476736",
    "MALLOC_TOP_PAD_": "536870912",
}


def log(*a):
    print("worker:", *a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------
# Allocator tracker (collector/tracker.c, preloaded)
# ---------------------------------------------------------------------------------------------------
class Tracker:
    def __init__(self):
        lib = ctypes.CDLL(None)
        try:
            self._live = lib.abacus_tracker_live
            self._peak = lib.abacus_tracker_peak
            self._reset = lib.abacus_tracker_reset_peak
        except AttributeError:
            self.ok = False
            return
        for f in (self._live, self._peak):
            f.restype = ctypes.c_longlong
            f.argtypes = []
        self._reset.restype = None
        self.ok = True

    def live(self) -> int:
        return int(self._live()) if self.ok else 0

    def peak(self) -> int:
        return int(self._peak()) if self.ok else 0

    def reset_peak(self):
        if self.ok:
            self._reset()


# ---------------------------------------------------------------------------------------------------
# Machine load from /proc/stat
# ---------------------------------------------------------------------------------------------------
CLK_TCK = os.sysconf("SC_CLK_TCK")


def _proc_cpus() -> int:
    with open("/proc/stat") as f:
        return sum(1 for line in f if line.startswith("cpu") and line[3:4].isdigit()) or (os.cpu_count() or 1)


def cpu_sample():
    """(machine non-idle jiffies, this process's utime+stime jiffies, monotonic seconds)."""
    with open("/proc/stat") as f:
        v = [int(t) for t in f.readline().split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (v + [0] * 8)[:8]
    with open("/proc/self/stat") as f:
        s = f.read()
    rest = s[s.rindex(")") + 2:].split()  # fields from 3 (state) on; utime, stime are fields 14, 15
    return user + nice + system + irq + softirq + steal, int(rest[11]) + int(rest[12]), time.monotonic()


def busy_other(a, b, ncpu: int) -> float:
    """Fraction of the machine's CPU time used by other processes between samples a and b."""
    wall = b[2] - a[2]
    if wall <= 0:
        return 0.0
    other = (b[0] - a[0]) - (b[1] - a[1])
    return min(1.0, max(0.0, other / (wall * CLK_TCK * ncpu)))


# ---------------------------------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------------------------------
def calib(torch) -> float:
    """The protocol's reference workload: median over 7 runs of 20 x (a @ a) then one conv2d."""
    torch.manual_seed(1)
    a = torch.randn(256, 256)
    x = torch.randn(4, 32, 32, 32)
    w = torch.randn(32, 32, 3, 3)
    conv2d = torch.nn.functional.conv2d
    ts = []
    for _ in range(CALIB_RUNS):
        t0 = time.perf_counter()
        for _ in range(20):
            a @ a
        conv2d(x, w, padding=1)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def blas_library() -> str:
    """Which BLAS torch loaded, by the directory of the libblas.so.3 mapped into this process: Debian's
    python3-torch calls the system BLAS (update-alternatives) for matrix products and for the 1x1 and
    batch-1 convolutions that do not go to oneDNN, so it sets the speed of whole networks (reference BLAS
    is 5-10x slower than OpenBLAS there). 'openblas-pthread', 'openblas-openmp', 'reference', ..."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if line.count("/") else ""
                if os.path.basename(path).startswith("libblas.so"):
                    d = os.path.basename(os.path.dirname(os.path.realpath(path)))
                    return "reference" if d == "blas" else d
    except OSError:
        pass
    # No system BLAS mapped: PyPI's torch wheels carry their own (MKL, linked in), which the build settings name.
    torch = sys.modules.get("torch")
    if torch is not None:
        m = re.search(r"\bBLAS_INFO=(\w+)", torch.__config__.show())
        if m and m.group(1) != "generic":
            return "bundled-" + m.group(1)
    return "unknown"


def percentile(sorted_v, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    if len(sorted_v) == 1:
        return sorted_v[0]
    pos = (len(sorted_v) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_v) - 1)
    return sorted_v[lo] + (sorted_v[hi] - sorted_v[lo]) * (pos - lo)


def g9(x: float) -> float:
    """Nine significant digits: enough for a timer, stable in the CSV."""
    return float(f"{x:.9g}")


def is_oom(e: BaseException) -> bool:
    if isinstance(e, MemoryError):
        return True
    if isinstance(e, RuntimeError):
        m = str(e).lower()
        return any(k in m for k in ("memory", "bad_alloc", "can't allocate", "cannot allocate"))
    return False


def one_line(s: str, limit: int = 600) -> str:
    return " ".join(str(s).split())[:limit]


class Skip(Exception):
    pass


def timed_pass(step, calib_fn, tr, baseline, ncpu, dry_s, warmup=WARMUP, max_iters=MAX_ITERS,
               min_timed_s=MIN_TIMED_S) -> dict:
    """The measured part of docs/PROTOCOL.md, for every runtime's worker: warm-up steps, calib_before,
    gc.collect(), persistent bytes, reset the peak, timed steps with the garbage collector paused (>= MIN_ITERS,
    until min_timed_s, <= max_iters), the peak, calib_after. Returns the row's measured fields (time_s ...
    warmup_s, the dry run's times `dry_s` first); `ncpu` is the machine's CPU count for busy_other."""
    warm = []
    for _ in range(max(0, warmup)):
        t0 = time.perf_counter()
        step()
        warm.append(time.perf_counter() - t0)
    calib_before = calib_fn()
    gc.collect()
    gc.disable()  # no collector pauses inside the timed loop (as timeit does)
    try:
        persistent = tr.live() - baseline
        s0 = cpu_sample()
        tr.reset_peak()
        times = []
        timed = 0.0
        while len(times) < max_iters and (len(times) < MIN_ITERS or timed < min_timed_s):
            t0 = time.perf_counter()
            step()
            dt = time.perf_counter() - t0
            times.append(dt)
            timed += dt
        peak = tr.peak() - baseline
        s1 = cpu_sample()
    finally:
        gc.enable()
    calib_after = calib_fn()
    st = sorted(times)
    mean = statistics.fmean(times)
    return {
        "time_s": g9(statistics.median(times)),
        "time_min_s": g9(st[0]),
        "time_p90_s": g9(percentile(st, 0.9)),
        "time_cv": g9(statistics.stdev(times) / mean if len(times) > 1 and mean > 0 else 0.0),
        "iterations": len(times),
        "calib_s": g9((calib_before + calib_after) / 2),
        "memory_bytes": peak if tr.ok else None,
        "persistent_bytes": persistent if tr.ok else None,
        "busy_other": round(busy_other(s0, s1, ncpu), 4),
        "warmup_s": [g9(t) for t in list(dry_s) + warm],
    }


def graph_status(cfg: dict):
    """The graph-file part of every worker's export contract: {"graph_status": none | exists | missing} when
    there is nothing to export, None when the worker should export the graph to cfg["graph"]."""
    path = cfg.get("graph")
    if not path:
        return {"graph_status": "none"}
    if os.path.exists(path):
        return {"graph_status": "exists"}
    if not cfg.get("export", True):
        return {"graph_status": "missing"}
    return None


class Worker:
    def __init__(self, threads: int):
        import torch
        import torchvision
        self.torch = torch
        self.torchvision = torchvision
        torch.set_num_threads(threads)
        torch.set_num_interop_threads(1)
        torch.manual_seed(0)
        from collector import zoo  # the registry imports torch itself
        self.zoo = zoo
        self.export_onnx = None
        self.threads = threads
        self.tracker = Tracker()
        self.ncpu = _proc_cpus()
        from collector import machine
        self.runtime = machine.runtime_name(torch)
        self.machine_descriptor = machine.describe(threads, self.runtime, blas_library(),
                                                   machine.torch_capability(torch.__config__.show()))
        self.machine = machine.machine_id(self.machine_descriptor)
        warnings.filterwarnings("ignore", category=UserWarning)
        # Initialise whatever the reference workload sets up lazily before the first baseline.
        calib(torch)
        gc.collect()

    def hello(self) -> dict:
        env_ok = all(os.environ.get(k) == v for k, v in PROTOCOL_MALLOC.items()) and \
            os.environ.get("OMP_NUM_THREADS") == str(self.threads)
        return {"ready": True, "pid": os.getpid(), "torch_version": self.torch.__version__,
                "torchvision_version": self.torchvision.__version__, "tracker": self.tracker.ok,
                "threads": self.torch.get_num_threads(), "protocol_env": env_ok, "protocol": PROTOCOL,
                "python": sys.executable, "blas": blas_library(), "runtime": self.runtime,
                "machine": self.machine, "machine_descriptor": self.machine_descriptor}

    # One training iteration per docs/PROTOCOL.md, built as a closure over the objects of one configuration.
    def _make_step(self, model, x, opt, state):
        torch = self.torch

        def step():
            opt.zero_grad(set_to_none=True)
            out = model(x)
            if "crit" not in state:  # targets are made once, on the first iteration
                if out.dim() == 2:
                    state["crit"] = torch.nn.CrossEntropyLoss()
                    state["y"] = torch.randint(0, out.shape[1], (out.shape[0],))
                else:
                    state["crit"] = torch.nn.MSELoss()
                    state["y"] = torch.zeros_like(out)
            loss = state["crit"](out, state["y"])
            del out
            loss.backward()
            opt.step()

        return step

    def _setup(self, net, size, batch, optim, objs):
        """Model, inputs and optimizer of one configuration, kept in `objs`; returns the step."""
        torch = self.torch
        torch.manual_seed(0)
        model = net.build(size).float()
        model.train()
        objs["model"] = model
        x = net.make_input(batch, size)
        objs["x"] = x
        if optim == "sgd":
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        elif optim == "adam":
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        else:
            raise ValueError(f"unknown optimizer {optim!r}")
        objs["opt"] = opt
        objs["state"] = {}
        objs["params"] = sum(p.numel() for p in model.parameters())
        return self._make_step(model, x, opt, objs["state"])

    def measure(self, cfg: dict) -> dict:
        torch = self.torch
        res = {"id": cfg.get("id"), "status": "ok", "error": ""}
        name, size, batch = cfg["network"], int(cfg["size"]), int(cfg["batch"])
        optim = cfg.get("optimizer", "sgd")
        max_iter_s = float(cfg.get("max_iter_seconds") or 0)
        tr = self.tracker
        objs = {}
        step = None
        try:
            net = self.zoo.get(name)
            # Dry run: the same configuration for DRY_ITERS iterations, then freed, before the baseline.
            # Whatever PyTorch and its libraries set up on first use (kernel and primitive caches, tables
            # that grow) is then part of the baseline, so memory_bytes is the job's alone and a worker that
            # has measured other configurations reads the same as a fresh process. Its iterations also
            # judge --max-iter-seconds.
            step = self._setup(net, size, batch, optim, objs)
            dry = []
            for i in range(DRY_ITERS):
                t0 = time.perf_counter()
                step()
                dry.append(time.perf_counter() - t0)
                if max_iter_s > 0 and i == 0 and dry[0] > 2 * max_iter_s:
                    raise Skip(f"first iteration took {dry[0]:.3g} s > 2 x --max-iter-seconds {max_iter_s:g}")
                if max_iter_s > 0 and i == 1 and dry[1] > max_iter_s:
                    raise Skip(f"estimated iteration time {dry[1]:.3g} s (second iteration) > "
                               f"--max-iter-seconds {max_iter_s:g}")
            objs.clear()
            step = None
            gc.collect()

            baseline = tr.live()
            step = self._setup(net, size, batch, optim, objs)
            res["params"] = objs["params"]
            res.update(timed_pass(step, lambda: calib(torch), tr, baseline, self.ncpu, dry))
        except Skip as e:
            res.update(status="skipped", error=str(e))
        except BaseException as e:  # noqa: BLE001 - failures are data
            if isinstance(e, KeyboardInterrupt):
                raise
            res.update(status="oom" if is_oom(e) else "error",
                       error=one_line(f"{type(e).__name__}: {e}"))
            log(f"{name} {size} b{batch} {optim}:", "".join(traceback.format_exception_only(type(e), e)).strip())
            e.__traceback__ = None
        finally:
            if "params" in objs and "params" not in res:
                res["params"] = objs["params"]
            objs.clear()
            step = None  # noqa: F841 - drop the closure's references
            gc.collect()

        # The graph is exported after a measurement or a skip. Not after an error (the network usually does
        # not run at this size at all, and its export would fail the same way) nor after an oom (memory is
        # what is short; another batch of the same network and size exports it).
        if res["status"] in ("ok", "skipped"):
            res.update(self._export(cfg, name, size))
        return res

    def _export(self, cfg, name, size) -> dict:
        status = graph_status(cfg)
        if status:
            return status
        path = cfg["graph"]
        if not self.torch.__version__.startswith("1.13"):
            # The graphs are torch 1.13's export (docs/PROTOCOL.md, "Graphs"); another runtime measures the same
            # network against that graph (its row's params must equal the graph's: test_dataset_rows_match_graphs)
            # and never exports its own (torch 2's exporter makes other graphs).
            return {"graph_status": "failed", "graph_error": "no graph: another runtime never exports; run "
                    f"'/usr/bin/python3 -m collector.export_onnx --models {name} --sizes {size}' first"}
        try:
            if self.export_onnx is None:
                from collector import export_onnx
                self.export_onnx = export_onnx
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.export_onnx.export_graph(name, size, path)
            return {"graph_status": "exported"}
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            log(f"graph export {name} {size} failed:", one_line(f"{type(e).__name__}: {e}"))
            return {"graph_status": "failed", "graph_error": one_line(f"{type(e).__name__}: {e}", 300)}
        finally:
            gc.collect()


# ---------------------------------------------------------------------------------------------------
def generated_count(value) -> int:
    """Generated networks to list, from --generated or ABACUS_GENERATED: a count, 'default' for the
    generator's default catalogue, empty or 0 for none."""
    if value is None or str(value).strip() in ("", "0"):
        return 0
    if str(value).strip() == "default":
        from collector import generator
        return generator.DEFAULT_TOTAL
    n = int(value)
    if n < 0:
        raise ValueError(f"a count of generated networks must be >= 0, not {value!r}")
    return n


def list_zoo(out, generated: int = 0) -> int:
    """One JSON line per zoo network, then per generated network of a catalogue of `generated`
    (collector/generator.py; none by default); returns the count."""
    from collector import zoo
    for name in zoo.NAMES:
        n = zoo.get(name)
        out.write(json.dumps({"name": n.name, "kind": n.kind, "family": n.family, "channels": n.channels,
                              "vocab": n.vocab, "sizes": [int(s) for s in n.sizes]}) + "\n")
    count = len(zoo.NAMES)
    if generated > 0:
        from collector import generator
        for e in generator.listing(generated, log=log):
            out.write(json.dumps(e) + "\n")
            count += 1
    out.flush()
    return count


def protocol_stdout():
    """Keep a private duplicate of stdout for the protocol; send fd 1 (and print()) to stderr."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto


def emit(out, obj):
    out.write(json.dumps(obj, separators=(",", ":")) + "\n")
    out.flush()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print the zoo as JSON lines")
    ap.add_argument("--generated", nargs="?", const="default", default=os.environ.get("ABACUS_GENERATED"),
                    metavar="N", help="with --list (and the list command of --serve): also list the first N "
                    "networks of the generator's catalogue (default 1000; environment: ABACUS_GENERATED=N)")
    ap.add_argument("--serve", action="store_true", help="read configurations as JSON lines on stdin")
    ap.add_argument("--config", action="append", default=[], help="one configuration as JSON (repeatable)")
    ap.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "1")))
    ap.add_argument("--calibrate", action="store_true",
                    help="time the protocol's reference workload now and print it as one JSON line")
    ap.add_argument("--profile", action="store_true",
                    help="measure this machine's profile (collector/machine_profile.py) and print the profile file")
    ap.add_argument("--runs", type=int, default=5, help="passes over the microbenchmarks for --profile")
    ap.add_argument("--machine", action="store_true",
                    help="print this machine's id and descriptor (collector/machine.py) as one JSON line")
    a = ap.parse_args(argv)

    if a.profile:
        import torch
        torch.set_num_threads(a.threads)
        torch.set_num_interop_threads(1)
        from collector import machine, machine_profile
        d = machine.describe(a.threads, machine.runtime_name(torch), blas_library(),
                             machine.torch_capability(torch.__config__.show()))
        warn = machine.blas_core_warning(machine.openblas_core(), d["isa"])
        if warn:
            log("warning: " + warn)
        rates, secs = machine_profile.measure(torch, runs=a.runs, log=log)
        sys.stdout.write(machine_profile.render(machine.machine_id(d), a.threads, d["runtime"], rates, secs, a.runs))
        sys.stdout.flush()
        return 0

    if a.machine:
        import torch
        from collector import machine
        d = machine.describe(a.threads, machine.runtime_name(torch), blas_library(),
                             machine.torch_capability(torch.__config__.show()))
        print(json.dumps({"machine": machine.machine_id(d), "descriptor": d}), flush=True)
        return 0

    if a.calibrate:
        import torch
        torch.set_num_threads(a.threads)
        torch.set_num_interop_threads(1)
        calib(torch)  # warm-up: first use pays for primitive selection
        runs = sorted(calib(torch) for _ in range(3))
        print(json.dumps({"calib_s": g9(runs[1]), "threads": a.threads, "torch_version": torch.__version__}),
              flush=True)
        return 0

    try:
        generated = generated_count(a.generated)
    except ValueError as e:
        ap.error(f"--generated / ABACUS_GENERATED: {e}")
    if a.list:
        list_zoo(sys.stdout, generated)
        return 0
    if not a.serve and not a.config:
        ap.error("give --list, --serve or --config")
    out = protocol_stdout()
    import faulthandler
    faulthandler.enable()  # a crash in native code leaves a Python traceback in the collector's --log
    if os.environ.get("OMP_NUM_THREADS") != str(a.threads):
        log(f"warning: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')} but --threads {a.threads}: "
            "not the protocol's environment (abacus profile sets it)")
    w = Worker(a.threads)
    hello = w.hello()
    if not hello["tracker"]:
        log("warning: libabacus_tracker.so is not preloaded: memory is not measured")
    if not hello["protocol_env"]:
        log("warning: the MALLOC_* / OMP_NUM_THREADS environment differs from docs/PROTOCOL.md")
    log(f"pid {hello['pid']} ready: torch {hello['torch_version']}, {a.threads} thread(s)")
    emit(out, hello)
    configs = (json.loads(c) for c in a.config) if a.config else \
        (json.loads(line) for line in sys.stdin if line.strip())
    for cfg in configs:
        if cfg.get("cmd") == "list":  # the zoo, from the worker already started (saves an interpreter start)
            emit(out, {"listed": list_zoo(out, generated_count(cfg.get("generated", generated)))})
        else:
            emit(out, w.measure(cfg))
    return 0


if __name__ == "__main__":
    if not __package__:
        try:
            import collector  # noqa: F401 - is the package importable (PYTHONPATH at the repository root)?
        except ImportError:
            sys.exit("%s is a module of the collector package: run it from the repository root as "
                     "'/usr/bin/python3 -m collector.%s ...' (abacus profile and calibrate set PYTHONPATH)"
                     % (__file__, os.path.splitext(os.path.basename(__file__))[0]))
    sys.exit(main())
