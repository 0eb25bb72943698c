// The backward's first step, D = rowsum(dO * O), as a tile program, for
// tools/gpu/check_mma.py: block (m, h, b) loads its 64 x 64 tiles of the
// bf16 O and dO into f32 registers (attn.load_tile widens; rows past
// seqlen_q read 0), multiplies them elementwise (attn.map), sums each row
// (attn.reduce_rows) and stores the sums into the f32 (batch, heads_q,
// seqlen_q) tensor d (rows past seqlen_q are not written). No shared
// memory; Q, K, V and LSE are unused.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!rows = memref<?x?x?xf32, strided<[?, ?, 1]>>
!f = !attn.frag<64x64xf32>
attn.kernel @bwd_preprocess arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) attributes {
    tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">,
               #attn.tensor<"k", "in", "seqlen_k", "heads_kv">,
               #attn.tensor<"v", "in", "seqlen_k", "heads_kv">,
               #attn.tensor<"o", "in", "seqlen_q", "heads_q">,
               #attn.tensor<"lse", "in", "seqlen_q", "heads_q">,
               #attn.tensor<"do", "in", "seqlen_q", "heads_q">,
               #attn.tensor<"d", "out", "seqlen_q", "heads_q">]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %do: !t, %d: !rows):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %row = arith.muli %m, %c64 : index
  %ot = attn.load_tile %o[%b, %row, %h, %c0] : !t -> !f
  %dot = attn.load_tile %do[%b, %row, %h, %c0] : !t -> !f
  %prod = attn.map %dot, %ot : !f, !f -> !f {
  ^bb0(%x: f32, %y: f32, %i: index, %j: index):
    %z = arith.mulf %x, %y : f32
    attn.yield %z : f32
  }
  %sum = attn.reduce_rows %prod {kind = "sum"} : !f -> !attn.frag<64xf32>
  attn.store_tile %sum -> %d[%b, %h, %row] : !attn.frag<64xf32> -> !rows
}
