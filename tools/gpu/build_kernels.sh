#!/usr/bin/env bash
# Compiles the kernels the GPU checks run: for each dtype, head dim and mask,
# the SM120 configuration built for the sm_90 ISA (so that it runs on an
# H200) and the best sm_90 configuration. Writes NAME.cubin + NAME.json into
# the folder given (default: .gpu/kernels), and a summary of registers and
# spills. Usage: tools/gpu/build_kernels.sh [OUT_DIR] [full|quick|sweep|variants|autograd]
# (variants: only what tools/gpu/check_variants.py runs; decode: only the
# decode family, which full mode builds too). Except in quick
# mode it also prebuilds the Python examples' kernels into .gpu/cache
# (python -m flashtile prebuild tools/gpu/py_kernels.json), which
# tools/gpu/check_python.py runs from the runtime-only package there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:-$root/.gpu/kernels}"
mode="${2:-full}" # full | quick | sweep | variants | decode | bwd | autograd
compile="${FLASHTILE_BUILD_DIR:-$root/build}/bin/flashtile-compile"
mkdir -p "$out"
rm -f "$out"/*.cubin "$out"/*.json "$out"/paged/*

build() { # [folder/]name, flags...
  local path=$1; shift
  "$compile" "$@" --kernel-name="$(basename "$path")" --emit=cubin \
    -o "$out/$path.cubin" --launch-plan "$out/$path.plan.json"
}

# Every kernel of the kernel matrix (tools/kernel-matrix.txt) in this
# mode's set: the SM120 configuration at every head dim (multiples of 8
# that are not multiples of 32 run padded), sm_90 at the multiples of 32,
# different head dims for QK^T and PV, sliding windows, explicit configs the
# search does not pick (so that every code path runs), the decode family
# (contiguous, and paged KV in a folder of its own) and the sweep of d = 128
# configurations that times the cost model's choices.
# autograd: the matrix's bwd set and the Python cache (check_bwd.py and
# check_autograd.py), nothing else.
wanted="$mode"
[ "$mode" = autograd ] && wanted=bwd
grep -v '^#' "$root/tools/kernel-matrix.txt" | while read -r name sets flags; do
  [[ ",$sets," == *",$wanted,"* ]] || continue
  mkdir -p "$out/$(dirname "$name")"
  # shellcheck disable=SC2086
  build "$name" $flags < /dev/null
done
# The Python examples' kernels, into the kernel cache the GPU machine reads.
# The cache starts empty: its keys name the build, so the entries of
# earlier builds would only grow what travels to the GPU machine.
prebuild_python() {
  rm -rf "$root/.gpu/cache"
  PYTHONPATH="${FLASHTILE_BUILD_DIR:-$root/build}/python_bindings" \
    python3 -m flashtile prebuild "$root/tools/gpu/py_kernels.json" \
    --cache "$root/.gpu/cache" > "$out/../prebuild.log" 2>&1 ||
    { cat "$out/../prebuild.log"; exit 1; }
  echo "prebuilt $(grep -c '^[0-9a-f]\{64\} ' "$out/../prebuild.log") Python-example kernels into .gpu/cache"
}
case "$mode" in
  sweep | decode | bwd) exit 0 ;;
  autograd) prebuild_python; exit 0 ;;
esac

# The variant examples (dsl/examples), SM120 configuration, bf16 and f16,
# with the causalities tools/gpu/check_variants.py runs; and the built-in
# window (1024, 0) it compares with FA2's.
examples="${FLASHTILE_BUILD_DIR:-$root/build}/examples"
variant() { # example, causal values...
  local example=$1; shift
  for dtype in bf16 f16; do
    for c in "$@"; do
      local name="var_${example}_${dtype}_c$c"
      "$examples/$example" --dtype=$dtype --causal=$c --name="$name" > "$out/$name.mlir"
      "$compile" "$out/$name.mlir" --isa=sm_90 --emit=cubin -o "$out/$name.cubin" \
        --launch-plan "$out/$name.plan.json"
      rm "$out/$name.mlir"
    done
  done
}
if [ "$mode" != quick ]; then
  variant softcap 0 1
  variant alibi 0 1
  variant relative_bias 0 1
  variant document_mask 1
  variant prefix_lm 0
  variant chunked 1
  variant gqa 1
  # The tile-language example (a tile program, not hooks).
  variant sigmoid 0 1
  variant differential 0 1
  variant relu 0 1
  # The same tile programs written in Python (flashtile.tile).
  PYTHONPATH="${FLASHTILE_BUILD_DIR:-$root/build}/python_bindings" \
    python3 "$root/python_bindings/examples/tile_attention.py" "$out" \
    --isa sm_90 > /dev/null
fi

python3 - "$out" <<'PY'
import json, pathlib, sys
rows = []
for p in sorted(pathlib.Path(sys.argv[1]).glob("*.plan.json")):
    m = json.loads(p.read_text())
    c = m["info"]["config"]
    k = m["kernels"][-1]
    rows.append(f'{m["name"]:34} {c["tile_m"]:>4}x{c["tile_n"]:<4} st{c["stages"]} w{c["warps"]} '
                f'qreg={int(c["q_in_regs"])} smem={k["dynamic_smem_bytes"]:>6} '
                f'regs={k["registers"]} spill={k["spill_stores"]}/{k["spill_loads"]}')
print("\n".join(rows))
PY

# The mma table's check (tools/gpu/check_mma.py): the fragment tables the
# compiler uses, and one warp's kernel per instruction (nvcc, the sm_90 ISA).
"${FLASHTILE_BUILD_DIR:-$root/build}/bin/flashtile-mma-tables" \
  > "$out/../mma_tables.json"
nvcc="$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")"
"$nvcc" -cubin -arch=sm_90 -o "$out/../mma_tile.cubin" \
  "$root/tools/gpu/mma_tile.cu"
# The same products through the compiler: the tile programs of
# tools/gpu/tiles (copy_tile, mma, store_tile), for the sm_90 ISA.
mkdir -p "$out/tiles"
for program in "$root"/tools/gpu/tiles/*.mlir; do
  name="$(basename "$program" .mlir)"
  "$compile" "$program" --isa=sm_90 --emit=cubin -o "$out/tiles/$name.cubin" \
    --launch-plan "$out/tiles/$name.plan.json"
done
echo "mma check: tables, kernel and tile programs into $(cd "$out/.." && pwd)"

if [ "$mode" != quick ]; then
  prebuild_python
  # check_defects.py's kernels, traced as its calls trace them.
  PYTHONPATH="${FLASHTILE_BUILD_DIR:-$root/build}/python_bindings" \
    python3 "$root/tools/gpu/check_defects.py" --prebuild "$root/.gpu/cache" \
    > "$out/../prebuild-defects.log" 2>&1 ||
    { cat "$out/../prebuild-defects.log"; exit 1; }
  echo "prebuilt $(grep -c '^[0-9a-f]\{64\} ' "$out/../prebuild-defects.log") defect-check kernels into .gpu/cache"
fi
