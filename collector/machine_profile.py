"""A machine profile: the rates the time model prices, measured through the framework in about a minute.

Each microbenchmark runs one kind of work that an analytic time term of Abacus counts (src/model.c,
ab_time_terms) and reports the seconds one unit of that term costs here: a FLOP of a dense convolution, a
byte of element-wise traffic, one kernel layer's fixed cost, one optimizer step over a parameter tensor, and
so on. A machine that no training row came from is then priced from its own rates (the "Machines" issue:
zero-shot), and a machine that gained speed in one kind of work but not another (an ISA cap slows the
convolutions 2.3x and the BLAS products differently) is priced kind by kind, not by one speed index.

Layers run forward and backward (what a training step does), under the protocol's threads and environment.
Every benchmark is timed as the median of several calls after warm-up; `measure(runs=R)` repeats the whole
set R times (in one process) and reports per rate the median over the passes of its ratio to that pass's
reference workload, times the median reference, and the relative spread (max-min)/median of those values,
which docs/MACHINES.md reports as the profile's repeatability (plain medians until 2026-12-05).

The output is the profile file (text, line-oriented; src/machine.c reads it):
    abacus-machine-profile 1
    machine <id>            (collector/machine.py)
    threads <T>
    runtime <torch-x.y.z>
    measured <UTC time>
    seconds <wall time of the measurement>
    runs <R>
    rate <name> <seconds per unit> <relative spread>
    ...
"""
from __future__ import annotations

import statistics
import time

VERSION = 1


def _timeit(fn, min_calls=5, min_s=0.4, max_calls=2000) -> float:
    """Median seconds of one call of fn, after two warm-up calls."""
    fn()
    fn()
    ts = []
    t_all = time.perf_counter()
    while len(ts) < min_calls or (time.perf_counter() - t_all < min_s and len(ts) < max_calls):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


