#!/usr/bin/env bash
# The main job: set up, build, and compile the example SM120 attention kernel
# (dsl/examples/flash_fwd_sm120.mlir) to PTX and a cubin, then print its
# resource report: config, shared-memory plan, registers, spills, occupancy.
# Outputs go to build/example/ (override with FLASHTILE_EXAMPLE_OUT). Extra
# arguments go to flashtile-compile (e.g. --isa=sm_90). FLASHTILE_SKIP_BUILD=1
# uses the build as it is (the test suite runs the script that way).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FLASHTILE_BUILD_DIR:-$root/build}"
out="${FLASHTILE_EXAMPLE_OUT:-$build/example}"

[ "${FLASHTILE_SKIP_BUILD:-0}" = 1 ] || bash "$root/tools/build.sh"
mkdir -p "$out"
kernel="$root/dsl/examples/flash_fwd_sm120.mlir"
"$build/bin/flashtile-compile" "$kernel" --emit=ptx -o "$out/flash_fwd_sm120.ptx" "$@"
"$build/bin/flashtile-compile" "$kernel" --emit=cubin \
  -o "$out/flash_fwd_sm120.cubin" --launch-plan "$out/flash_fwd_sm120.plan.json" \
  --report "$@"
echo "wrote $out/flash_fwd_sm120.{ptx,cubin,plan.json}"
