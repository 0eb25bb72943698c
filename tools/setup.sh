#!/usr/bin/env bash
# Installs the compile-side toolchain on Debian 12 when it is missing:
# LLVM/MLIR 22 (bookworm-security), ninja, ccache, GoogleTest (lit comes with
# LLVM), nlohmann-json (the launch plan), pybind11 and Python headers (the
# Python bindings), pip, setuptools and wheel (pip install of the package);
# python3-torch (CPU) for the autograd tests, where it installs.
# Quick (a few dpkg queries) when everything is already present.
set -euo pipefail

pkgs=(llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
      ninja-build ccache libgtest-dev nlohmann-json3-dev pybind11-dev
      python3-dev python3-pip python3-setuptools python3-wheel)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# torch (CPU, Debian's) for the tests of the Python package's autograd
# layer (test/Python/test_autograd.py); optional: without it those tests
# report as unsupported, and nothing else needs it.
if ! dpkg-query -W -f='${Status}' python3-torch 2>/dev/null |
    grep -q "install ok installed"; then
  echo "setup: installing python3-torch (the autograd tests)"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
    --no-install-recommends python3-torch >/dev/null ||
    echo "setup: warning: python3-torch did not install; the autograd tests will be skipped" >&2
fi

if [ ! -x /usr/lib/llvm-22/bin/mlir-tblgen ]; then
  echo "setup: error: /usr/lib/llvm-22/bin/mlir-tblgen is missing after install" >&2
  exit 1
fi
