#!/usr/bin/env bash
# THE GPU proof: everything the GPU machine runs, in one go, over the
# repository's run side and the kernels compiled here by
# tools/gpu/build_kernels.sh (NAME.plan.json + NAME.cubin in .gpu/kernels;
# carry .gpu). Usage (on the GPU machine): bash tools/gpu/proof.sh OUT_DIR
#
#   1. build the run side (cmake -DFLASHTILE_RUNTIME_ONLY=ON; pybind11 from
#      pip's CMake folder), Release, into build-gpu/
#   2. the runtime's GoogleTests and the Python runtime tests (CPU and GPU)
#   3. flashtile-run-check (C++) over every plan: float64 CPU reference
#   4. check_fwd.py (Python): the kernel matrix against float64 torch
#   5. launch overhead: FlashTile's Python call vs torch SDPA, tiny shapes
#   6. SASS counts; compute-sanitizer memcheck, racecheck, synccheck and
#      initcheck over every shipped family (sanitize)
#   7. a short benchmark against torch's SDPA backends
#   8. the variant examples: check_variants.py (correctness against float64
#      PyTorch twins, then speed next to the plain kernel, Flex and FA2)
#   9. the Python surface: check_python.py (flashtile.attention with Python
#      hooks against float64 twins, speed next to Flex on the same
#      functions, per-call overhead), kernels from the prebuilt cache
#  10. decode: bench_decode.py (the decode family on the issue's decode
#      shapes: float64 check, then time next to FA2, cuDNN and a plain read
#      of the same K/V bytes)
#  11. tiles: check_tiles.py (the tile-language examples against float64
#      eager twins, then speed next to the plain kernel and SDPA), and
#      compute-sanitizer's four tools on one of them
#  12. reliability: check_reliability.py (a 500-shape random sweep against
#      float64, edge-case numerics, bit-identical outputs run to run)
#  13. defects: check_defects.py (issue 22's defects found from outside,
#      against float64)
#  14. mma: check_mma.py (every instruction of the mma table, one tile
#      gathered by the compiler's fragment tables, against torch; the
#      tile programs, the causal backward family included)
#  9b. autograd: check_autograd.py (training through flashtile.attention
#      and the torch op: gradients, deterministic mode, torch.compile, CUDA
#      graphs, transformers / peft training steps, fwd+bwd speed; its
#      kernels come from build_kernels.sh's autograd mode: the bwd set and
#      the Python cache, about 35 MB to carry)
#  15. bwd, bench-bwd: check_bwd.py (the compiler-built backward families
#      against float64 autograd) and bench_bwd.py (next to FA2, cuDNN, Flex);
#      bwd-candidates: the KV-warp shapes not chosen yet, next to the
#      chosen ones and FA2; profile-bwd: ncu on the main kernels and FA2's
# Full logs go to OUT_DIR; a short table is printed at the end. Each stage
# has a time limit. The device runs one command for at most 10 minutes, so
# FLASHTILE_PROOF_STAGES picks stages by name (default: all), e.g.
# "tests run-check check_fwd overhead sass sanitize bench" in one call and
# "variants" in the next; the build always runs. FLASHTILE_SANITIZE_TOOLS
# picks compute-sanitizer's tools the same way (default: all four).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$(mkdir -p "${1:?usage: proof.sh OUT_DIR}" && cd "$1" && pwd)"
kernels="${FLASHTILE_PROOF_KERNELS:-$root/.gpu/kernels}"
build="$root/build-gpu"
export PYTHONUNBUFFERED=1
export PATH="$PATH:/usr/local/cuda/bin"
start=$(date +%s)
declare -a summary

stages="${FLASHTILE_PROOF_STAGES:-all}"
sanitize_tools="${FLASHTILE_SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}"
# want NAME: whether stage NAME runs in this call.
want() { [ "$stages" = all ] || [[ " $stages " == *" $1 "* ]]; }

# stage NAME STATUS DETAILS: one row of the final table.
stage() { summary+=("$(printf '%-22s %-5s %s' "$1" "$2" "$3")"); }
verdict() { [ "$1" -eq 0 ] && echo PASS || echo FAIL; }

