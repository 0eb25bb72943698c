#!/usr/bin/env bash
# Configures (once) and builds FlashTile into build/ with Ninja, ccache and
# the libMLIR.so link. Runs tools/setup.sh first, which is quick when the
# packages are already installed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FLASHTILE_BUILD_DIR:-$root/build}"

bash "$root/tools/setup.sh"

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DFLASHTILE_ENABLE_WERROR=ON -DFLASHTILE_ENABLE_ASSERTIONS=ON >/dev/null
fi
# Two cores: two jobs, and no more, so that the machine stays usable.
ninja -C "$build" -j "${FLASHTILE_JOBS:-2}" | grep -v '^\[' || true
test "${PIPESTATUS[0]}" -eq 0
