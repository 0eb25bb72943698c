#!/usr/bin/env bash
# Builds the libFuzzer target (tools/fuzz/compile-fuzzer.cpp) with Debian's
# clang and AddressSanitizer into build-fuzz/, then runs it for SECONDS over
# a corpus seeded with the regression corpus, the examples and the lit
# tests' kernels (one seed per `// -----` chunk).
#
#   bash tools/fuzz/libfuzzer.sh [SECONDS] [WORKERS]      (default 600, 1)
#
# Needs clang and its libFuzzer runtime (libclang-rt-dev). Not part of CI:
# the build is a second, instrumented copy of the compiler. libFuzzer's own
# report follows the run; inputs that failed are left as crash-*, oom-* or
# timeout-* in build-fuzz/fuzz-out/, and each one becomes a case in
# test/Compiler/corpus (tools/fuzz/fuzz.py's failures do the same).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${FLASHTILE_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${1:-600}"
workers="${2:-1}"

bash "$root/tools/setup.sh"
for tool in clang clang++; do
  command -v "$tool" >/dev/null || {
    echo "libfuzzer.sh: error: $tool is missing (apt-get install clang)" >&2
    exit 1
  }
done

if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DFLASHTILE_ENABLE_ASSERTIONS=ON -DFLASHTILE_ENABLE_LIBFUZZER=ON >/dev/null
fi
ninja -C "$build" -j "${FLASHTILE_JOBS:-2}" flashtile-compile-fuzzer |
  grep -v '^\[' || true
test "${PIPESTATUS[0]}" -eq 0

corpus="$build/fuzz-corpus"
out="$build/fuzz-out"
mkdir -p "$corpus" "$out"
python3 - "$root" "$corpus" <<'PY'
import glob, hashlib, os, sys
root, corpus = sys.argv[1], sys.argv[2]
files = (glob.glob(f"{root}/dsl/examples/*.mlir")
         + glob.glob(f"{root}/test/**/*.mlir", recursive=True))
for path in sorted(files):
    for chunk in open(path, encoding="utf-8", errors="replace").read().split("// -----"):
        if "attn.kernel" not in chunk:
            continue
        data = chunk.encode()
        with open(os.path.join(corpus, "seed-" + hashlib.sha1(data).hexdigest()), "wb") as f:
            f.write(data)
PY
echo "libfuzzer.sh: $(ls "$corpus" | wc -l) inputs in $corpus; running ${seconds}s"
cd "$out"
status=0
"$build/bin/flashtile-compile-fuzzer" "$corpus" \
  -dict="$root/tools/fuzz/attn.dict" -max_len=65536 -timeout=30 \
  -rss_limit_mb=4096 -max_total_time="$seconds" -print_final_stats=1 -print_funcs=0 \
  ${workers:+-fork="$workers"} -ignore_crashes=1 2>&1 | tail -40 || status=$?
found=$(ls "$out" | grep -cE '^(crash|oom|timeout|leak)-' || true)
echo "libfuzzer.sh: ${found} failing inputs in $out"
[ "$found" -eq 0 ] && [ "$status" -eq 0 ]
