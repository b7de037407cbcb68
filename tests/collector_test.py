#!/usr/bin/python3
"""The collector end to end: `abacus profile` driving real PyTorch workers (make check-collector).

    ABACUS=build/release/abacus /usr/bin/python3 tests/collector_test.py [CASE ...]

Cases (each prints its name, its time and what it measured; a filter runs only the named ones):
  e2e          mlp at batch 1, 32x32, cpu1, sgd and adam: one row each, every column sane, the graph exported
               and loadable by `abacus inspect`; persistent bytes >= weights + gradients + optimizer state
  repeat       the same configuration in two separate workers (--repeat 2): memory agrees within 0.01 %
  multi        resnet18 batch 2 then 4 in one worker vs batch 4 in a fresh worker (--fresh): same memory;
               persistent bytes of resnet18 (sgd) against 3 x 4 x params
  oom          vgg11 under a 2.5 GB address-space limit (--mem-limit): an `oom` row
  failures     --timeout 1 gives a `timeout` row, --max-iter-seconds a `skipped` row, a different header is
               refused, a bad option is a usage error
  csv          a file with quoted fields, CRLF and embedded newlines is read (its row is not measured again);
               a damaged row is refused with its line number
  crash        a worker killed by SIGSEGV mid-configuration: an `error` row naming the signal, the run goes on
  machine      the machine id is stable across workers, differs with the thread count and with the ISA cap
               (--isa-cap sse41: torch says NO AVX), lands in the machines table once; calibrate --out DIR
               writes DIR/<id>.machine that the library reads; a protocol-1 file is
               refused with the way to convert it, and scripts/migrate_csv.py converts it
  kill         SIGTERM, then SIGKILL of the collector mid-run (plus a half-written last line): the worker dies
               with it, the reruns keep every row, measure the rest once, nothing duplicated
Runs one torch process at a time (the collector's worker), about 2-3 minutes on 2 cores.
"""
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ABACUS = os.path.abspath(os.environ.get("ABACUS", os.path.join(ROOT, "build/release/abacus")))
TMP = tempfile.mkdtemp(prefix="abacus-collector-")
GRAPHS = os.path.join(TMP, "graphs")
KEY = ("network", "input_shape", "batch", "optimizer", "hw", "repeat", "machine")
PY = "/usr/bin/python3"
# The worker as a module of the collector package, run from the repository root (collector/__init__.py).
WORKER = ["-m", "collector.worker"]
sys.path.insert(0, ROOT)
from collector import machine as mach  # noqa: E402 - the descriptor's pure functions, tested in-process

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"    FAIL: {what}", flush=True)
    return cond


def profile(*args, out, check_rc=0, **kw):
    cmd = [ABACUS, "profile", "--out", out, "--graphs", GRAPHS, "--log", os.path.join(TMP, "workers.log")]
    cmd += list(args)
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, **kw)
    if check_rc is not None and p.returncode != check_rc:
        check(False, f"{' '.join(cmd[1:])}: exit {p.returncode}, expected {check_rc}; stderr: {p.stderr.strip()[-800:]}")
    return p


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def one(rs, **match):
    hit = [r for r in rs if all(r[k] == str(v) for k, v in match.items())]
    check(len(hit) == 1, f"expected one row with {match}, found {len(hit)}")
    return hit[0] if hit else None


def rel(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1)


# ---------------------------------------------------------------------------------------------------
def machine_of(threads=1, env=None):
    """What collector/worker.py --machine says (the id every row of this machine must carry).

    `abacus profile` starts its workers without the ISA-cap variables (a cap comes only from --isa-cap, so
    that it is recorded), so the worker asked here must not inherit them either: a shell that exports
    OPENBLAS_CORETYPE would otherwise name a capped machine that no profiled row carries."""
    if env is None:
        env = {k: v for k, v in os.environ.items() if k not in mach.CAP_VARS}
    p = subprocess.run([PY, *WORKER, "--machine", "--threads", str(threads)], capture_output=True, text=True,
                       env=env, cwd=ROOT)
    check(p.returncode == 0, f"worker.py --machine: {p.stderr.strip()[-300:]}")
    return json.loads(p.stdout)


