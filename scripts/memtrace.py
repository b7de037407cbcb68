#!/usr/bin/python3
"""Per-operation live bytes of one training step, measured with the allocator tracker: the other half of
`abacus inspect --timeline` when a simulated peak and a measured one disagree.

Usage: /usr/bin/python3 scripts/memtrace.py NETWORK SIZE BATCH [--optimizer sgd|adam] [--python PY] [--all]

NETWORK is a zoo network (collector/zoo.py) or one of scripts/outside_zoo.py's. The script runs itself again
in the protocol's environment (one thread, libabacus_tracker.so preloaded; `make` builds it) under PY
(default /usr/bin/python3; `.runtimes/torch-2.15.0/bin/python` for PyTorch 2), builds the step the collector
times (collector/worker.py: a dry run first, then a fresh model), runs two steps, and traces the third with a
TorchDispatchMode: per aten operation (the backward's included), the live bytes after it and the peak during
it, both above the baseline the protocol's memory_bytes starts from, so that the largest peak is that row's
memory. Without --all, operations that move the live bytes by less than 4 KiB are left out.

Used on 2026-12-06 to find why the outside set's linear attention, axial transformer and text CNN, and
PyTorch 2's LSTMs, were off (docs/COSTS.md: ELU keeps its input, strided gradients are copied, PyTorch 2's
fused LSTM).
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = "ABACUS_MEMTRACE_CHILD"


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("network")
    ap.add_argument("size", type=int)
    ap.add_argument("batch", type=int)
    ap.add_argument("--optimizer", default="sgd", choices=("sgd", "adam"))
    ap.add_argument("--python", default="/usr/bin/python3", help="the interpreter (a runtime's venv)")
    ap.add_argument("--all", action="store_true", help="every operation, not only those that move memory")
    return ap.parse_args()


def relaunch(a):
    tracker = os.path.join(ROOT, "build/release/libabacus_tracker.so")
    if not os.path.exists(tracker):
        sys.exit(f"memtrace: {tracker} is missing: run 'make' first")
    env = dict(os.environ, **{CHILD: "1", "LD_PRELOAD": tracker, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                              "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": ROOT})
    os.execve(a.python, [a.python, os.path.abspath(__file__)] + sys.argv[1:], env)


def trace(a):
    import gc

    from torch.utils._python_dispatch import TorchDispatchMode

    from collector import worker
    w = worker.Worker(1)
    if not w.tracker.ok:
        sys.exit("memtrace: the allocator tracker is not preloaded")
    try:
        net = w.zoo.get(a.network)
    except Exception:  # noqa: BLE001 - not a zoo network: the outside set's
        sys.path.insert(0, os.path.join(ROOT, "scripts"))
        import outside_zoo
        if a.network not in outside_zoo.NETS:
            sys.exit(f"memtrace: no network '{a.network}' in the zoo (collector/zoo.py) or the outside set "
                     "(scripts/outside_zoo.py --list)")
        outside_zoo.register(a.network)
        net = w.zoo.get(a.network)
    tr = w.tracker
    objs = {}
    step = w._setup(net, a.size, a.batch, a.optimizer, objs)
    for _ in range(3):  # the protocol's dry run: first-use caches are not the job's memory
        step()
    objs.clear()
    step = None
    gc.collect()
    base = tr.live()
    step = w._setup(net, a.size, a.batch, a.optimizer, objs)
    for _ in range(2):
        step()
    log = []

    class Trace(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            before = tr.live()
            tr.reset_peak()
            out = func(*args, **(kwargs or {}))
            log.append((func.__name__, before - base, tr.live() - base, tr.peak() - base,
                        tuple(getattr(out, "shape", ()))))
            return out

    with Trace():
        step()
    top = max(range(len(log)), key=lambda i: log[i][3]) if log else -1
    print(f"{a.network} {a.size} batch {a.batch} {a.optimizer}: {len(log)} operations; bytes above the protocol's "
          f"baseline")
    print(f"{'#':>5}  {'operation':40s} {'live after':>12} {'peak during':>12}  output")
    for i, (name, before, live, peak, shape) in enumerate(log):
        if a.all or i == top or abs(live - before) >= 4096 or peak - max(before, live) >= 4096:
            mark = "  <- peak" if i == top else ""
            print(f"{i:5d}  {name:40.40s} {live:12d} {peak:12d}  {list(shape)}{mark}")
    if top >= 0:
        print(f"peak {log[top][3]} B during operation {top} ({log[top][0]})")


def main():
    a = parse()
    if not os.environ.get(CHILD):
        relaunch(a)
    sys.path.insert(0, ROOT)
    trace(a)


if __name__ == "__main__":
    main()
