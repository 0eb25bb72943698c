!t = memref<2x?x?x64xf16, strided<[?, ?, ?, 1]>>
!u = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @k arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !u, %v: !u, %o: !u, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !u, !u -> !u, !lse
}