class Bench:
    """The microbenchmarks, built once (tensors allocated before timing)."""

    def __init__(self, torch):
        self.t = torch
        torch.manual_seed(0)
        nn = torch.nn
        self.nn = nn
        F = torch.nn.functional
        self.F = F

    # Each returns (seconds per call, units per call); rate = seconds / units.
    def conv_dense(self):
        t = self.t
        x = t.randn(8, 64, 28, 28, requires_grad=True)
        conv = self.nn.Conv2d(64, 64, 3, padding=1, bias=False)
        flops = 2 * 8 * 64 * 64 * 9 * 28 * 28 * 3  # forward, input gradient, weight gradient

        def f():
            conv(x).sum().backward()
        return _timeit(f), flops

    def conv_im2col(self):
        # A 1x1 convolution at batch 1: PyTorch 1.13 runs it through its own im2col + BLAS path, not
        # oneDNN, on one thread (src/ops_nn.c conv_path): term 12's kind of FLOP.
        t = self.t
        x = t.randn(1, 256, 28, 28, requires_grad=True)
        conv = self.nn.Conv2d(256, 256, 1, bias=False)
        flops = 2 * 256 * 256 * 28 * 28 * 3

        def f():
            conv(x).sum().backward()
        return _timeit(f), flops

    def conv_depthwise(self):
        t = self.t
        x = t.randn(8, 128, 28, 28, requires_grad=True)
        conv = self.nn.Conv2d(128, 128, 3, padding=1, groups=128, bias=False)
        flops = 2 * 8 * 128 * 9 * 28 * 28 * 3

        def f():
            conv(x).sum().backward()
        return _timeit(f), flops

    def matmul_square(self):
        t = self.t
        x = t.randn(512, 512, requires_grad=True)
        lin = self.nn.Linear(512, 512, bias=False)
        flops = 2 * 512 ** 3 * 3

        def f():
            lin(x).sum().backward()
        return _timeit(f), flops

    def matmul_thin(self):
        t = self.t
        x = t.randn(8, 1024, requires_grad=True)
        lin = self.nn.Linear(1024, 1024, bias=False)
        flops = 2 * 8 * 1024 * 1024 * 3

        def f():
            lin(x).sum().backward()
        return _timeit(f), flops

    def matmul_batched(self):
        t = self.t
        a = t.randn(32, 128, 64, requires_grad=True)
        b = t.randn(32, 64, 128, requires_grad=True)
        flops = 2 * 32 * 128 * 64 * 128 * 3

        def f():
            t.bmm(a, b).sum().backward()
        return _timeit(f), flops

    def eltwise_memory(self):
        # Element-wise traffic from memory as networks have it, 32 MB tensors: a ReLU forward + backward
        # (5 passes), an add (3) and a batch norm forward + backward (about 5). A ReLU alone misleads:
        # under the SSE4.1 cap (ATen's default kernels) its backward runs 2.7-8x slower while add, mul,
        # batch norm and max pooling run within 5 % of uncapped (measured here on 2026-12-04), and an
        # activation-bytes rate taken from it priced the capped machine 27 % slow (median, zero-shot).
        t = self.t
        n = 8 << 20
        x = t.randn(n, requires_grad=True)
        g = t.ones(n)
        y = t.randn(n)
        xb = t.randn(32, 64, 64, 64, requires_grad=True)  # also 8 Mi elements
        bn = self.nn.BatchNorm2d(64)
        nbytes = (5 + 3 + 5) * 4 * n

        def f():
            t.relu(x).backward(g)
            t.add(x.detach(), y)
            bn(xb).sum().backward()
        return _timeit(f, min_calls=5, min_s=0.6), nbytes

    def eltwise_cache(self):
        t = self.t
        a = t.randn(16384)
        b = t.randn(16384)
        out = t.empty(16384)
        nbytes = 3 * 4 * 16384

        def f():
            for _ in range(50):
                t.add(a, b, out=out)
        s = _timeit(f)
        return s, nbytes * 50

    def dispatch(self):
        # The fixed cost of a kernel layer in a training step: a chain of tiny ReLUs forward and backward.
        t = self.t
        x = t.randn(1, 8, requires_grad=True)

        def f():
            y = x
            for _ in range(20):
                y = t.relu(y)
            y.sum().backward()
        return _timeit(f), 20

    def view(self):
        t = self.t
        x = t.randn(4, 8, requires_grad=True)

        def f():
            y = x
            for _ in range(10):
                y = y.view(32).view(4, 8)
            y.sum().backward()
        return _timeit(f), 20

    def weight_stream(self):
        # A 64 MB weight at batch 1: forward reads it, backward writes its gradient and reads it again.
        t = self.t
        x = t.randn(1, 4096, requires_grad=True)
        lin = self.nn.Linear(4096, 4096, bias=False)
        nbytes = 3 * 4 * 4096 * 4096

        def f():
            lin.weight.grad = None
            lin(x).sum().backward()
        return _timeit(f, min_calls=5, min_s=0.6), nbytes

    def _sgd(self, shapes):
        t = self.t
        ps = [t.nn.Parameter(t.randn(*s)) for s in shapes]
        for p in ps:
            p.grad = t.randn(*p.shape)
        opt = t.optim.SGD(ps, lr=0.01, momentum=0.9)
        opt.step()  # the momentum buffers exist from here on
        return opt

    def optimizer_bytes(self):
        opt = self._sgd([(16 << 20,)])
        return _timeit(opt.step, min_calls=5, min_s=0.6), 4 * (16 << 20)

    def optimizer_cache(self):
        opt = self._sgd([(1 << 17,)])  # 512 KB: weights, gradients and momentum stay in cache
        return _timeit(opt.step), 4 * (1 << 17)

    def optimizer_tensors(self):
        opt = self._sgd([(16,)] * 200)
        return _timeit(opt.step), 200

    def recurrent_step(self):
        t = self.t
        lstm = self.nn.LSTM(32, 32)
        x = t.randn(64, 1, 32, requires_grad=True)

        def f():
            out, _ = lstm(x)
            out.sum().backward()
        return _timeit(f), 64

    def recurrent_weights(self):
        # The recurrent weights each step re-reads, in a cell large enough that its gate products and
        # gate arithmetic dominate (LSTM(256, 256), batch 8, 64 steps): the per-byte cost of term 11. A
        # small cell measures dispatch only: LSTM(32) ran as fast under the SSE4.1 cap, LSTM(256) 2.4x
        # slower, and the zoo's recurrent networks were priced 30-40 % fast there through the small cell.
        t = self.t
        lstm = self.nn.LSTM(256, 256)
        x = t.randn(64, 8, 256, requires_grad=True)
        wbytes = 4 * sum(p.numel() for p in lstm.parameters())

        def f():
            out, _ = lstm(x)
            out.sum().backward()
        return _timeit(f), 64 * wbytes

    def norm_rows(self):
        # Batch norm on 4x4 maps (the rows PyTorch's kernels do not vectorise, src/ops_nn.c ab_cost_norm).
        t = self.t
        bn = self.nn.BatchNorm2d(256)
        x = t.randn(8, 256, 4, 4, requires_grad=True)

        def f():
            bn(x).sum().backward()
        return _timeit(f), 8 * 256

    def activation_arith(self):
        # A Mish's arithmetic beyond a ReLU's, per element, forward and backward (term 16's unit).
        t = self.t
        F = self.F
        x = t.randn(1 << 20, requires_grad=True)
        g = t.ones(1 << 20)

        def mish():
            F.mish(x).backward(g)

        def relu():
            t.relu(x).backward(g)
        a, b = _timeit(mish), _timeit(relu)
        return max(a - b, 1e-9), 1 << 20

    def reference(self):
        # The protocol's reference workload (docs/PROTOCOL.md, "Machine speed index"), per run: rows' calib_s.
        from collector.worker import calib
        return calib(self.t), 1


