// attn.mma with an n range past its N (128 columns of K): refused by the
// verifier, not read past the buffer.

!t = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @column_range arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) attributes {smem_bytes = 24576 : i64} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %ds = attn.smem_alloc {name = "dS", offset = 0 : i64} : memref<1x64x64xbf16, 3>
  %ks = attn.smem_alloc {name = "K", offset = 8192 : i64} : memref<1x64x128xbf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %j = arith.constant 0 : index
  attn.copy_async %k[%b, %j, %hkv] -> %ks : !t -> memref<1x64x128xbf16, 3>
  %zero = attn.splat {value = 1.0 : f32} : !attn.frag<64x64xf32>
  attn.store_frag %zero -> %ds : !attn.frag<64x64xf32> -> memref<1x64x64xbf16, 3>
  attn.async_wait {pending = 0 : i64}
  attn.barrier
  %dq = attn.mma %ds, %ks[%j] {n_begin = 64, n_end = 192, transpose_a} : memref<1x64x64xbf16, 3>, memref<1x64x128xbf16, 3> -> !attn.frag<64x64xf32>
}
