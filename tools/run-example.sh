#!/usr/bin/env bash
# The main job: set up, build, and compile the example SM120 attention kernel
# (dsl/examples/flash_fwd_sm120.mlir) to PTX and a cubin, then print its
# resource report: config, shared-memory plan, registers, spills, occupancy.
# Outputs go to build/example/ (override with FLASHTILE_EXAMPLE_OUT). Extra
# arguments go to flashtile-compile (e.g. --isa=sm_90).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FLASHTILE_BUILD_DIR:-$root/build}"
out="${FLASHTILE_EXAMPLE_OUT:-$build/example}"

bash "$root/tools/build.sh"
mkdir -p "$out"
kernel="$root/dsl/examples/flash_fwd_sm120.mlir"
"$build/bin/flashtile-compile" "$kernel" --emit=ptx -o "$out/flash_fwd_sm120.ptx" "$@"
"$build/bin/flashtile-compile" "$kernel" --emit=cubin \
  -o "$out/flash_fwd_sm120.cubin" --metadata "$out/flash_fwd_sm120.json" \
  --report "$@"
echo "wrote $out/flash_fwd_sm120.{ptx,cubin,json}"
