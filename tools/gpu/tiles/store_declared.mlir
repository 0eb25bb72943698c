// Stores into the kernel's declared tensors, the backward's shapes, for
// tools/gpu/check_mma.py: block (m, h, b) computes the 64 x 64 tile
// S = Q[b, 64 m .., h] K[b, 0 .. 63, h_kv]^T (bf16, f32 accumulator) and
//   * adds it twice into the f32 (batch, seqlen_q, heads_q, 64) tensor dq
//     with atomics (attn.store_tile {accumulate}), as the backward's dQ;
//   * stores it rounded to bf16 into s, a (batch, seqlen_q, heads_q, 64)
//     output;
//   * stores its row sums into the f32 (batch, heads_q, seqlen_q) tensor
//     rowsum, one value per row, as the backward's D = rowsum(dO * O).
// Rows at or past seqlen_q are not written. V, O and LSE are unused.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
!rows = memref<?x?x?xf32, strided<[?, ?, 1]>>
attn.kernel @store_declared arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) attributes {
    tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">,
               #attn.tensor<"k", "in", "seqlen_k", "heads_kv">,
               #attn.tensor<"v", "in", "seqlen_k", "heads_kv">,
               #attn.tensor<"o", "out", "seqlen_q", "heads_q">,
               #attn.tensor<"lse", "out", "seqlen_q", "heads_q">,
               #attn.tensor<"dq", "accumulate", "seqlen_q", "heads_q">,
               #attn.tensor<"s", "out", "seqlen_q", "heads_q">,
               #attn.tensor<"rowsum", "out", "seqlen_q", "heads_q">]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %dq: !acc, %s: !t, %rowsum: !rows):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x64xbf16, 3>
  %ks = attn.smem_alloc {name = "K"} : memref<1x64x64xbf16, 3>
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xbf16, 3>
  attn.copy_async %k[%b, %c0, %hkv] -> %ks : !t -> memref<1x64x64xbf16, 3>
  %sc = attn.mma %qs, %ks[%c0] {transpose_b} : memref<1x64x64xbf16, 3>, memref<1x64x64xbf16, 3> -> !attn.frag<64x64xf32>
  %row = arith.muli %m, %c64 : index
  attn.store_tile %sc -> %dq[%b, %row, %h, %c0] {accumulate} : !attn.frag<64x64xf32> -> !acc
  attn.store_tile %sc -> %dq[%b, %row, %h, %c0] {accumulate} : !attn.frag<64x64xf32> -> !acc
  attn.store_tile %sc -> %s[%b, %row, %h, %c0] : !attn.frag<64x64xf32> -> !t
  %sum = attn.reduce_rows %sc {kind = "sum"} : !attn.frag<64x64xf32> -> !attn.frag<64xf32>
  attn.store_tile %sum -> %rowsum[%b, %h, %row] : !attn.frag<64xf32> -> !rows
}
