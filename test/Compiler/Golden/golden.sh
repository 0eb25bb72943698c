#!/usr/bin/env bash
# Byte-identity of the compiler's output. For every kernel of the kernel
# matrix (tools/kernel-matrix.txt) in its "golden" set:
# compile to PTX and to a cubin with flashtile-compile (from PATH) and print
# "SHA256  NAME.ptx" / "SHA256  NAME.cubin", sorted, for comparison with
# matrix.sha256. The cubins depend on ptxas: matrix.sha256 records the ptxas
# version that made them, and the comparison is only meaningful with it.
# Usage: golden.sh KERNEL_MATRIX_TXT WORK_DIR
set -euo pipefail
matrix="$1"; work="$2"
mkdir -p "$work"
grep -v '^#' "$matrix" | while read -r name sets flags; do
  [[ ",$sets," == *",golden,"* ]] || continue
  # shellcheck disable=SC2086
  flashtile-compile $flags --kernel-name="$name" --emit=ptx -o "$work/$name.ptx" < /dev/null
  # shellcheck disable=SC2086
  flashtile-compile $flags --kernel-name="$name" --emit=cubin -o "$work/$name.cubin" < /dev/null
done
(cd "$work" && sha256sum -- *.ptx *.cubin | sort -k2)
