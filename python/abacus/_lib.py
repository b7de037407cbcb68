"""ctypes binding to the C library (libabacus.so, include/abacus.h): the structs this package reads and the
functions it calls, declared once. Nothing here computes a cost: every number comes from the library.

The library is found, in order, at $ABACUS_LIBRARY, beside this file (an installed package carries its own
copy), or in the repository's build/release (running the package from a checkout). A struct declared here
must match include/abacus.h field for field; tests/test_abacus.py checks the results against the CLI.
"""
from __future__ import annotations

import ctypes
import os
from typing import Optional

MAX_RANK = 8
CONFIG_VERSION = 2

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))


class AbacusError(Exception):
    """An error the library reported: its message, where it happened (node, file) and its code."""

    def __init__(self, message: str, where: str = "", code: int = 0):
        super().__init__(f"{message} ({where})" if where and where not in message else message)
        self.message, self.where, self.code = message, where, code


class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512), ("where", ctypes.c_char * 256),
                ("offset", ctypes.c_int64)]


class InputShape(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("rank", ctypes.c_int), ("dims", ctypes.c_int64 * MAX_RANK)]


class Config(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("batch", ctypes.c_int64), ("inputs", ctypes.POINTER(InputShape)),
                ("n_inputs", ctypes.c_size_t), ("optimizer", ctypes.c_int), ("strict", ctypes.c_int),
                ("runtime", ctypes.c_char_p), ("threads", ctypes.c_int), ("isa", ctypes.c_char_p)]


class Layer(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("op", ctypes.c_char_p), ("category", ctypes.c_int),
                ("rank", ctypes.c_int), ("dims", ctypes.c_int64 * MAX_RANK), ("params", ctypes.c_int64),
                ("forward_flops", ctypes.c_int64), ("backward_flops", ctypes.c_int64),
                ("output_bytes", ctypes.c_int64), ("bytes_read", ctypes.c_int64),
                ("bytes_written", ctypes.c_int64), ("saved_bytes", ctypes.c_int64), ("known", ctypes.c_int)]


class Totals(ctypes.Structure):
    _fields_ = [(f, ctypes.c_int64) for f in ("params", "forward_flops", "backward_flops", "bytes_read",
                                               "bytes_written", "layers", "folded", "unknown")]


class Memory(ctypes.Structure):
    _fields_ = [(f, ctypes.c_int64) for f in ("weights", "buffers", "optimizer", "inputs", "gradients",
                                               "activations", "workspace", "peak", "persistent", "saved", "held_peak")]


class MemoryStep(ctypes.Structure):
    _fields_ = [("phase", ctypes.c_int), ("layer", ctypes.c_int64), ("peak", ctypes.c_int64), ("live", ctypes.c_int64)]


class Prediction(ctypes.Structure):
    _fields_ = [("time_s", ctypes.c_double), ("time_lo_s", ctypes.c_double), ("time_hi_s", ctypes.c_double),
                ("memory_bytes", ctypes.c_int64), ("memory_lo_bytes", ctypes.c_int64),
                ("memory_hi_bytes", ctypes.c_int64), ("hw", ctypes.c_char_p), ("calib_s", ctypes.c_double),
                ("time_analytic_s", ctypes.c_double), ("novelty", ctypes.c_double)]


