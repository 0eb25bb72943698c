// A key-parallel kernel (grid = "keys"), the backward's dK / dV shape, for
// tools/gpu/check_mma.py: block (n, h_kv, b) owns key tile n of KV head
// h_kv, holds K's tile in shared memory, loops over the query tiles j of
// its group's first query head (a 2-slot ring of Q tiles) and accumulates
// T = sum_j K[n] Q[j]^T in registers (attn.mma with A from shared memory),
// then stores T into the key-side f32 tensor t (rows seqlen_k, heads
// heads_kv). V, O and LSE are unused.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
!frag = !attn.frag<64x64xf32>
attn.kernel @key_grid arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) attributes {
    grid = "keys",
    tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">,
               #attn.tensor<"k", "in", "seqlen_k", "heads_kv">,
               #attn.tensor<"v", "in", "seqlen_k", "heads_kv">,
               #attn.tensor<"o", "out", "seqlen_q", "heads_q">,
               #attn.tensor<"lse", "out", "seqlen_q", "heads_q">,
               #attn.tensor<"t", "out", "seqlen_k", "heads_kv">]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %out: !acc):
  %n, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %ks = attn.smem_alloc {name = "K"} : memref<1x64x64xbf16, 3>
  %qs = attn.smem_alloc {name = "Q"} : memref<2x64x64xbf16, 3>
  %c0 = arith.constant 0 : index
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  attn.copy_async %k[%b, %n, %hkv] -> %ks : !t -> memref<1x64x64xbf16, 3>
  %sq63 = arith.addi %sq, %c63 : index
  %tiles = arith.divui %sq63, %c64 : index
  %zero = attn.splat {value = 0.0 : f32} : !frag
  %acc = attn.kv_loop %c0 to %tiles iter_args(%zero) : !frag -> !frag {
  ^bb0(%j: index, %a: !frag):
    attn.copy_async %q[%b, %j, %h] -> %qs : !t -> memref<2x64x64xbf16, 3>
    %a2 = attn.mma %ks, %qs[%j], %a {transpose_b} : memref<1x64x64xbf16, 3>, memref<2x64x64xbf16, 3>, !frag -> !frag
    attn.yield %a2 : !frag
  }
  %row = arith.muli %n, %c64 : index
  attn.store_tile %acc -> %out[%b, %row, %hkv, %c0] : !frag -> !acc
}