RATES = ("conv_dense", "conv_im2col", "conv_depthwise", "matmul_square", "matmul_thin", "matmul_batched",
         "eltwise_memory", "eltwise_cache", "dispatch", "view", "weight_stream", "optimizer_bytes",
         "optimizer_cache", "optimizer_tensors", "recurrent_step", "recurrent_weights", "norm_rows",
         "activation_arith", "reference")


BUSY_LIMIT = 0.10  # share of the machine other processes may use during a pass (as the collector's rows)
BUSY_RETRIES = 10


def _wait_quiet(busy_other, cpu_sample, ncpu, log, limit_s=600.0):
    """Waits (up to limit_s) until other processes use less than BUSY_LIMIT of the machine over 2 s."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        a = cpu_sample()
        time.sleep(2.0)
        if busy_other(a, cpu_sample(), ncpu) < BUSY_LIMIT:
            return
        if log:
            log("profile: waiting for a quiet machine")


def measure(torch, runs: int = 5, log=None) -> tuple[dict, float]:
    """{rate: (median seconds per unit, relative spread)} over `runs` passes, and the wall time taken.

    A pass during which other processes used more than BUSY_LIMIT of the machine is thrown away and run
    again once the machine is quiet (at most BUSY_RETRIES times): memory-bound rates (element-wise
    traffic, the optimizer step, depthwise convolutions) moved by 10-30 % when a build ran on the other
    core, which would make the profile describe the build, not the machine."""
    from collector.worker import busy_other, cpu_sample, _proc_cpus
    ncpu = _proc_cpus()
    b = Bench(torch)
    t0 = time.perf_counter()
    per = {r: [] for r in RATES}
    retries = 0
    k = 0
    while k < runs:
        _wait_quiet(busy_other, cpu_sample, ncpu, log)
        a = cpu_sample()
        got = {}
        for r in RATES:
            s, units = getattr(b, r)()
            got[r] = s / units
        busy = busy_other(a, cpu_sample(), ncpu)
        if busy > BUSY_LIMIT and retries < BUSY_RETRIES:
            retries += 1
            if log:
                log(f"profile pass {k + 1}/{runs}: the machine was busy ({busy:.2f}), measuring it again")
            continue
        for r in RATES:
            per[r].append(got[r])
        k += 1
        if log:
            log(f"profile pass {k}/{runs}: {time.perf_counter() - t0:.1f} s (busy_other {busy:.2f})")
    # Each pass's rates over that pass's reference workload, the median of those ratios over the passes, times
    # the median reference (scripts/merge_profiles.py does the same over whole runs): a host whose speed
    # wanders between passes (the Intel VM of 2026-12-05: references 24-44 ms a minute apart) then moves the
    # reference and the rates together, and the time model, which scales the rates by each row's speed
    # index over the reference, sees the ratio only. The spread is that of the normalised values.
    ref = per["reference"]
    ref_med = statistics.median(ref)
    out = {}
    for r, v in per.items():
        if r != "reference" and all(x > 0 for x in ref):
            v = [x / rk * ref_med for x, rk in zip(v, ref)]
        med = statistics.median(v)
        out[r] = (med, (max(v) - min(v)) / med if med > 0 else 0.0)
    return out, time.perf_counter() - t0


def render(machine: str, threads: int, runtime: str, rates: dict, seconds: float, runs: int) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    lines = [f"abacus-machine-profile {VERSION}", f"machine {machine}", f"threads {threads}",
             f"runtime {runtime}", f"measured {stamp}", f"seconds {seconds:.1f}", f"runs {runs}"]
    for r in RATES:
        v, spread = rates[r]
        lines.append(f"rate {r} {v:.6e} {spread:.4f}")
    return "\n".join(lines) + "\n"
