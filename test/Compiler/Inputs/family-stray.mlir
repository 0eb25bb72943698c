// family.test: a kernel that is not in the module's family.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @in_family arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}
attn.kernel @stray arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}
attn.family @fam kernels [@in_family]
