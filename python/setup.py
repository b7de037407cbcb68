"""Builds the package from the repository it lives in: `pip install ./python` from the repository root.

The build runs `make` in the repository (the C library as libabacus.so) and puts into the package what it
needs at run time: libabacus.so, the bundled predictor (data/predictor.abacus) and the collector's graph
export (collector/graph_export.py as abacus/_graph_export.py), so that the installed package reads the same
graphs and gives the same numbers as the CLI of the same checkout. Needs what the CLI's build needs
(scripts/setup.sh installs it: gcc, make, protobuf-c, libxgboost-dev, libonnx-dev).
"""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CARGO = {  # what the package carries: repository path -> name inside the package
    os.path.join("build", "release", "libabacus.so"): "libabacus.so",
    os.path.join("data", "predictor.abacus"): "predictor.abacus",
    os.path.join("collector", "graph_export.py"): "_graph_export.py",
}


class BuildWithLibrary(build_py):
    def run(self):
        if not os.path.isfile(os.path.join(REPO, "include", "abacus.h")):
            raise SystemExit(f"abacus: {REPO} is not the Abacus repository; install with 'pip install ./python' "
                             "from a checkout of it")
        jobs = str(min(os.cpu_count() or 1, 4))
        rc = subprocess.call(["make", "-C", REPO, "-j" + jobs, os.path.join("build", "release", "libabacus.so")])
        if rc:
            raise SystemExit("abacus: 'make build/release/libabacus.so' failed in the repository; run "
                             "scripts/setup.sh there first (it installs the C library's build dependencies)")
        super().run()
        dest = os.path.join(self.build_lib, "abacus")
        for src, name in CARGO.items():
            path = os.path.join(REPO, src)
            if not os.path.isfile(path):
                raise SystemExit(f"abacus: {path} is missing from the repository")
            shutil.copyfile(path, os.path.join(dest, name))


class BinaryDistribution(Distribution):
    """The wheel carries a shared library: tag it for this platform, not as pure Python."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
