!q = memref<?x?x6x64xf16, strided<[?, ?, ?, 1]>>
!k = memref<?x?x4x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @k arch(#attn.arch<sm_120>) {
^bb0(%q: !q, %k: !k, %v: !k, %o: !q, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !q, !k, !k -> !q, !lse
}