def case_e2e():
    out = os.path.join(TMP, "e2e.csv")
    here = machine_of(1)
    profile("--models", "mlp", "--batch", "1", "--size", "32", "--hw", "cpu1", "--optimizer", "sgd,adam", out=out)
    with open(out) as f:
        header = f.readline().strip().split(",")
    check(header[:3] == ["network", "graph", "input_shape"] and "busy_other" in header, f"header {header}")
    rs = rows(out)
    check(len(rs) == 2, f"2 rows, got {len(rs)}")
    for r in rs:
        print(f"    {r['optimizer']}: status {r['status']} time {r['time_s']} s (cv {r['time_cv']}, "
              f"{r['iterations']} it) calib {r['calib_s']} s memory {r['memory_bytes']} persistent "
              f"{r['persistent_bytes']} params {r['params']} busy_other {r['busy_other']}")
        check(r["status"] == "ok" and r["error"] == "", f"status ok: {r['status']} {r['error']}")
        if r["status"] != "ok":
            continue
        check(r["input_shape"] == "1x3x32x32" and r["batch"] == "1" and r["hw"] == "cpu1" and r["threads"] == "1"
              and r["repeat"] == "0", "configuration columns")
        check(float(r["time_s"]) > 0 and float(r["time_min_s"]) <= float(r["time_s"]) <= float(r["time_p90_s"]),
              "min <= median <= p90")
        check(10 <= int(r["iterations"]) <= 50, "10..50 timed iterations")
        check(float(r["calib_s"]) > 0 and float(r["time_cv"]) >= 0, "calib_s, cv")
        check(0 <= float(r["busy_other"]) <= 1, "busy_other is a fraction")
        check(r["blas"] not in ("", "unknown"), f"blas library named ({r['blas']!r})")
        check(r["protocol"] == "2" and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["timestamp"]), "protocol, timestamp")
        check(r["torch_version"] and r["torchvision_version"] and r["cpu_model"] and int(r["cores"]) >= 1, "versions, cpu")
        check(r["machine"] == here["machine"], f"machine column {r['machine']!r} is this machine's id {here['machine']!r}")
        check(re.fullmatch(r"torch-\d+\.\d+\.\d+", r["runtime"]) is not None, f"runtime {r['runtime']!r}")
        mem, pers, params = int(r["memory_bytes"]), int(r["persistent_bytes"]), int(r["params"])
        check(params == 886666, f"mlp(32) has 3*32*32*256+256 + 256*256+256 + 256*128+128 + 128*10+10 = 886666 "
              f"parameters, got {params}")
        # Weights + gradients (alive at the start of an iteration: zero_grad(set_to_none) frees them only
        # inside it) + optimizer state (sgd: momentum; adam: exp_avg, exp_avg_sq) are all float32.
        k = 3 if r["optimizer"] == "sgd" else 4
        check(k * 4 * params <= pers <= k * 4 * params * 1.01 + (1 << 20),
              f"{k} x 4 x params = {k * 4 * params} <= persistent {pers} <= that + 1 % + 1 MiB")
        check(pers <= mem, "persistent <= memory")
    g = rs[0]["graph"] if rs else ""
    path = g if os.path.isabs(g) else os.path.join(ROOT, g)
    check(g and os.path.exists(path) and path == os.path.join(GRAPHS, "mlp-32.onnx"), f"graph column {g!r}")
    if os.path.exists(path):
        p = subprocess.run([ABACUS, "inspect", path, "--batch", "1", "--format", "json"], capture_output=True, text=True)
        check(p.returncode == 0, f"abacus inspect {path}: {p.stderr.strip()}")
        if p.returncode == 0:
            params = json.loads(p.stdout)["totals"]["params"]
            print(f"    abacus inspect: {params} parameters in the exported graph")
            check(params == 886666, f"inspect counts {params} parameters, PyTorch 886666")


