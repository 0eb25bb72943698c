#!/bin/sh
# Stands in for a ptxas that misbehaves in the way FAKE_PTXAS names:
#   hang     never finishes
#   signal   kills itself with SIGSEGV
#   not-elf  exits 0 after writing a file that is not an ELF
#   wrong-sm exits 0 after writing a CUDA ELF header for sm_90
#   zero-regs exits 0 with a CUDA ELF header for sm_120 and "Used 0 registers"
#   no-cubin exits 0 and writes nothing
# Arguments are those flashtile-compile passes: -arch=... -O3 -v IN -o OUT.
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then out="$2"; shift; fi
  shift
done
# A 64-byte ELF64 header: CUDA machine (190), OS ABI 0x41, ABI version 8, the
# SM number in e_flags bits 8-15.
elf() { # $1: SM number as octal escape
  printf '\177ELF\002\001\001\101\010\000\000\000\000\000\000\000' > "$out"
  printf '\002\000\276\000\001\000\000\000' >> "$out"
  printf '\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000' >> "$out"
  printf '\000\000\000\000\000\000\000\000' >> "$out"
  printf "\\000$1\\000\\006" >> "$out"
  printf '\000\000\000\000\000\000\000\000\000\000\000\000' >> "$out"
}
case "$FAKE_PTXAS" in
  hang) exec sleep 600 ;;
  signal) kill -SEGV $$ ;;
  not-elf) echo "this is not a cubin" > "$out" ;;
  wrong-sm) elf '\132' ;;
  zero-regs) elf '\170'; echo "ptxas info    : Used 0 registers" >&2 ;;
  no-cubin) ;;
esac
exit 0
