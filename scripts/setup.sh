#!/bin/sh
# setup.sh — installs every Debian 12 package Abacus needs to build, test and collect ground truth.
# Run as root on a fresh machine. Safe to run again.
set -eu
PKGS="build-essential clang libclang-rt-14-dev pkg-config valgrind
libprotobuf-c-dev protobuf-c-compiler libonnx-dev libxgboost-dev
python3 python3-torch python3-torchvision python3-onnx"
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