nvidia-smi -L > "$out/gpu.txt" 2>&1
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)" \
  >> "$out/gpu.txt" 2>&1

# 1. Build.
pybind11_dir="$(python3 -m pybind11 --cmakedir 2>/dev/null || true)"
{
  cmake -S "$root" -B "$build" -DFLASHTILE_RUNTIME_ONLY=ON \
    -DCMAKE_BUILD_TYPE=Release \
    -DFLASHTILE_ENABLE_ASSERTIONS=ON -DPython3_EXECUTABLE="$(command -v python3)" \
    ${pybind11_dir:+-Dpybind11_DIR="$pybind11_dir"} &&
  cmake --build "$build" -j "$(nproc)"
} > "$out/build.log" 2>&1
status=$?
stage build "$(verdict $status)" "$(grep -c 'warning:' "$out/build.log") warnings; log build.log"
if [ $status -ne 0 ]; then
  tail -30 "$out/build.log"
  printf '%s\n' "${summary[@]}"
  exit 1
fi
export PYTHONPATH="$build/python_bindings${PYTHONPATH:+:$PYTHONPATH}"
run_check="$build/bin/flashtile-run-check"

# 2. Unit tests.
if want tests; then
if [ -x "$build/test/Runtime/FlashTileRuntimeTests" ]; then
  { timeout 120 "$build/test/ABI/FlashTileABITests" &&
    timeout 120 "$build/test/Runtime/FlashTileRuntimeTests"; } > "$out/gtest.log" 2>&1
  status=$?
  stage gtest "$(verdict $status)" "$(grep -E '^\[  (PASSED|FAILED)  \]' "$out/gtest.log" | head -2 | tr '\n' ' ')"
else
  stage gtest SKIP "not built: no GoogleTest on this machine (see build.log)"
fi
(cd "$root/test/Python" &&
  timeout 60 python3 -m unittest test_runtime -v > "$out/pytest_cpu.log" 2>&1)
status=$?
stage python-tests-cpu "$(verdict $status)" "$(tail -1 "$out/pytest_cpu.log")"
(cd "$root/test/Python" && FLASHTILE_RUN_CHECK="$run_check" \
  timeout 180 python3 -m unittest test_runtime_gpu -v > "$out/pytest_gpu.log" 2>&1)
status=$?
# Skips do not pass: the last line must be a bare OK.
[ $status -eq 0 ] && [ "$(tail -1 "$out/pytest_gpu.log")" != OK ] && status=1
stage python-tests-gpu "$(verdict $status)" "$(tail -1 "$out/pytest_gpu.log")"
fi

