#!/usr/bin/env bash
# A ptxas that spills on demand: it runs the real one ($REAL_PTXAS) and,
# for every kernel of 4 warps (.maxntid 128), rewrites the spill figures of
# its -v report to 64 bytes, so that the spill-fallback test depends on
# neither a ptxas version nor what it happens to spill.
set -u
real="${REAL_PTXAS:?set REAL_PTXAS to the real ptxas}"
ptx=""
for arg in "$@"; do
  case "$arg" in *.ptx) ptx="$arg" ;; esac
done
if [ -n "$ptx" ] && grep -q '\.maxntid 128, 1, 1' "$ptx"; then
  "$real" "$@" 2>&1 |
    sed -e 's/ [0-9]* bytes spill stores, [0-9]* bytes spill loads/ 64 bytes spill stores, 64 bytes spill loads/'
  exit "${PIPESTATUS[0]}"
fi
exec "$real" "$@"
