#!/usr/bin/python3
"""The TensorFlow collector end to end: `abacus profile --runtime tf-2.21.0` driving collector/tf_worker.py
(make check-collector runs it after tests/collector_test.py).

    ABACUS=build/release/abacus /usr/bin/python3 tests/tf_collector_test.py [CASE ...]

Cases:
  selftest   the worker's allocator self-test passes in the protocol's environment (a 256 MiB tensor raises
             the tracker's live bytes by 256 MiB and gives them back) and fails without
             TF_ONEDNN_USE_SYSTEM_ALLOCATOR=1 (oneDNN's pools never give memory back), so it can tell
  e2e        keras_mlp, batch 1, 32x32, sgd and adam: rows with runtime tf-2.21.0, this runtime's machine id,
             TensorFlow's and Keras's versions, 886,666 parameters, persistent >= weights + optimizer state;
             the graph exported when collector/tf_export.py is there, with the same parameter count
  multi      keras_mlp batch 2 then 4 in one run against batch 4 alone: the same memory (each configuration has
             its own worker for tf-*, docs/PROTOCOL.md); and two separate workers (--repeat 2) agree: persistent
             bytes within 0.05 %, the peak within 10 % (TOL below says why the peak moves more than PyTorch's)
  usage      an unknown --runtime is a usage error listing the runtimes; --dry-run names the runtime
Skips (exit 0, saying so) when .runtimes/tf-2.21.0 is missing: `bash scripts/setup.sh` installs it (CI does).
About 2 minutes on 2 cores.
"""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ABACUS = os.path.abspath(os.environ.get("ABACUS", os.path.join(ROOT, "build/release/abacus")))
RUNTIME = "tf-2.21.0"
PY = os.path.join(ROOT, ".runtimes", RUNTIME, "bin", "python")
TRACKER = os.path.join(os.path.dirname(ABACUS), "libabacus_tracker.so")
TMP = tempfile.mkdtemp(prefix="abacus-tf-collector-")
GRAPHS = os.path.join(TMP, "graphs")
PARAMS = 886666  # keras_mlp at 32x32: 3*32*32*256+256 + 256*256+256 + 256*128+128 + 128*10+10
# Two workers measuring the same configuration agree this closely (measured 2026-12-05, keras_mlp): persistent
# bytes within 0.0003-0.007 %, as PyTorch's (its tests ask 0.01 %; 0.05 % here); the peak (memory_bytes) only
# within 0.004-4.1 % (keras_mlp batch 3: 16,515,808 vs 17,226,312 B on a busy machine): TensorFlow's executor
# runs a step's ops on two threads (its inter-op thread and the caller's), so the order of allocations, and the
# peak, varies between processes (docs/PROTOCOL.md, "Runtime tf-2.21.0"). 10 % here: a known weakness, not a goal.
TOL = {"persistent_bytes": 5e-4, "memory_bytes": 0.10}

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"    FAIL: {what}", flush=True)
    return cond


def rel(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1)


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def profile(*args, out, check_rc=0):
    cmd = [ABACUS, "profile", "--runtime", RUNTIME, "--out", out, "--graphs", GRAPHS, "--log",
           os.path.join(TMP, "workers.log")] + list(args)
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if check_rc is not None and p.returncode != check_rc:
        check(False, f"{' '.join(cmd[1:])}: exit {p.returncode}, expected {check_rc}; stderr: {p.stderr.strip()[-800:]}")
    return p


