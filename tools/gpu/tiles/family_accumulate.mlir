// A family (attn.family), the backward's dQ path in miniature, for
// tools/gpu/check_mma.py: one launch plan runs two kernels in order over
// the family's arguments (Q, K, V, O, LSE and the bf16 output s) and one
// workspace, ws, an f32 (batch, seqlen_q, heads_q, 64) tensor the plan
// allocates and zero-fills per launch.
//   1. @family_accumulate_add: S = Q[tile] K[0 .. 63]^T, added twice into
//      ws with f32 atomics (ws = 2 S, given the zero fill);
//   2. @family_accumulate_convert: ws's tile into registers
//      (attn.load_tile), stored rounded to bf16 into s.
// A second launch gives the same s only if ws starts at zero again.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
!frag = !attn.frag<64x64xf32>
attn.kernel @family_accumulate_add arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) attributes {
    tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">,
               #attn.tensor<"k", "in", "seqlen_k", "heads_kv">,
               #attn.tensor<"v", "in", "seqlen_k", "heads_kv">,
               #attn.tensor<"o", "out", "seqlen_q", "heads_q">,
               #attn.tensor<"lse", "out", "seqlen_q", "heads_q">,
               #attn.tensor<"ws", "workspace", "seqlen_q", "heads_q">,
               #attn.tensor<"s", "out", "seqlen_q", "heads_q">]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %ws: !acc, %s: !t):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x64xbf16, 3>
  %ks = attn.smem_alloc {name = "K"} : memref<1x64x64xbf16, 3>
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xbf16, 3>
  attn.copy_async %k[%b, %c0, %hkv] -> %ks : !t -> memref<1x64x64xbf16, 3>
  %sc = attn.mma %qs, %ks[%c0] {transpose_b} : memref<1x64x64xbf16, 3>, memref<1x64x64xbf16, 3> -> !frag
  %row = arith.muli %m, %c64 : index
  attn.store_tile %sc -> %ws[%b, %row, %h, %c0] {accumulate} : !frag -> !acc
  attn.store_tile %sc -> %ws[%b, %row, %h, %c0] {accumulate} : !frag -> !acc
}
attn.kernel @family_accumulate_convert arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) attributes {
    tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">,
               #attn.tensor<"k", "in", "seqlen_k", "heads_kv">,
               #attn.tensor<"v", "in", "seqlen_k", "heads_kv">,
               #attn.tensor<"o", "out", "seqlen_q", "heads_q">,
               #attn.tensor<"lse", "out", "seqlen_q", "heads_q">,
               #attn.tensor<"ws", "workspace", "seqlen_q", "heads_q">,
               #attn.tensor<"s", "out", "seqlen_q", "heads_q">]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %ws: !acc, %s: !t):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %row = arith.muli %m, %c64 : index
  %x = attn.load_tile %ws[%b, %row, %h, %c0] : !acc -> !frag
  attn.store_tile %x -> %s[%b, %row, %h, %c0] : !frag -> !t
}
attn.family @family_accumulate kernels [@family_accumulate_add, @family_accumulate_convert]
