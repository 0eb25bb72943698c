!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @k arch(#attn.arch<sm_120>) attributes {arg_names = ["flag"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %f: i1):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}
