#!/usr/bin/env bash
# Everything the GPU machine runs in one go, over kernels compiled here by
# tools/gpu/build_kernels.sh (carry .gpu): correctness against float64
# PyTorch, SASS instruction counts, compute-sanitizer, and a first timing.
# Usage (on the GPU machine): bash tools/gpu/run_gpu_checks.sh OUT_DIR
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:?usage: run_gpu_checks.sh OUT_DIR}"
kernels="$root/.gpu/kernels"
export PYTHONUNBUFFERED=1
mkdir -p "$out"
nvidia-smi -L | tee "$out/sass.txt"

# SASS: tensor-core mma, ldmatrix, cp.async, and no local memory.
for cubin in "$kernels"/*.cubin; do
  sass=$(cuobjdump --dump-sass "$cubin")
  printf '%-40s HMMA.16816=%-5s LDSM=%-4s LDGSTS=%-4s LDL=%-4s STL=%s\n' \
    "$(basename "$cubin" .cubin)" \
    "$(grep -c 'HMMA.16816' <<<"$sass")" "$(grep -c 'LDSM' <<<"$sass")" \
    "$(grep -c 'LDGSTS' <<<"$sass")" "$(grep -c 'LDL' <<<"$sass")" \
    "$(grep -c 'STL' <<<"$sass")"
done >> "$out/sass.txt"

python3 "$root/tools/gpu/check_fwd.py" --kernels "$kernels" --out "$out" \
  > "$out/check.txt" 2>&1
echo "check_fwd exit: $?" >> "$out/check.txt"

for k in sm120cfg_bf16_d128_causal sm120cfg_f16_d64_window100_50; do
  for tool in memcheck racecheck; do
    compute-sanitizer --tool "$tool" --error-exitcode 9 \
      python3 "$root/tools/gpu/check_fwd.py" --kernels "$kernels/$k.json" \
      --sanitize > "$out/sanitize.log" 2>&1
    status=$?
    { echo "== $k $tool: exit $status"; grep -E "SUMMARY" "$out/sanitize.log"; } \
      >> "$out/sanitize.txt"
  done
done
rm -f "$out/sanitize.log"

# The first timing: bf16 d = 128 at S = 4096 (the issue's baseline shape),
# then the SM120 configurations of other head dims and S = 16384.
python3 "$root/tools/gpu/bench_fwd.py" \
  "$kernels"/sm120cfg_bf16_d128_full.json "$kernels"/sm120cfg_bf16_d128_causal.json \
  "$kernels"/sm90_bf16_d128_full.json "$kernels"/sm90_bf16_d128_causal.json \
  --seqlens 4096 > "$out/bench.txt" 2>&1
echo "bench exit: $?" >> "$out/bench.txt"
python3 "$root/tools/gpu/bench_fwd.py" \
  "$kernels"/sm120cfg_bf16_d64_*.json "$kernels"/sm120cfg_bf16_d128_full.json \
  "$kernels"/sm120cfg_bf16_d128_causal.json "$kernels"/sm120cfg_f16_d128_full.json \
  "$kernels"/sm120cfg_bf16_d96_full.json "$kernels"/sm120cfg_bf16_d192_full.json \
  "$kernels"/sm120cfg_bf16_d256_full.json "$kernels"/sm120cfg_bf16_d256_causal.json \
  --seqlens 16384 > "$out/bench_wide.txt" 2>&1
echo "bench exit: $?" >> "$out/bench_wide.txt"
