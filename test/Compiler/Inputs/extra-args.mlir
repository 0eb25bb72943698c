// A kernel with one extra tensor (a (heads) table of f32) and one extra
// scalar (an i32), for the launch plan's interface.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @with_extras arch(#attn.arch<sm_120>) attributes {arg_names = ["slopes", "prefix_len"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %slopes: memref<?xf32, strided<[?]>>, %prefix: i32):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !t, !t, !t -> !t, !lse
}
