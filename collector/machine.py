"""What machine a measurement ran on: the facts that decide kernel speed, and a short stable id for them.

The CPU model string alone does not identify a machine (docs/PROTOCOL.md, "Machine identity"): two development
machines of this project both said `AMD EPYC` and ran the same configurations up to 1.57x apart. The
descriptor below records what decides how fast PyTorch's kernels run, and the id is a readable prefix plus
a hash of the whole descriptor, so that any change in one of its fields (a new microcode, another ISA cap,
another thread count, another BLAS) is another machine.

Fields (docs/DATASET.md, "The machines table", says the same):
  vendor, family, model, stepping, microcode, model_name   /proc/cpuinfo of the first CPU
  isa          the kernel-relevant instruction-set flags the CPU reports (sse4_2 ... avx512_bf16, amx_*)
  isa_cap      the caps set in the environment (ONEDNN_MAX_CPU_ISA, ATEN_CPU_CAPABILITY, OPENBLAS_CORETYPE),
               'none' when uncapped; 'sse41' for the protocol's emulated older CPU
  torch_capability  what ATen's dispatcher uses ("CPU capability usage: AVX512" in torch.__config__.show())
  cache_l1d, cache_l2, cache_l3   sizes from /sys/devices/system/cpu/cpu0/cache (bytes)
  cores        online CPUs; mhz: the nominal clock (the model name's "@ x GHz", else cpuinfo's
               "cpu MHz" rounded to 100 MHz: a VM reports its host's nominal clock there)
  kernel       uname release; blas: the BLAS library mapped into the process
  runtime      the framework and its exact version ("torch-1.13.1"); threads: intra-op threads
Nothing here imports torch: the caller passes the facts only the framework knows.
"""
from __future__ import annotations

import hashlib
import json
import os
import re

# Instruction-set flags that change which kernels oneDNN, ATen or OpenBLAS choose.
ISA_FLAGS = ("sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512dq", "avx512cd", "avx512bw",
             "avx512vl", "avx512ifma", "avx512vbmi", "avx512_vbmi2", "avx512_vnni", "avx512_bf16", "avx512_fp16",
             "avx_vnni", "amx_tile", "amx_bf16", "amx_int8")
