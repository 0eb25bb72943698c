!t = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!bt = memref<?x?xi32, strided<[?, ?]>>
attn.kernel @k arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 2, warps = 4, q_in_regs = false>) attributes {arg_names = ["block_table"], problem = #attn.problem<causal = false, window_left = -1, window_right = -1, softmax_scale = 1.0 : f32, page_table = 0>} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %table: !bt):
  %ks = attn.smem_alloc {name = "K"} : memref<2x64x128xbf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  attn.copy_async %k[%b, %m, %hkv] -> %ks : !t -> memref<2x64x128xbf16, 3>
}