_P = ctypes.c_void_p
_E = ctypes.POINTER(Error)
# name: (restype, argtypes). Every fallible function returns an int code and takes the error last.
_SIGNATURES = {
    "abacus_version": (ctypes.c_char_p, [ctypes.POINTER(ctypes.c_int)] * 3),
    "abacus_graph_load": (ctypes.c_int, [ctypes.POINTER(_P), ctypes.c_char_p, ctypes.c_size_t, _E]),
    "abacus_graph_load_file": (ctypes.c_int, [ctypes.POINTER(_P), ctypes.c_char_p, _E]),
    "abacus_graph_free": (None, [_P]),
    "abacus_config_init": (ctypes.c_int, [ctypes.POINTER(Config), ctypes.c_uint]),
    "abacus_config_hw": (None, [ctypes.POINTER(Config), ctypes.c_char_p]),
    "abacus_machine_id": (ctypes.c_char_p, [_P]),
    "abacus_parse_optimizer": (ctypes.c_int, [ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, _E]),
    "abacus_optimizer_name": (ctypes.c_char_p, [ctypes.c_int]),
    "abacus_category_name": (ctypes.c_char_p, [ctypes.c_int]),
    "abacus_analyze": (ctypes.c_int, [ctypes.POINTER(_P), _P, ctypes.POINTER(Config), _E]),
    "abacus_analysis_free": (None, [_P]),
    "abacus_analysis_totals": (ctypes.POINTER(Totals), [_P]),
    "abacus_analysis_memory": (ctypes.POINTER(Memory), [_P]),
    "abacus_analysis_n_layers": (ctypes.c_size_t, [_P]),
    "abacus_analysis_n_memory_steps": (ctypes.c_size_t, [_P]),
    "abacus_analysis_memory_step": (ctypes.POINTER(MemoryStep), [_P, ctypes.c_size_t]),
    "abacus_phase_name": (ctypes.c_char_p, [ctypes.c_int]),
    "abacus_analysis_layer": (ctypes.POINTER(Layer), [_P, ctypes.c_size_t]),
    "abacus_analysis_n_unknown": (ctypes.c_size_t, [_P]),
    "abacus_analysis_unknown": (ctypes.c_char_p, [_P, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int64)]),
    "abacus_predictor_load_file": (ctypes.c_int, [ctypes.POINTER(_P), ctypes.c_char_p, _E]),
    "abacus_predictor_free": (None, [_P]),
    "abacus_predictor_calib": (ctypes.c_double, [_P, ctypes.c_char_p]),
    "abacus_predict": (ctypes.c_int, [ctypes.POINTER(Prediction), _P, _P, ctypes.c_char_p, ctypes.c_double, _E]),
    "abacus_predict_machine": (ctypes.c_int, [ctypes.POINTER(Prediction), _P, _P, _P, ctypes.c_double, _E]),
    "abacus_predictor_layer_shares": (ctypes.c_int, [ctypes.POINTER(ctypes.c_double), ctypes.c_size_t,
                                                     ctypes.POINTER(ctypes.c_double), _P, _P, ctypes.c_char_p, _E]),
    "abacus_machine_load_file": (ctypes.c_int, [ctypes.POINTER(_P), ctypes.c_char_p, _E]),
    "abacus_machine_free": (None, [_P]),
    "abacus_machine_threads": (ctypes.c_int, [_P]),
    "abacus_max_batch": (ctypes.c_int, [ctypes.POINTER(ctypes.c_int64), _P, _P, ctypes.POINTER(Config),
                                        ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64, _E]),
    "abacus_plan_batches": (ctypes.c_size_t, [ctypes.POINTER(ctypes.c_int64), ctypes.c_size_t, ctypes.c_int64,
                                              ctypes.c_int64]),
}


def _find(name: str, env: str, repo_rel: str) -> Optional[str]:
    for cand in (os.environ.get(env), os.path.join(_HERE, name), os.path.join(_REPO, repo_rel)):
        if cand and os.path.isfile(cand):
            return cand
    return None


def library_path() -> str:
    path = _find("libabacus.so", "ABACUS_LIBRARY", os.path.join("build", "release", "libabacus.so"))
    if not path:
        raise AbacusError("libabacus.so not found: install the package with 'pip install ./python' from the "
                          "repository (it builds the library), run 'make' in the repository, or set "
                          "ABACUS_LIBRARY to the file")
    return path


def default_model_path() -> str:
    """The bundled predictor: $ABACUS_MODEL, the package's copy, or the repository's data/predictor.abacus."""
    path = _find("predictor.abacus", "ABACUS_MODEL", os.path.join("data", "predictor.abacus"))
    if not path:
        raise AbacusError("no predictor bundle: the package carries predictor.abacus when installed with "
                          "'pip install ./python'; otherwise pass model_file= or set ABACUS_MODEL")
    return path


_lib = None


def lib() -> ctypes.CDLL:
    """The loaded library with every function's signature declared (loaded once)."""
    global _lib
    if _lib is None:
        handle = ctypes.CDLL(library_path())
        for name, (res, args) in _SIGNATURES.items():
            fn = getattr(handle, name)
            fn.restype, fn.argtypes = res, args
        _lib = handle
    return _lib


def check(rc: int, err: Error) -> None:
    """Raises the library's error when rc is not 0."""
    if rc:
        raise AbacusError(err.msg.decode(errors="replace") or f"abacus error {rc}",
                          err.where.decode(errors="replace"), rc)


def text(b: Optional[bytes]) -> str:
    return b.decode(errors="replace") if b else ""
