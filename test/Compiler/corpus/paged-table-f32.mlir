!t = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!bt = memref<?x?xf32, strided<[?, ?]>>
attn.kernel @k arch(#attn.arch<sm_120>) attributes {arg_names = ["block_table"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %table: !bt):
  attn.attention %q, %k, %v -> %o, %lse pages(%table : !bt) : !t, !t, !t -> !t, !lse
}