def case_repeat():
    out = os.path.join(TMP, "repeat.csv")
    profile("--models", "mlp", "--batch", "2", "--size", "32", "--repeat", "2", out=out)
    rs = rows(out)
    a, b = one(rs, repeat=0), one(rs, repeat=1)
    if a and b and check(a["status"] == b["status"] == "ok", "both ok"):
        for col in ("memory_bytes", "persistent_bytes"):
            x, y = int(a[col]), int(b[col])
            print(f"    {col}: {x} vs {y} ({rel(x, y) * 100:.5f} %)")
            check(rel(x, y) <= 1e-4, f"{col} of two workers within 0.01 %: {x} vs {y}")


def case_multi():
    multi = os.path.join(TMP, "multi.csv")
    fresh = os.path.join(TMP, "fresh.csv")
    profile("--models", "resnet18", "--batch", "2,4", "--size", "32", "--any-size", out=multi)
    profile("--models", "resnet18", "--batch", "4", "--size", "32", "--any-size", "--fresh", out=fresh)
    m, f = one(rows(multi), batch=4), one(rows(fresh), batch=4)
    if m and f and check(m["status"] == f["status"] == "ok", f"both ok: {m['error']} {f['error']}"):
        for col in ("memory_bytes", "persistent_bytes"):
            x, y = int(m[col]), int(f[col])
            print(f"    {col}: second in a worker {x}, fresh worker {y} ({rel(x, y) * 100:.5f} %)")
            check(rel(x, y) <= 1e-4, f"{col}: a worker's second configuration equals a fresh one within 0.01 %")
    for r in rows(multi):
        if r["status"] != "ok":
            check(False, f"resnet18 batch {r['batch']}: {r['status']} {r['error']}")
            continue
        pers, params, mem = int(r["persistent_bytes"]), int(r["params"]), int(r["memory_bytes"])
        check(params == 11689512, f"resnet18 has 11689512 parameters, got {params}")
        print(f"    resnet18 b{r['batch']}: persistent {pers} = 12 x params + {pers - 12 * params}; "
              f"memory {mem}")
        check(12 * params <= pers <= 12 * params * 1.01 + (1 << 20),
              "weights + gradients + momentum <= persistent <= that + 1 % + 1 MiB")


def case_oom():
    out = os.path.join(TMP, "oom.csv")
    # vgg11 needs 1.4 GB of address space once built (torch itself 0.9 GB) and 2.5 GB once its gradients
    # and momentum exist: under 2 GB the step, not the import or the build, runs out (2.5 GB was a coin flip).
    profile("--models", "vgg11,mlp", "--batch", "1", "--size", "32", "--mem-limit", "2000M", out=out)
    rs = rows(out)
    r = one(rs, network="vgg11")
    if r:
        print(f"    vgg11 under 2 GB: {r['status']}: {r['error'][:120]}")
        check(r["status"] == "oom", f"oom row, got {r['status']}: {r['error']}")
    r = one(rs, network="mlp")
    if r:
        check(r["status"] == "ok", f"the next configuration (new worker) runs: {r['status']} {r['error']}")


def case_failures():
    out = os.path.join(TMP, "fail.csv")
    # resnet18 at 224x224, batch 8: about 0.5 s per iteration here, so 15 iterations can never fit in 1 s
    # (mlp did, once OpenBLAS made it fast: a timeout test needs work that is slow on any machine).
    profile("--models", "resnet18", "--batch", "8", "--size", "224", "--timeout", "1", out=out)
    r = one(rows(out), batch=8)
    if r:
        print(f"    --timeout 1: {r['status']}: {r['error']}")
        check(r["status"] == "timeout", f"timeout row, got {r['status']}")
    profile("--models", "mlp", "--batch", "5", "--size", "32", "--max-iter-seconds", "0.00001", out=out)
    r = one(rows(out), batch=5)
    if r:
        print(f"    --max-iter-seconds: {r['status']}: {r['error']}")
        check(r["status"] == "skipped" and "max-iter-seconds" in r["error"], f"skipped row, got {r['status']}")
    check(len(rows(out)) == 2, "two rows")
    other = os.path.join(TMP, "other.csv")
    with open(other, "w") as f:
        f.write("network,graph,shape\nx,y,z\n")
    p = profile("--models", "mlp", "--size", "32", out=other, check_rc=1)
    check("different header" in p.stderr, f"refusal names the header: {p.stderr.strip()}")
    check(open(other).read() == "network,graph,shape\nx,y,z\n", "a refused file is left alone")
    p = profile("--models", "mlp", "--batch", "x", out=other, check_rc=2)
    check("--batch" in p.stderr, "usage error names the option")


