#!/usr/bin/env bash
# Builds FlashTile and runs every test (lit + FileCheck, and the GoogleTest
# unit tests through lit). Prints a closing "N passed, N failed" line and
# exits non-zero when anything failed. GPU tests report as skipped where no
# GPU is present.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FLASHTILE_BUILD_DIR:-$root/build}"

if ! bash "$root/tools/build.sh"; then
  echo "build failed"
  echo "0 passed, 1 failed"
  exit 1
fi

log="$(mktemp)"
/usr/lib/llvm-22/bin/lit -sv "$build/test" 2>&1 | tee "$log"
# lit pads the names of its summary lines ("  Passed     : 83") when more
# than one kind of result is listed.
count() { sed -n "s/^ *$1 *: *\([0-9]*\).*/\1/p" "$log" | tail -n 1; }
passed=$(( $(count Passed || true) + 0 ))
expected_fail=$(( $(count "Expectedly Failed" || true) + 0 ))
skipped=$(( $(count Unsupported || true) + 0 ))
failed=0
for kind in Failed "Unexpectedly Passed" Unresolved "Timed Out"; do
  failed=$(( failed + $(count "$kind" || true) + 0 ))
done
rm -f "$log"
if [ "$passed" -eq 0 ] && [ "$failed" -eq 0 ]; then
  failed=1 # lit ran nothing: that is a failure, not a pass.
fi
echo "skipped (unsupported here): $skipped"
echo "$((passed + expected_fail)) passed, $failed failed"
[ "$failed" -eq 0 ]
