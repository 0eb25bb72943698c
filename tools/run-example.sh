#!/usr/bin/env bash
# The main job: set up, build, and compile the example SM120 attention kernel
# (dsl/examples/flash_fwd_sm120.mlir), printing its config and shared-memory
# plan. Extra arguments go to flashtile-compile.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FLASHTILE_BUILD_DIR:-$root/build}"

bash "$root/tools/build.sh"
"$build/bin/flashtile-compile" "$root/dsl/examples/flash_fwd_sm120.mlir" \
  --emit=plan "$@"