def case_busy():
    """A configuration timed on a busy machine is measured again under --wait-quiet, and kept as is without."""
    fake = os.path.join(ROOT, "tests", "busy_worker.py")
    out = os.path.join(TMP, "busy.csv")
    p = profile("--models", "mlp", "--batch", "3", "--size", "32", "--wait-quiet", "--worker", fake, out=out)
    rs = rows(out)
    check(len(rs) == 1, f"one row, got {len(rs)}")
    if rs:
        print(f"    --wait-quiet: busy_other {rs[0]['busy_other']}; stderr: {p.stderr.strip()[-160:]}")
        check(rs[0]["status"] == "ok" and float(rs[0]["busy_other"]) != 0.75, "the busy measurement was not written")
    check("measuring it again" in p.stderr, "the retry is reported")
    out2 = os.path.join(TMP, "busy2.csv")
    profile("--models", "mlp", "--batch", "3", "--size", "32", "--worker", fake, out=out2)
    rs = rows(out2)
    check(len(rs) == 1 and float(rs[0]["busy_other"]) == 0.75, "without --wait-quiet the row is written as measured")


def dry_machines(*args):
    """The machine column of `abacus profile --dry-run` (one id per hardware id asked for)."""
    p = subprocess.run([ABACUS, "profile", "--out", os.path.join(TMP, "dry.csv"), "--graphs", GRAPHS, "--models",
                        "mlp", "--size", "32", "--dry-run"] + list(args), cwd=ROOT, capture_output=True, text=True)
    check(p.returncode == 0, f"dry run {args}: {p.stderr.strip()[-300:]}")
    rs = list(csv.DictReader(p.stdout.splitlines()))
    return sorted({r["machine"] for r in rs})


