#!/usr/bin/env bash
# Compiles the kernels the GPU checks run: for each dtype, head dim and mask,
# the SM120 configuration built for the sm_90 ISA (so that it runs on an
# H200) and the best sm_90 configuration. Writes NAME.cubin + NAME.json into
# the folder given (default: .gpu/kernels), and a summary of registers and
# spills. Usage: tools/gpu/build_kernels.sh [OUT_DIR] [full|quick|sweep|variants]
# (variants: only what tools/gpu/check_variants.py runs; decode: only the
# decode family, which full mode builds too). Except in quick
# mode it also prebuilds the Python examples' kernels into .gpu/cache
# (python -m flashtile prebuild tools/gpu/py_kernels.json), which
# tools/gpu/check_python.py runs from the runtime-only package there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:-$root/.gpu/kernels}"
mode="${2:-full}" # full | quick | sweep | variants | decode
compile="${FLASHTILE_BUILD_DIR:-$root/build}/bin/flashtile-compile"
mkdir -p "$out"
rm -f "$out"/*.cubin "$out"/*.json "$out"/paged/*

build() { # [folder/]name, flags...
  local path=$1; shift
  "$compile" "$@" --kernel-name="$(basename "$path")" --emit=cubin \
    -o "$out/$path.cubin" --launch-plan "$out/$path.plan.json"
}

# The SM120 configuration at every head dim of the matrix (multiples of 8
# that are not multiples of 32 run padded); sm_90 at the multiples of 32.
dims="48 64 72 80 96 112 128 160 192 256"
dims90=" 64 96 128 192 256 "
[ "$mode" = quick ] && dims="64 128"
if [ "$mode" = sweep ]; then
  # bf16 d = 128 SM120 configurations, for timing the cost model's choices.
  for cfg in "128 128 1 8 true" "128 64 1 8 true" "128 128 1 8 false" \
             "64 64 1 4 true" "128 64 2 8 true" "64 128 1 4 true"; do
    set -- $cfg
    for mask in full causal; do
      flags=(--dtype=bf16 --head-dim=128)
      [ $mask = causal ] && flags+=(--causal)
      build "sweep_d128_${mask}_${1}x${2}_st${3}_w${4}_q${5}" --arch=sm_120 \
        --isa=sm_90 "${flags[@]}" --tile-m=$1 --tile-n=$2 --stages=$3 \
        --warps=$4 --q-in-regs=$5
    done
  done
  exit 0
fi
# The decode family (--family=decode): the matrix check_fwd.py runs on
# every plan, and pinned configs bench_decode.py compares with the chosen one.
decode() {
  for dtype in bf16 f16; do
    for d in 64 128; do
      for mask in full causal; do
        flags=(--dtype=$dtype --head-dim=$d)
        [ $mask = causal ] && flags+=(--causal)
        build "decode_${dtype}_d${d}_${mask}" --arch=sm_120 --isa=sm_90 \
          --family=decode "${flags[@]}"
      done
    done
  done
  build decode_bf16_d80_full --arch=sm_120 --isa=sm_90 --family=decode \
    --dtype=bf16 --head-dim=80
  build decode_bf16_d256_causal --arch=sm_120 --isa=sm_90 --family=decode \
    --dtype=bf16 --head-dim=256 --causal
  build decode_f16_d128_window100_50 --arch=sm_120 --isa=sm_90 \
    --family=decode --dtype=f16 --head-dim=128 --window=100,50
  # Paged KV, in a folder of its own (check_fwd.py's contiguous matrix
  # cannot run them; bench_decode.py times them next to the contiguous ones).
  mkdir -p "$out/paged"
  for d in 64 128; do
    for mask in full causal; do
      flags=(--dtype=bf16 --head-dim=$d)
      [ $mask = causal ] && flags+=(--causal)
      build "paged/decode_bf16_d${d}_${mask}" --arch=sm_120 --isa=sm_90 \
        --family=decode --paged-kv "${flags[@]}"
    done
  done
  for cfg in "64 2" "64 1" "128 1"; do
    set -- $cfg
    build "decode_bf16_d128_full_${1}st${2}" --arch=sm_120 --isa=sm_90 \
      --family=decode --dtype=bf16 --head-dim=128 --tile-n=$1 --stages=$2
  done
}
if [ "$mode" = decode ]; then
  decode
  exit 0
fi
[ "$mode" = full ] && decode
[ "$mode" = variants ] && dims=""
[ "$mode" = variants ] && for mask in full causal; do
  flags=(--dtype=bf16 --head-dim=128)
  [ $mask = causal ] && flags+=(--causal)
  build "sm120cfg_bf16_d128_${mask}" --arch=sm_120 --isa=sm_90 "${flags[@]}"
done
for dtype in f16 bf16; do
  for d in $dims; do
    for mask in full causal; do
      flags=(--dtype=$dtype --head-dim=$d)
      [ $mask = causal ] && flags+=(--causal)
      build "sm120cfg_${dtype}_d${d}_${mask}" --arch=sm_120 --isa=sm_90 "${flags[@]}"
      [[ "$dims90" == *" $d "* ]] &&
        build "sm90_${dtype}_d${d}_${mask}" --arch=sm_90 "${flags[@]}"
    done
  done
done
# Different head dims for QK^T and PV.
[ "$mode" = full ] && for pair in "192 128" "128 64"; do
  set -- $pair
  for dtype in f16 bf16; do
    build "sm120cfg_${dtype}_d${1}v${2}_causal" --arch=sm_120 --isa=sm_90 \
      --dtype=$dtype --head-dim=$1 --head-dim-v=$2 --causal
  done
done
# Sliding windows (left 256, right 0 and left 100, right 50).
[ "$mode" = variants ] || {
build sm120cfg_bf16_d128_window256_0 --arch=sm_120 --isa=sm_90 --dtype=bf16 \
  --head-dim=128 --window=256,0
build sm120cfg_f16_d64_window100_50 --arch=sm_120 --isa=sm_90 --dtype=f16 \
  --head-dim=64 --window=100,50

# Explicit configurations the search does not pick, so that every code path
# runs: two pipeline stages, 4 warps, Q in shared memory at d = 128, and
# d = 256 with Q in registers and V in Q's bytes (the only way 128x64 fits
# sm_120 at d = 256).
build sm120cfg_bf16_d128_causal_128x64_st2 --arch=sm_120 --isa=sm_90 \
  --dtype=bf16 --head-dim=128 --causal --tile-m=128 --tile-n=64 --stages=2 \
  --warps=8 --q-in-regs=true
build sm120cfg_f16_d64_64x64_w4_st2_smemq --arch=sm_120 --isa=sm_90 \
  --dtype=f16 --head-dim=64 --tile-m=64 --tile-n=64 --stages=2 --warps=4 \
  --q-in-regs=false
build sm120cfg_f16_d128_128x128_smemq --arch=sm_120 --isa=sm_90 --dtype=f16 \
  --head-dim=128 --window=64,64 --tile-m=128 --tile-n=128 --stages=1 \
  --warps=8 --q-in-regs=false
build sm120cfg_bf16_d256_128x64_qreuse --arch=sm_120 --isa=sm_90 \
  --dtype=bf16 --head-dim=256 --causal --tile-m=128 --tile-n=64 --stages=1 \
  --warps=8 --q-in-regs=true
}

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
  build var_window1024_bf16 --arch=sm_120 --isa=sm_90 --dtype=bf16 \
    --head-dim=128 --window=1024,0
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

# The Python examples' kernels, into the kernel cache the GPU machine reads.
if [ "$mode" != quick ]; then
  PYTHONPATH="${FLASHTILE_BUILD_DIR:-$root/build}/python_bindings" \
    python3 -m flashtile prebuild "$root/tools/gpu/py_kernels.json" \
    --cache "$root/.gpu/cache" > "$out/../prebuild.log" 2>&1 ||
    { cat "$out/../prebuild.log"; exit 1; }
  echo "prebuilt $(grep -c '^[0-9a-f]\{64\} ' "$out/../prebuild.log") Python-example kernels into .gpu/cache"
  # check_defects.py's kernels, traced as its calls trace them.
  PYTHONPATH="${FLASHTILE_BUILD_DIR:-$root/build}/python_bindings" \
    python3 "$root/tools/gpu/check_defects.py" --prebuild "$root/.gpu/cache" \
    > "$out/../prebuild-defects.log" 2>&1 ||
    { cat "$out/../prebuild-defects.log"; exit 1; }
  echo "prebuilt $(grep -c '^[0-9a-f]\{64\} ' "$out/../prebuild-defects.log") defect-check kernels into .gpu/cache"
fi