# The forward stages read the top-level plans; build_kernels.sh's autograd
# mode builds only kernels/bwd, so the gate applies only when one runs.
plans=("$kernels"/*.plan.json)
forward_stages="run-check check_fwd overhead sass sanitize bench variants tiles reliability defects mma decode"
needs_plans=0
for s in $forward_stages; do want "$s" && needs_plans=1; done
if [ $needs_plans -eq 1 ] && [ ! -e "${plans[0]}" ]; then
  stage kernels FAIL "no plans in $kernels (run tools/gpu/build_kernels.sh)"
  printf '%s\n' "${summary[@]}"
  exit 1
fi

# 3. The C++ check over every plan.
if want run-check; then
timeout 240 "$run_check" "${plans[@]}" > "$out/run_check.log" 2>&1
status=$?
stage run-check "$(verdict $status)" "$(tail -1 "$out/run_check.log") (${#plans[@]} plans)"
fi

# 4. The Python kernel matrix.
if want check_fwd; then
timeout 300 python3 "$root/tools/gpu/check_fwd.py" --kernels "$kernels" \
  --out "$out" > "$out/check.txt" 2>&1
status=$?
stage check_fwd "$(verdict $status)" "$(grep -E 'cases passed' "$out/check.txt" | tail -1)"
fi

# 5. Launch overhead.
if want overhead; then
overhead_plans=()
for n in sm90_bf16_d64_full sm90_bf16_d128_full; do
  [ -e "$kernels/$n.plan.json" ] && overhead_plans+=("$kernels/$n.plan.json")
done
[ ${#overhead_plans[@]} -eq 0 ] && overhead_plans=("${plans[0]}")
timeout 120 python3 "$root/tools/gpu/overhead.py" "${overhead_plans[@]}" \
  > "$out/overhead.txt" 2>&1
status=$?
worst=$(grep -oE 'worst ratio [0-9.]+' "$out/overhead.txt" | awk '{print $3}')
if [ $status -eq 0 ] && [ -n "$worst" ] && awk "BEGIN{exit !($worst <= 1.5)}"; then
  result=PASS
else
  result=FAIL
fi
stage launch-overhead "$result" "$(grep -E 'worst ratio' "$out/overhead.txt") (overhead.txt)"
fi

# 6. SASS: tensor-core mma, ldmatrix, cp.async, and no local memory.
if want sass; then
for cubin in "$kernels"/*.cubin; do
  sass=$(cuobjdump --dump-sass "$cubin")
  printf '%-40s HMMA.16816=%-5s LDSM=%-4s LDGSTS=%-4s LDL=%-4s STL=%s\n' \
    "$(basename "$cubin" .cubin)" \
    "$(grep -c 'HMMA.16816' <<<"$sass")" "$(grep -c 'LDSM' <<<"$sass")" \
    "$(grep -c 'LDGSTS' <<<"$sass")" "$(grep -c 'LDL' <<<"$sass")" \
    "$(grep -c 'STL' <<<"$sass")"
done > "$out/sass.txt" 2>&1
stage sass INFO "$(awk '$5 != "LDL=0" || $6 != "STL=0"' "$out/sass.txt" | wc -l) cubins with local memory (sass.txt)"
fi

if want sanitize; then
# compute-sanitizer's four tools over every shipped family: prefill
# configurations (sm_120 and sm_90, windows, Q in shared memory, V in Q's
# bytes, d = 256 and 192/128), decode with and without KV splits, paged
# decode, the variant examples (hooks, the document mask's two kernels),
# flashtile.decode/varlen from Python; small cases with lengths 1, 17 and
# 1000 and GQA. Each line of sanitize.txt is one run and its summary.
: > "$out/sanitize.txt"
sanitize_status=0
san_plans=(sm120cfg_bf16_d128_causal sm120cfg_f16_d64_window100_50
       sm120cfg_bf16_d128_window256_0 sm120cfg_bf16_d256_128x64_qreuse
       sm120cfg_f16_d128_128x128_smemq sm120cfg_f16_d64_64x64_w4_st2_smemq
       sm120cfg_bf16_d192v128_causal sm120cfg_f16_d48_full sm90_bf16_d128_causal
       decode_bf16_d128_causal decode_f16_d128_window100_50
       decode_bf16_d256_causal paged/decode_bf16_d128_causal)
# run_sanitized TOOL LABEL COMMAND...: one compute-sanitizer run.
run_sanitized() {
  local tool=$1 label=$2; shift 2
  local t0=$(date +%s)
  timeout 300 compute-sanitizer --tool "$tool" --error-exitcode 9 "$@" \
    > "$out/sanitize.log" 2>&1
  local status=$?
  [ $status -ne 0 ] && sanitize_status=1
  { echo "== $label $tool: exit $status, $(( $(date +%s) - t0 )) s";
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|cases passed|cases over|FAIL" "$out/sanitize.log" | head -5; } \
    >> "$out/sanitize.txt"
  [ $status -ne 0 ] && cp "$out/sanitize.log" "$out/sanitize-$tool-${label//[^a-z0-9]/_}.log"
}
for tool in $sanitize_tools; do
  run_sanitized $tool "forward plans (${#san_plans[@]})" \
    python3 "$root/tools/gpu/check_reliability.py" --kernels "$kernels" \
    --parts sanitize --only "${san_plans[@]}"
  run_sanitized $tool "variant examples" \
    python3 "$root/tools/gpu/check_variants.py" --kernels "$kernels" \
    --check-only --sanitize --only softcap alibi document_mask chunked gqa
  for part in decode varlen; do
    run_sanitized $tool "flashtile.$part" \
      env FLASHTILE_CACHE_DIR="$root/.gpu/cache" python3 "$root/tools/gpu/check_python.py" --check-only --only $part
  done
done
rm -f "$out/sanitize.log"
stage compute-sanitizer "$(verdict $sanitize_status)" "$(grep -c 'exit 0' "$out/sanitize.txt") of $(grep -c '^== .*: exit' "$out/sanitize.txt") runs clean (sanitize.txt)"
fi

# The reliability checks: a 500-shape random sweep against float64 (fixed
# seed; layouts, GQA, every head dim, dtype and mask), numerics at the
# edges, and bit-identical outputs run to run (split-KV included).
if want reliability; then
timeout 400 python3 "$root/tools/gpu/check_reliability.py" --kernels "$kernels" \
  > "$out/reliability.txt" 2>&1
status=$?
stage reliability "$(verdict $status)" "$(grep -E '^sweep:' "$out/reliability.txt" | cut -c8-); $(grep -cE '^PASS' "$out/reliability.txt") edge checks passed; $(grep -E '^determinism:' "$out/reliability.txt" | cut -c14-) (reliability.txt)"
fi

# 7. A short benchmark: bf16 d = 128 at S = 4096.
if want bench; then
bench=()
for n in sm120cfg_bf16_d128_full sm120cfg_bf16_d128_causal sm90_bf16_d128_full sm90_bf16_d128_causal \
         sm120cfg_bf16_d80_full sm120cfg_bf16_d80_causal sm120cfg_bf16_d112_full sm120cfg_bf16_d112_causal; do
  [ -e "$kernels/$n.plan.json" ] && bench+=("$kernels/$n.plan.json")
done
if [ ${#bench[@]} -gt 0 ]; then
  timeout 240 python3 "$root/tools/gpu/bench_fwd.py" "${bench[@]}" --seqlens 4096 \
    --peers sdpa-flash cudnn > "$out/bench.txt" 2>&1
  status=$?
  stage bench "$( [ $status -eq 0 ] && echo INFO || echo FAIL)" "${#bench[@]} kernels at S=4096, d = 128, 80, 112 (bench.txt)"
fi
fi

# 8. The variant examples.
if want variants; then
timeout 420 python3 "$root/tools/gpu/check_variants.py" --kernels "$kernels" \
  > "$out/variants.txt" 2>&1
status=$?
stage variants "$(verdict $status)" "$(grep -E 'cases passed' "$out/variants.txt" | tail -1) (variants.txt)"
fi

# 9. The Python surface: flashtile.attention with Python hooks, from the
# runtime-only package and the cache prebuilt on the build machine
# (tools/gpu/build_kernels.sh: .gpu/cache from tools/gpu/py_kernels.json).
if want decode; then
timeout 420 python3 "$root/tools/gpu/bench_decode.py" --kernels "$kernels" \
  > "$out/decode.txt" 2>&1
status=$?
stage decode "$(verdict $status)" "$(grep -E 'checks passed' "$out/decode.txt" | tail -1) (decode.txt)"
fi

if want tiles; then
timeout 300 python3 "$root/tools/gpu/check_tiles.py" --kernels "$kernels" \
  > "$out/tiles.txt" 2>&1
status=$?
stage tiles "$(verdict $status)" "$(grep -E 'cases passed' "$out/tiles.txt" | tail -1) (tiles.txt)"
# The barriers the compiler placed, under the sanitizer: a tile program
# whose user wrote none.
tiles_status=0
: > "$out/tiles-sanitize.txt"
for tool in $sanitize_tools; do
  timeout 200 compute-sanitizer --tool "$tool" --error-exitcode 9 \
    python3 "$root/tools/gpu/check_tiles.py" --kernels "$kernels" --quick \
    > "$out/sanitize.log" 2>&1
  status=$?
  [ $status -ne 0 ] && tiles_status=1
  { echo "== tile examples (bf16 causal) $tool: exit $status"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|cases passed" "$out/sanitize.log"; } \
    >> "$out/tiles-sanitize.txt"
done
rm -f "$out/sanitize.log"
stage tiles-sanitize "$(verdict $tiles_status)" "$(grep -c 'exit 0' "$out/tiles-sanitize.txt") of $(grep -c '^== ' "$out/tiles-sanitize.txt") runs clean (tiles-sanitize.txt)"
fi

if want python; then
# The runtime-only package, pip-installed into a folder of its own (the
# image's torch lives in its environment), reusing the run-side build above.
site="$out/site"
rm -rf "$site"
FLASHTILE_RUNTIME_ONLY=1 FLASHTILE_BUILD_DIR="$build" \
  python3 -m pip install --no-build-isolation --no-deps --no-index \
  --target "$site" "$root" > "$out/pip.log" 2>&1
status=$?
stage pip-runtime-only "$(verdict $status)" "$(tail -1 "$out/pip.log") (pip.log)"
(cd "$out" && PYTHONPATH="$site" FLASHTILE_CACHE_DIR="$root/.gpu/cache" \
  timeout 420 python3 "$root/tools/gpu/check_python.py") > "$out/python.txt" 2>&1
status=$?
stage python "$(verdict $status)" "$(grep -E 'cases passed' "$out/python.txt" | tail -1) (python.txt)"
fi

# 9b. Training through the Python package (check_autograd.py): gradients
# of flashtile.attention against float64 autograd (score_mods included),
# the deterministic mode, the op's backward under torch.compile and CUDA
# graphs, config-built Llama / Gemma-2 / LoRA training steps, and fwd+bwd
# speed next to SDPA and Flex. The runtime-only package, as for python.
if want autograd; then
site="$out/site"
if [ ! -d "$site/flashtile" ]; then
  FLASHTILE_RUNTIME_ONLY=1 FLASHTILE_BUILD_DIR="$build" \
    python3 -m pip install --no-build-isolation --no-deps --no-index \
    --target "$site" "$root" > "$out/pip.log" 2>&1
fi
(cd "$out" && PYTHONPATH="$site" FLASHTILE_CACHE_DIR="$root/.gpu/cache" \
  timeout 480 python3 "$root/tools/gpu/check_autograd.py") > "$out/autograd.txt" 2>&1
status=$?
stage autograd "$(verdict $status)" "$(grep -c '^PASS' "$out/autograd.txt") passed, $(grep -c '^FAIL' "$out/autograd.txt") failed (autograd.txt)"
fi

# 14. The mma table on the hardware: one tile per instruction, gathered by
# the compiler's fragment tables, against torch.
if want mma; then
timeout 120 python3 "$root/tools/gpu/check_mma.py" --gpu-dir "$root/.gpu" \
  > "$out/mma.txt" 2>&1
status=$?
stage mma "$(verdict $status)" "$(grep -E 'instructions passed' "$out/mma.txt" | tail -1) (mma.txt)"
fi

# 15. The compiler-built backward families (--direction=bwd, kernels/bwd):
# check_bwd.py against float64 autograd and FA2's rule, then bench_bwd.py
# next to FA2 (SDPA flash), cuDNN and Flex backward.
if want bwd; then
timeout 300 python3 "$root/tools/gpu/check_bwd.py" --folder "$kernels/bwd" \
  > "$out/bwd.txt" 2>&1
status=$?
stage bwd "$(verdict $status)" "$(grep -E 'gradients passed' "$out/bwd.txt" | tail -1) (bwd.txt)"
fi
if want bench-bwd; then
timeout 400 python3 "$root/tools/gpu/bench_bwd.py" \
  "$kernels"/bwd/bwd_bf16_d{64,128}_{full,causal}.plan.json \
  "$kernels"/bwd/bwd_bf16_d64_causal_det.plan.json \
  > "$out/bench_bwd.txt" 2>&1
status=$?
stage bench-bwd "$(verdict $status)" "$(grep -c flashtile "$out/bench_bwd.txt") shapes (bench_bwd.txt)"
fi
# ncu's view of the backward's main kernel (the chosen d = 128 one: 2 row
# x 2 KV warps; the 4-row-warp shape chosen before it; and the
# deterministic family's main kernel, without dQ's atomics, and its dQ
# kernel) next to FA2's, on the same inputs: where the time goes (speed of
# light, occupancy, warp stalls, shared-memory bank conflicts, L2
# reductions). The warm-up launches (one per kernel) are skipped.
if want profile-bwd; then
profiled=("$kernels"/bwd/bwd_bf16_d128_full{,_r4,_det}.plan.json)
# Per pass: each plan's main kernel, the deterministic plan's dQ kernel,
# and FA2's.
launches=$(( ${#profiled[@]} + 2 ))
timeout 400 ncu -k regex:'bwd_main|bwd_dq|dq_dk_dv' \
  --launch-skip $launches --launch-count $launches \
  --section SpeedOfLight --section Occupancy --section LaunchStats \
  --section WarpStateStats --section MemoryWorkloadAnalysis_Tables \
  --section ComputeWorkloadAnalysis --section InstructionStats \
  python3 "$root/tools/gpu/profile_bwd.py" "${profiled[@]}" \
  > "$out/profile_bwd.txt" 2>&1
status=$?
stage profile-bwd "$(verdict $status)" "$(grep -c '^  [a-z_].*(' "$out/profile_bwd.txt") kernels profiled (profile_bwd.txt)"
fi
# The backward shapes the search does not pick yet (KV warps that split
# columns; at d = 256 the 2-warp shape it picked before), next to the
# chosen ones and FA2, to decide the candidates.
if want bwd-candidates; then
timeout 400 python3 "$root/tools/gpu/bench_bwd.py" \
  "$kernels"/bwd/bwd_bf16_d64_{full,causal}.plan.json \
  "$kernels"/bwd/bwd_bf16_d64_{full,causal}_kv4.plan.json \
  "$kernels"/bwd/bwd_bf16_d64_causal_kv2.plan.json \
  "$kernels"/bwd/bwd_bf16_d128_full{,_kv2,_kv4,_det}.plan.json \
  "$kernels"/bwd/bwd_bf16_d128_causal{,_kv4}.plan.json \
  "$kernels"/bwd/bwd_bf16_d256_causal{,_w2}.plan.json \
  "$kernels"/bwd/bwd_bf16_d64_{full,causal}_r4.plan.json \
  "$kernels"/bwd/bwd_bf16_d64_full_r2n128.plan.json \
  "$kernels"/bwd/bwd_bf16_d128_{full,causal}_r4.plan.json \
  --seqlens 1024 4096 --peers sdpa-flash > "$out/bwd_candidates.txt" 2>&1
status=$?
stage bwd-candidates "$(verdict $status)" "$(grep -c flashtile "$out/bwd_candidates.txt") shapes (bwd_candidates.txt)"
fi

# 13. The defects found from outside (issue 22), against float64: a changed
# hook constant recompiles, x ** n of negative x, batch_size() in every
# kernel, Python booleans, 0-d captures, concurrent decode calls.
if want defects; then
(cd "$out" && FLASHTILE_CACHE_DIR="$root/.gpu/cache" \
  timeout 300 python3 "$root/tools/gpu/check_defects.py") > "$out/defects.txt" 2>&1
status=$?
stage defects "$(verdict $status)" "$(grep -E 'cases passed' "$out/defects.txt" | tail -1) (defects.txt)"
fi

{
  echo
  echo "== FlashTile GPU proof ($(head -1 "$out/gpu.txt"), $(( $(date +%s) - start )) s)"
  printf '%s\n' "${summary[@]}"
  echo
  echo "-- launch overhead (us per call)"
  cat "$out/overhead.txt"
  if [ -e "$out/variants.txt" ]; then
    echo
    echo "-- variants (TFLOP/s)"
    sed -n '/^TFLOP/,$p' "$out/variants.txt"
  fi
  if [ -e "$out/python.txt" ]; then
    echo
    echo "-- python (TFLOP/s)"
    sed -n '/^TFLOP/,$p' "$out/python.txt"
  fi
  if [ -e "$out/bench.txt" ]; then
    echo
    echo "-- benchmark (TFLOP/s)"
    sed -n '/^TFLOP/,$p' "$out/bench.txt"
  fi
} | tee "$out/summary.txt"
grep -q ' FAIL ' "$out/summary.txt" && exit 1
exit 0