def case_machine():
    a, b = machine_of(1), machine_of(1)
    print(f"    this machine, 1 thread: {a['machine']}")
    check(a == b, "two workers describe the machine identically")
    check(re.fullmatch(r"[a-z]+-f\d+m\d+-[a-z0-9]+-t1-[0-9a-f]{8}", a["machine"]) is not None, "id format")
    for field in ("vendor", "family", "model", "stepping", "microcode", "isa", "isa_cap", "torch_capability",
                  "cache_l1d", "cache_l2", "cache_l3", "cores", "mhz", "kernel", "blas", "runtime", "threads"):
        check(field in a["descriptor"], f"descriptor has {field}")
    t2 = machine_of(2)
    check(t2["machine"] != a["machine"] and "-t2-" in t2["machine"], f"two threads are another machine: {t2['machine']}")
    one_id = dry_machines("--hw", "cpu1")
    check(one_id == [a["machine"]], f"profile's machine for cpu1 {one_id} is the worker's {a['machine']}")
    both = dry_machines("--hw", "cpu1,cpu2")
    check(both == sorted([a["machine"], t2["machine"]]), f"cpu1,cpu2: {both}")
    capped = dry_machines("--hw", "cpu1", "--isa-cap", "sse41")
    print(f"    capped at SSE4.1: {capped}")
    check(len(capped) == 1 and capped[0] != a["machine"] and "-sse41-" in capped[0], "the ISA cap changes the id")
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="SSE41", ATEN_CPU_CAPABILITY="default", OPENBLAS_CORETYPE="Nehalem")
    c = machine_of(1, env)
    check(c["machine"] == (capped[0] if capped else None) and c["descriptor"]["torch_capability"] == "NO AVX",
          f"the capped worker: {c['machine']}, torch capability {c['descriptor']['torch_capability']!r}")
    # --size min / --seq min: each network at its smallest valid input only (the campaign's fingerprint set).
    p = subprocess.run([ABACUS, "profile", "--out", os.path.join(TMP, "dry.csv"), "--graphs", GRAPHS, "--models",
                        "mlp,resnet18,lstm_lm", "--size", "min", "--seq", "min", "--dry-run"], cwd=ROOT,
                       capture_output=True, text=True)
    rs = list(csv.DictReader(p.stdout.splitlines()))
    zoo = {json.loads(line)["name"]: json.loads(line)["sizes"] for line in
           subprocess.run([PY, *WORKER, "--list"], capture_output=True, text=True, cwd=ROOT).stdout.splitlines()
           if line.strip()}
    got = {r["network"]: r["input_shape"].split("x")[-1] for r in rs}
    want = {n: str(min(zoo[n])) for n in ("mlp", "resnet18", "lstm_lm")}
    check(p.returncode == 0 and len(rs) == 3 and got == want, f"--size min --seq min: {got}, zoo minima {want}")
    # The profile: `abacus calibrate --out DIR` names the file after this machine and the library reads it.
    pdir = os.path.join(TMP, "profiles")
    os.makedirs(pdir, exist_ok=True)
    p = subprocess.run([ABACUS, "calibrate", "--out", pdir, "--runs", "1", "--format", "json"], cwd=ROOT,
                       capture_output=True, text=True)
    check(p.returncode == 0, f"calibrate --out: {p.stderr.strip()[-300:]}")
    if p.returncode == 0:
        prof = json.loads(p.stdout)
        print(f"    profile of {prof['machine']} in {prof['seconds']} s (one pass)")
        check(prof["machine"] == a["machine"], "the profile names this machine")
        check(os.path.exists(os.path.join(pdir, a["machine"] + ".machine")), "DIR/<id>.machine written")
        check(len(prof["rates"]) == 19 and all(v["seconds"] > 0 for v in prof["rates"].values()), "19 positive rates")
        # OpenBLAS's fallback to kernels without AVX on a CPU that has it is named (Debian's 0.3.21 on
        # Intel family 6 model 207 runs Prescott's); the same process-level detection as the worker's.
        if mach.blas_core_warning(mach.openblas_core(), a["descriptor"]["isa"]):
            check("warning: OpenBLAS runs its generic" in p.stderr, "calibrate warns of OpenBLAS's generic kernels")
    w = mach.blas_core_warning("Prescott", "sse4_2 avx avx2 fma avx512f", env={})
    check(w is not None and "OPENBLAS_CORETYPE=SkylakeX" in w, f"Prescott on AVX-512 names the fix: {w}")
    w = mach.blas_core_warning("Prescott", "sse4_2 avx avx2 fma", env={})
    check(w is not None and "OPENBLAS_CORETYPE=Haswell" in w, "Prescott on AVX2 names Haswell")
    check(mach.blas_core_warning("SkylakeX", "avx2 avx512f", env={}) is None, "no warning for a core with AVX")
    check(mach.blas_core_warning("Nehalem", "avx2 avx512f", env={"OPENBLAS_CORETYPE": "Nehalem"}) is None,
          "no warning when a cap asks for the old core")
    check(mach.blas_core_warning("Prescott", "sse4_1 sse4_2", env={}) is None, "no warning on a CPU without AVX2")
    # The table: one line per id, written by a real run, not again by a second one.
    out = os.path.join(TMP, "mt", "m.csv")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    profile("--models", "mlp", "--batch", "1", "--size", "32", out=out)
    profile("--models", "mlp", "--batch", "2", "--size", "32", out=out)
    table = [json.loads(line) for line in open(os.path.join(TMP, "mt", "machines.jsonl"))]
    check([t["id"] for t in table] == [a["machine"]], f"machines table beside --out: {[t['id'] for t in table]}")
    check(table and table[0]["isa"] == a["descriptor"]["isa"], "the table holds the descriptor")
    # A file of protocol 1 (no machine, runtime) is refused with the way out; the script converts it.
    old = os.path.join(TMP, "mt", "old.csv")
    with open(out) as f:
        lines = f.read().splitlines()
    with open(old, "w") as f:
        for i, line in enumerate(lines):
            f.write(",".join(next(csv.reader([line]))[:-2]) + "\n")
    p = profile("--models", "mlp", "--batch", "1", "--size", "32", out=old, check_rc=1)
    check("migrate_csv.py" in p.stderr, f"the refusal says how to convert: {p.stderr.strip()}")
    m = subprocess.run([PY, os.path.join(ROOT, "scripts", "migrate_csv.py"), old], capture_output=True, text=True)
    check(m.returncode == 0, f"migrate_csv.py: {m.stderr.strip()}")
    rs = rows(old)
    check(len(rs) == 2 and all(r["machine"] == "unrecorded" and r["runtime"] == "torch-1.13.1" for r in rs),
          "converted rows: machine unrecorded, runtime torch-1.13.1")
    p = profile("--models", "mlp", "--batch", "1", "--size", "32", out=old, check_rc=0)
    rs = rows(old)
    check(len(rs) == 3 and rs[-1]["machine"] == a["machine"], "an unrecorded row does not stand for this machine's")


