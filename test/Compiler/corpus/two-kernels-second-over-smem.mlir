!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!u = memref<?x?x?x256xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @fits arch(#attn.arch<sm_90>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}
attn.kernel @too_big arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 128, tile_n = 128, stages = 2, warps = 8, q_in_regs = false>) {
^bb0(%q: !u, %k: !u, %v: !u, %o: !u, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !u, !u, !u -> !u, !lse
}