def protocol_env(**override):
    """The environment cli/profile/worker.c gives a tf-* worker with one thread."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TF_", "ONEDNN_", "DNNL_", "MALLOC_", "ATEN_CPU_CAPABILITY", "OPENBLAS_CORETYPE"))}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MALLOC_MMAP_MAX_="0",
               MALLOC_MMAP_THRESHOLD_="33554432", MALLOC_TRIM_THRESHOLD_="68719476736",
               MALLOC_TOP_PAD_="536870912", PYTHONNOUSERSITE="1", LD_PRELOAD=TRACKER, PYTHONPATH=ROOT,
               TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1", TF_ENABLE_ONEDNN_OPTS="1",
               TF_ONEDNN_USE_SYSTEM_ALLOCATOR="1", TF_CPP_MIN_LOG_LEVEL="2")
    env.update(override)
    return env


def hello(**override):
    p = subprocess.run([PY, "-m", "collector.tf_worker", "--serve", "--threads", "1"], input="", cwd=ROOT,
                       capture_output=True, text=True, env=protocol_env(**override), timeout=300)
    check(p.returncode == 0, f"tf_worker --serve: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    return json.loads(p.stdout.splitlines()[0]) if p.stdout.strip() else {}


def case_selftest():
    h = hello()
    print(f"    protocol environment: self-test {h.get('tracker_selftest')}, live bytes +{h.get('tracker_selftest_rise')} "
          f"then {h.get('tracker_selftest_left'):+d}; protocol_env {h.get('protocol_env')}; {h.get('runtime')}")
    check(h.get("tracker") is True and h.get("tracker_selftest") is True, "the self-test passes")
    check(h.get("protocol_env") is True, "the worker sees the protocol's environment")
    check(h.get("runtime") == RUNTIME and h.get("blas") == "bundled-onednn", f"runtime, blas: {h.get('runtime')} {h.get('blas')}")
    check("oneDNN" in h.get("machine_descriptor", {}).get("torch_capability", ""), "the capability names oneDNN's ISA")
    bad = hello(TF_ONEDNN_USE_SYSTEM_ALLOCATOR="0")
    print(f"    without TF_ONEDNN_USE_SYSTEM_ALLOCATOR: self-test {bad.get('tracker_selftest')}, "
          f"+{bad.get('tracker_selftest_rise')} then {bad.get('tracker_selftest_left'):+d}")
    check(bad.get("tracker_selftest") is False, "the self-test fails when oneDNN's pools keep the memory")


def case_e2e():
    out = os.path.join(TMP, "e2e.csv")
    m = subprocess.run([PY, "-m", "collector.tf_worker", "--machine", "--threads", "1"], cwd=ROOT, capture_output=True,
                       text=True, env=protocol_env())
    here = json.loads(m.stdout) if m.returncode == 0 else {}
    check(m.returncode == 0, f"tf_worker --machine: {m.stderr.strip()[-300:]}")
    profile("--models", "keras_mlp", "--batch", "1", "--size", "32", "--optimizer", "sgd,adam", out=out)
    rs = rows(out)
    check(len(rs) == 2, f"2 rows, got {len(rs)}")
    export = os.path.exists(os.path.join(ROOT, "collector", "tf_export.py"))
    for r in rs:
        print(f"    {r['optimizer']}: {r['status']} time {r['time_s']} s ({r['iterations']} it) memory {r['memory_bytes']} "
              f"persistent {r['persistent_bytes']} params {r['params']} machine {r['machine']} {r['error'][:80]}")
        if not check(r["status"] == "ok", f"status ok: {r['status']} {r['error']}"):
            continue
        check(r["runtime"] == RUNTIME and r["machine"] == here.get("machine"),
              f"runtime {r['runtime']}, machine {r['machine']} (this runtime's: {here.get('machine')})")
        check(r["torch_version"] == "2.21.0" and r["torchvision_version"].startswith("3."),
              f"TensorFlow and Keras versions in the version columns: {r['torch_version']} {r['torchvision_version']}")
        check(r["blas"] == "bundled-onednn" and r["input_shape"] == "1x3x32x32", "blas, input shape")
        check(10 <= int(r["iterations"]) <= 50 and float(r["calib_s"]) > 0, "iterations, calib")
        mem, pers, params = int(r["memory_bytes"]), int(r["persistent_bytes"]), int(r["params"])
        check(params == PARAMS, f"{PARAMS} parameters, got {params}")
        # TensorFlow keeps no gradients between steps: weights + momentum (sgd) or + two moments (adam).
        k = 2 if r["optimizer"] == "sgd" else 3
        check(k * 4 * params <= pers <= mem, f"{k} x 4 x params <= persistent {pers} <= memory {mem}")
        if export:
            g = r["graph"]
            path = g if os.path.isabs(g) else os.path.join(ROOT, g)
            if check(g and os.path.exists(path), f"graph exported ({g!r})"):
                p = subprocess.run([ABACUS, "inspect", path, "--batch", "1", "--format", "json"], capture_output=True,
                                   text=True)
                n = json.loads(p.stdout)["totals"]["params"] if p.returncode == 0 else None
                check(n == PARAMS, f"abacus inspect counts {n} parameters in the graph, Keras {PARAMS}")
    if not export:
        print("    (collector/tf_export.py missing: no graph export checked)")


def case_multi():
    multi, alone, rep = (os.path.join(TMP, f) for f in ("multi.csv", "alone.csv", "repeat.csv"))
    profile("--models", "keras_mlp", "--batch", "2,4", "--size", "32", out=multi)
    profile("--models", "keras_mlp", "--batch", "4", "--size", "32", out=alone)
    a = [r for r in rows(multi) if r["batch"] == "4"]
    b = rows(alone)
    if check(len(a) == 1 and len(b) == 1 and a[0]["status"] == b[0]["status"] == "ok", "batch 4 measured in both runs"):
        for col in ("memory_bytes", "persistent_bytes"):
            x, y = int(a[0][col]), int(b[0][col])
            print(f"    {col}: after batch 2 in the same run {x}, alone {y} ({rel(x, y) * 100:.4f} %)")
            check(rel(x, y) <= TOL[col], f"{col}: the second configuration of a run reads what a lone one reads "
                  f"(within {TOL[col] * 100:g} %)")
    profile("--models", "keras_mlp", "--batch", "3", "--size", "32", "--repeat", "2", out=rep)
    rs = sorted(rows(rep), key=lambda r: r["repeat"])
    if check(len(rs) == 2 and all(r["status"] == "ok" for r in rs), "two repeats"):
        for col in ("memory_bytes", "persistent_bytes"):
            x, y = int(rs[0][col]), int(rs[1][col])
            print(f"    {col}: two workers {x} vs {y} ({rel(x, y) * 100:.4f} %)")
            check(rel(x, y) <= TOL[col], f"{col} of two workers within {TOL[col] * 100:g} %")


def case_usage():
    p = subprocess.run([ABACUS, "profile", "--runtime", "tf-0.0.0", "--out", os.path.join(TMP, "u.csv")],
                       capture_output=True, text=True)
    check(p.returncode == 2 and "tf-2.21.0" in p.stderr and "torch-1.13.1" in p.stderr,
          f"unknown runtime: exit {p.returncode}, {p.stderr.strip()}")
    p = subprocess.run([ABACUS, "profile", "--runtime", RUNTIME, "--out", os.path.join(TMP, "d.csv"), "--graphs", GRAPHS,
                        "--models", "keras_mlp,keras_textcnn", "--size", "min", "--seq", "min", "--dry-run"], cwd=ROOT,
                       capture_output=True, text=True)
    rs = list(csv.DictReader(p.stdout.splitlines()))
    check(p.returncode == 0 and len(rs) == 2 and all(r["runtime"] == RUNTIME for r in rs),
          f"--dry-run lists 2 configurations of {RUNTIME}: {p.stdout.strip()} {p.stderr.strip()[-200:]}")
    p = subprocess.run([ABACUS, "profile", "--runtime", RUNTIME, "--out", os.path.join(TMP, "d.csv"), "--models",
                        "resnet18", "--dry-run"], cwd=ROOT, capture_output=True, text=True)
    check(p.returncode == 2 and "collector.tf_worker" in p.stderr, f"a torch network is not in the Keras zoo: {p.stderr.strip()}")


CASES = [("selftest", case_selftest), ("e2e", case_e2e), ("multi", case_multi), ("usage", case_usage)]


def main():
    if not os.access(PY, os.X_OK):
        print(f"tf_collector_test: SKIPPED: runtime {RUNTIME} is not installed ({PY} is missing); "
              "'bash scripts/setup.sh' installs it")
        return 0
    if not os.access(ABACUS, os.X_OK):
        print(f"tf_collector_test: {ABACUS} is missing; run make", file=sys.stderr)
        return 1
    want = sys.argv[1:]
    t_all = time.time()
    for name, fn in CASES:
        if want and name not in want:
            continue
        t0, n = time.time(), len(failures)
        print(f"[tf {name}]", flush=True)
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            check(False, f"{name} raised {type(e).__name__}: {e}")
        print(f"  {name}: {'ok' if len(failures) == n else 'FAILED'} ({time.time() - t0:.0f} s)", flush=True)
    if failures:
        print(f"tf_collector_test: {len(failures)} failure(s) in {time.time() - t_all:.0f} s (files kept in {TMP})")
        return 1
    shutil.rmtree(TMP, ignore_errors=True)
    print(f"tf_collector_test: all passed in {time.time() - t_all:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