def case_csv():
    cols = ["network", "graph", "input_shape", "batch", "optimizer", "hw", "threads", "repeat", "status", "error",
            "time_s", "time_min_s", "time_p90_s", "time_cv", "iterations", "calib_s", "memory_bytes",
            "persistent_bytes", "params", "torch_version", "torchvision_version", "cpu_model", "cores", "protocol",
            "timestamp", "busy_other", "blas", "machine", "runtime"]
    row = dict.fromkeys(cols, "")
    row.update(network="mlp", input_shape="1x3x32x32", batch="1", optimizer="sgd", hw="cpu1", threads="1",
               repeat="0", status="error", error='a "quoted", multi-line\nerror', protocol="2",
               machine=machine_of(1)["machine"], runtime="torch-1.13.1")
    # Written as another tool might: every field quoted, CRLF line ends, a field with a newline.
    out = os.path.join(TMP, "quoted.csv")
    with open(out, "w", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
        w.writerow(cols)
        w.writerow([row[c] for c in cols])
    before = open(out, "rb").read()
    p = profile("--models", "mlp", "--batch", "1", "--size", "32", out=out)
    check(open(out, "rb").read() == before, f"a quoted CRLF file with that row: nothing to measure ({p.stderr.strip()})")
    # A damaged row in the middle is refused with its line number, the file left alone.
    bad = os.path.join(TMP, "bad.csv")
    row["error"] = "plain"
    good = ",".join(row[c] for c in cols)
    with open(bad, "w") as f:
        f.write(",".join(cols) + "\n" + good + "\nmlp,x\n" + good + "\n")
    before = open(bad, "rb").read()
    p = profile("--models", "mlp", "--size", "32", out=bad, check_rc=1)
    check(":3:" in p.stderr and "fields" in p.stderr, f"names line 3: {p.stderr.strip()}")
    check(open(bad, "rb").read() == before, "a refused file is left alone")


def worker_pids(log, since):
    with open(log) as f:
        f.seek(since)
        return [int(m) for m in re.findall(r"worker: pid (\d+) ready", f.read())]


def wait_rows(path, n, proc, limit=120):
    end = time.time() + limit
    while time.time() < end and proc.poll() is None:
        if os.path.exists(path) and len(rows(path)) >= n:
            return True
        time.sleep(0.1)
    return False


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def case_crash():
    out = os.path.join(TMP, "crash.csv")
    log = os.path.join(TMP, "workers.log")
    since = os.path.getsize(log) if os.path.exists(log) else 0
    args = [ABACUS, "profile", "--out", out, "--graphs", GRAPHS, "--log", log, "--models", "mlp", "--size", "32",
            "--batch", "6,7"]
    p = subprocess.Popen(args, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    check(wait_rows(out, 1, p), "a first row appears")
    pids = worker_pids(log, since)
    if check(len(pids) == 1, f"one worker so far ({pids})"):
        os.kill(pids[0], signal.SIGSEGV)  # it is measuring batch 7 now
    err = p.communicate(timeout=120)[1]
    check(p.returncode == 0, f"the collector carries on: exit {p.returncode} {err.strip()}")
    r = one(rows(out), batch=7)
    if r:
        print(f"    worker crashed: {r['status']}: {r['error'][:100]}")
        check(r["status"] == "error" and "signal 11 (SIGSEGV)" in r["error"], "an error row naming the signal")


def case_kill():
    out = os.path.join(TMP, "kill.csv")
    log = os.path.join(TMP, "workers.log")
    args = [ABACUS, "profile", "--out", out, "--graphs", GRAPHS, "--log", log, "--models", "mlp", "--size", "32",
            "--batch", "1,2,3,4"]
    # 1. SIGTERM after the first row: a clean stop, no partial row, the worker is gone.
    since = os.path.getsize(log) if os.path.exists(log) else 0
    p = subprocess.Popen(args, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    check(wait_rows(out, 1, p), "a first row appears")
    p.send_signal(signal.SIGTERM)
    err = p.communicate(timeout=30)[1]
    check(p.returncode == 1 and "interrupted by SIGTERM" in err, f"SIGTERM: exit {p.returncode}, {err.strip()}")
    time.sleep(0.5)
    pids = worker_pids(log, since)
    check(pids and not any(alive(w) for w in pids), f"no worker left after SIGTERM ({pids})")
    n1 = len(rows(out))
    # 2. SIGKILL after one more row: the worker dies with the collector (PR_SET_PDEATHSIG).
    since = os.path.getsize(log)
    p = subprocess.Popen(args, cwd=ROOT, stderr=subprocess.DEVNULL)
    check(wait_rows(out, n1 + 1, p), "a row after the restart")
    time.sleep(0.3)  # let the next configuration start
    p.kill()
    p.wait()
    end = time.time() + 10
    pids = worker_pids(log, since)
    while time.time() < end and any(alive(w) for w in pids):
        time.sleep(0.1)
    check(pids and not any(alive(w) for w in pids), f"no worker left after SIGKILL ({pids})")
    before = open(out, "rb").read()
    # What a kill in the middle of a write would leave (a row is one write(), so simulate it).
    with open(out, "ab") as f:
        f.write(b'mlp,,1x3x32x32,4,sgd,cpu1,1,0,ok,"half')
    # 3. The rerun repairs the file, keeps every row and measures the rest exactly once.
    p = profile("--models", "mlp", "--size", "32", "--batch", "1,2,3,4", out=out)
    check("incomplete last line" in p.stderr, f"the repair is reported: {p.stderr.strip()}")
    after = open(out, "rb").read()
    check(after.startswith(before), "rows written before the kill are unchanged")
    rs = rows(out)
    keys = [tuple(r[k] for k in KEY) for r in rs]
    n2 = before.count(b"\n") - 1
    print(f"    rows after SIGTERM: {n1}, before SIGKILL: {n2}, after the rerun: {len(rs)}")
    check(len(keys) == 4 and len(set(keys)) == 4, f"4 distinct rows, got {len(keys)} ({len(set(keys))} distinct)")
    check(all(r["status"] == "ok" for r in rs), "all ok")
    p = profile("--models", "mlp", "--size", "32", "--batch", "1,2,3,4", out=out)
    check(open(out, "rb").read() == after, "a further rerun changes nothing")


def case_kills():
    """SIGKILL at random moments (seeded) during a run, several times, each followed by a rerun that is
    killed again: the rows written before each kill stay byte for byte, and in the end every configuration
    is there exactly once."""
    import random
    rnd = random.Random(7)
    out = os.path.join(TMP, "kills.csv")
    cfg = ["--models", "mlp", "--size", "32", "--batch", "1,2,3,4,5,6", "--optimizer", "sgd,adam"]
    args = [ABACUS, "profile", "--out", out, "--graphs", GRAPHS] + cfg
    kills = 0
    for _ in range(5):
        before = open(out, "rb").read() if os.path.exists(out) else b""
        p = subprocess.Popen(args, cwd=ROOT, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rnd.uniform(0.5, 6.0))  # a worker takes ~3 s to start, then ~0.3 s per configuration
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)  # the collector and its worker at once, as a machine crash would
            kills += 1
        p.wait()
        after = open(out, "rb").read() if os.path.exists(out) else b""
        # A kill may leave a half-written last record only if it struck inside write(): the next open cuts it.
        done = before[:before.rfind(b"\n") + 1]
        check(after.startswith(done), "complete rows written before a kill are unchanged")
    p = profile(*cfg, out=out)
    rs = rows(out)
    keys = [tuple(r[k] for k in KEY) for r in rs]
    print(f"    {kills} kills at random moments, then a full run: {len(rs)} rows")
    check(kills >= 3, f"at least 3 of the 5 runs were killed ({kills})")
    check(len(keys) == 12 and len(set(keys)) == 12, f"12 distinct rows, got {len(keys)} ({len(set(keys))} distinct)")
    check(all(r["status"] == "ok" for r in rs), "all ok")


def case_write_errors():
    """A full disk and a read-only output: a clear error, and the CSV keeps only complete rows."""
    import resource
    out = os.path.join(TMP, "full.csv")
    cfg = ["--models", "mlp", "--size", "32", "--batch", "1,2,3,4", "--optimizer", "sgd"]
    # 1. Full disk, simulated with a file-size limit: write() fails (EFBIG) part-way through the third row,
    # as it would with ENOSPC. abacus ignores SIGXFSZ, so the failure is an error it reports, not a crash.
    limit = 1200  # the header and two rows fit (about 330 bytes each), a third does not

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    p = subprocess.run([ABACUS, "profile", "--out", out, "--graphs", GRAPHS] + cfg, cwd=ROOT,
                       capture_output=True, text=True, preexec_fn=small_files, timeout=300)
    check(p.returncode != 0 and "cannot write the output" in p.stderr and "File too large" in p.stderr,
          f"full disk: exit {p.returncode}, {p.stderr.strip()[-300:]}")
    data = open(out, "rb").read()
    check(len(data) <= limit and data.endswith(b"\n"), f"only complete records are left ({len(data)} bytes)")
    n_full = len(rows(out))
    check(1 <= n_full < 4, f"some rows before the disk filled ({n_full})")
    p = profile(*cfg, out=out)
    rs = rows(out)
    keys = {tuple(r[k] for k in KEY) for r in rs}
    check(len(rs) == 4 and len(keys) == 4, f"the rerun completes without duplicates ({len(rs)} rows)")
    # 2. Read-only output: refused at once with the reason. Root ignores permission bits, so as root the
    # collector runs as 'nobody' for this check.
    ro = os.path.join(TMP, "ro")
    os.makedirs(ro, exist_ok=True)
    os.chmod(TMP, 0o755)
    os.chmod(ro, 0o755)
    ro_out = os.path.join(ro, "readonly.csv")
    shutil.copy(out, ro_out)
    os.chmod(ro_out, 0o444)

    def as_nobody():
        if os.geteuid() == 0:
            os.setgid(65534)
            os.setuid(65534)
    p = subprocess.run([ABACUS, "profile", "--out", ro_out, "--graphs", GRAPHS] + cfg[:-2] + ["--batch", "5"],
                       cwd=ROOT, capture_output=True, text=True, preexec_fn=as_nobody, timeout=60)
    check(p.returncode != 0 and "readonly.csv" in p.stderr and "Permission denied" in p.stderr,
          f"read-only output: exit {p.returncode}, {p.stderr.strip()[-300:]}")
    check(open(ro_out, "rb").read() == open(out, "rb").read(), "the read-only file is unchanged")


CASES = [("e2e", case_e2e), ("repeat", case_repeat), ("multi", case_multi), ("oom", case_oom),
         ("failures", case_failures), ("busy", case_busy), ("csv", case_csv), ("machine", case_machine),
         ("crash", case_crash),
         ("kill", case_kill), ("kills", case_kills), ("write_errors", case_write_errors)]


def main():
    want = sys.argv[1:]
    if not os.access(ABACUS, os.X_OK):
        print(f"collector_test: {ABACUS} is missing; run make", file=sys.stderr)
        return 1
    t_all = time.time()
    for name, fn in CASES:
        if want and name not in want:
            continue
        t0 = time.time()
        n = len(failures)
        print(f"[{name}]", flush=True)
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - a crash in a case is a failure of that case
            check(False, f"{name} raised {type(e).__name__}: {e}")
        print(f"  {name}: {'ok' if len(failures) == n else 'FAILED'} ({time.time() - t0:.0f} s)", flush=True)
    if failures:
        print(f"collector_test: {len(failures)} failure(s) in {time.time() - t_all:.0f} s (files kept in {TMP})")
        return 1
    shutil.rmtree(TMP, ignore_errors=True)
    print(f"collector_test: all passed in {time.time() - t_all:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
