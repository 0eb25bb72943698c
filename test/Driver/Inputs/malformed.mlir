!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
attn.kernel @typo arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: memref<?x?x?xf32>):
  attn.attentoin %q, %k, %v -> %o, %lse
}
