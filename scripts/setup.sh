#!/bin/sh
# setup.sh — installs every Debian 12 package Abacus needs to build, test and collect ground truth.
# Run as root on a fresh machine. Safe to run again.
set -eu
PKGS="build-essential clang libclang-rt-14-dev pkg-config valgrind
libprotobuf-c-dev protobuf-c-compiler libonnx-dev libxgboost-dev
python3 python3-torch python3-torchvision python3-onnx libopenblas0-pthread
python3-venv python3-pytest librsvg2-bin"
# libopenblas0-pthread: Debian's python3-torch calls the system BLAS (libblas.so.3, chosen by
# update-alternatives) for matrix products and for the 1x1 and small-batch convolutions that oneDNN does not
# take. With the reference BLAS that apt picks by default, training is 5-10x slower (resnet50 at 64x64, batch
# 1: 0.69 s vs 0.097 s per iteration here). The dataset's rows record the BLAS in their `blas` column.
# python3-venv, python3-pytest: the Python package's tests (make check-python) install it into a virtual
# environment that sees Debian's torch. librsvg2-bin: rsvg-convert renders the CLI's SVGs in the tests.
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	# shellcheck disable=SC2086
	apt-get install -y --no-install-recommends $missing
fi
# The other runtimes (issue "Frameworks"), each in its own virtual environment inside the project
# (.runtimes/NAME, git-ignored), pinned to the exact packages of collector/runtimes/NAME.txt. A stamp holds the
# pins it was made from, so that a changed pin file rebuilds the environment and an unchanged one is skipped.
# ABACUS_RUNTIMES=none skips them (the C library, its tests and the torch 1.13 collector need none).
cd "$(dirname "$0")/.."
for pins in collector/runtimes/*.txt; do
	[ "${ABACUS_RUNTIMES:-all}" = none ] && break
	name=$(basename "$pins" .txt)
	env=.runtimes/$name
	if [ -x "$env/bin/python" ] && cmp -s "$pins" "$env/abacus-pins.txt"; then
		continue
	fi
	rm -rf "$env"
	/usr/bin/python3 -m venv "$env"
	"$env/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir -r "$pins"
	cp "$pins" "$env/abacus-pins.txt"
	echo "setup: runtime $name installed in $env"
done