# The environment variables that cap the ISA (docs/PROTOCOL.md, "Emulated older CPUs").
CAP_VARS = ("ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "OPENBLAS_CORETYPE")
# The named caps `abacus profile --isa-cap` and `abacus calibrate --isa-cap` set.
CAPS = {
    "sse41": {"ONEDNN_MAX_CPU_ISA": "SSE41", "ATEN_CPU_CAPABILITY": "default", "OPENBLAS_CORETYPE": "Nehalem"},
    "avx2": {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "OPENBLAS_CORETYPE": "Haswell"},
}


def _first_cpu(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        if not line.strip():
            break  # the first processor's block ends at the first empty line
        k, _, v = line.partition(":")
        out[k.strip()] = v.strip()
    return out


def _cache_sizes(root: str = "/sys/devices/system/cpu/cpu0/cache") -> dict:
    sizes = {"cache_l1d": 0, "cache_l2": 0, "cache_l3": 0}
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return sizes
    for e in entries:
        if not e.startswith("index"):
            continue
        try:
            with open(os.path.join(root, e, "level")) as f:
                level = int(f.read())
            with open(os.path.join(root, e, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(root, e, "size")) as f:
                size = f.read().strip()
        except (OSError, ValueError):
            continue
        m = re.fullmatch(r"(\d+)([KMG]?)", size)
        if not m:
            continue
        b = int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]
        if level == 1 and kind == "Data":
            sizes["cache_l1d"] = b
        elif level in (2, 3) and kind != "Instruction":
            sizes[f"cache_l{level}"] = b
    return sizes


def cap_name(env=None) -> str:
    """'none', a named cap ('sse41') when the environment matches it, else the raw settings."""
    env = os.environ if env is None else env
    got = {k: env[k] for k in CAP_VARS if env.get(k)}
    if not got:
        return "none"
    for name, want in CAPS.items():
        if got == want:
            return name
    return ";".join(f"{k}={v}" for k, v in sorted(got.items()))


# OpenBLAS cores that use no AVX (its generic x86-64 kernels): picked when OpenBLAS does not know the CPU
# model. Debian 12's OpenBLAS 0.3.21 falls back to Prescott (SSE3) on Intel family 6 model 207 (2026-12-05,
# a KVM guest): 512x512 matrix products at 13.0 GFLOP/s against 68.3 with OPENBLAS_CORETYPE=SkylakeX.
OLD_BLAS_CORES = ("prescott", "core2", "katmai", "coppermine", "northwood", "banias", "atom", "nehalem", "dunnington",
                  "penryn", "opteron", "barcelona", "bobcat", "athlon", "unknown")


def openblas_core() -> str | None:
    """The core OpenBLAS chose in this process ('Prescott', 'SkylakeX', ...), None without OpenBLAS. Call it
    after the framework loaded its BLAS: the library found here is the one mapped into the process."""
    import ctypes
    for name in ("libblas.so.3", "libopenblas.so.0"):
        try:
            lib = ctypes.CDLL(name)
            fn = lib.openblas_get_corename
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_char_p
        core = fn()
        return core.decode() if core else None
    return None


def blas_core_warning(core: str | None, isa: str, env=None) -> str | None:
    """A warning when OpenBLAS runs kernels without AVX on a CPU that has AVX2 or AVX-512 and no cap asks
    for it (OPENBLAS_CORETYPE unset): its matrix products then run several times below the CPU's speed.
    The profile and the rows measure what runs, so predictions stay right; the user may want it faster."""
    env = os.environ if env is None else env
    if not core or env.get("OPENBLAS_CORETYPE") or core.lower() not in OLD_BLAS_CORES:
        return None
    flags = isa.split()
    fix = "SkylakeX" if "avx512f" in flags else "Haswell" if "avx2" in flags else None
    if not fix:
        return None
    return (f"OpenBLAS runs its generic '{core}' kernels on this CPU (its version does not know this CPU model), "
            f"without the CPU's {'AVX-512' if fix == 'SkylakeX' else 'AVX2'}: matrix products, recurrent layers and "
            f"1x1 convolutions run several times slower than they could. The profile measures what runs, so "
            f"predictions for this setup stay right; to train faster, set OPENBLAS_CORETYPE={fix} (a machine id "
            f"of its own: calibrate again under it)")


def torch_capability(config_text: str) -> str:
    """'AVX512', 'AVX2', 'NO AVX' from torch.__config__.show(); 'unknown' when it does not say."""
    m = re.search(r"CPU capability usage:\s*([^\n]+)", config_text)
    return m.group(1).strip() if m else "unknown"


def describe(threads: int, runtime: str, blas: str, capability: str, cpuinfo: str | None = None,
             env=None, cache_root: str = "/sys/devices/system/cpu/cpu0/cache") -> dict:
    """The descriptor of this machine as a flat dict of strings and integers (see the module's docstring)."""
    if cpuinfo is None:
        with open("/proc/cpuinfo") as f:
            cpuinfo = f.read()
    c = _first_cpu(cpuinfo)
    flags = set(c.get("flags", "").split())
    name = c.get("model name", "unknown")
    m = re.search(r"@\s*([\d.]+)\s*GHz", name)
    if m:
        mhz = int(round(float(m.group(1)) * 1000))
    else:
        try:
            mhz = int(round(float(c.get("cpu MHz", "0")) / 100.0)) * 100
        except ValueError:
            mhz = 0
    d = {
        "vendor": c.get("vendor_id", "unknown"),
        "family": int(c.get("cpu family", "0") or 0),
        "model": int(c.get("model", "0") or 0),
        "stepping": int(c.get("stepping", "0") or 0) if c.get("stepping", "0").isdigit() else 0,
        "microcode": c.get("microcode", "unknown"),
        "model_name": name,
        "isa": " ".join(f for f in ISA_FLAGS if f in flags),
        "isa_cap": cap_name(env),
        "torch_capability": capability,
        "cores": os.sysconf("SC_NPROCESSORS_ONLN"),
        "mhz": mhz,
        "kernel": os.uname().release,
        "blas": blas,
        "runtime": runtime,
        "threads": int(threads),
    }
    d.update(_cache_sizes(cache_root))
    return d


def machine_id(d: dict) -> str:
    """A short stable id: readable prefix + 8 hex digits of SHA-256 over the canonical descriptor.

    e.g. 'amd-f25m17-avx512-t1-1a2b3c4d': vendor, family/model, the widest usable vector ISA after the
    cap, threads. The hash covers every field, so two machines that share the prefix still differ."""
    canon = json.dumps(d, sort_keys=True, separators=(",", ":"))
    h = hashlib.sha256(canon.encode()).hexdigest()[:8]
    vendor = {"AuthenticAMD": "amd", "GenuineIntel": "intel"}.get(d.get("vendor"), "cpu")
    cap = d.get("isa_cap", "none")
    isa = d.get("isa", "").split()
    if cap == "sse41":
        widest = "sse41"
    elif cap == "avx2" or "avx512f" not in isa:
        widest = "avx2" if "avx2" in isa else "sse"
    else:
        widest = "avx512"
    return f"{vendor}-f{d.get('family', 0)}m{d.get('model', 0)}-{widest}-t{d.get('threads', 0)}-{h}"


def runtime_name(torch) -> str:
    """'torch-1.13.1': the distribution's version of the framework (Debian's build says '1.13.0a0' in
    torch.__version__ but is torch 1.13.1; the package metadata has the release)."""
    ver = None
    try:
        from importlib import metadata
        ver = metadata.version("torch")
    except Exception:  # noqa: BLE001 - metadata missing in some builds
        ver = None
    if not ver or "a0" in ver:
        deb = _debian_version("python3-torch")
        if deb:
            ver = deb
    if not ver:
        ver = torch.__version__
    ver = ver.split("+")[0]
    return f"torch-{ver}"


def _debian_version(pkg: str) -> str | None:
    """The upstream part of an installed Debian package's version ('1.13.1' of '1.13.1+dfsg-4'), or None."""
    try:
        with open("/var/lib/dpkg/status") as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r"^Package: " + re.escape(pkg) + r"\n(?:[^\n]+\n)*?Version: ([^\n]+)", text, re.M)
    if not m:
        return None
    v = m.group(1)
    v = v.split(":", 1)[-1]  # epoch
    return re.split(r"[+~-]", v)[0]
