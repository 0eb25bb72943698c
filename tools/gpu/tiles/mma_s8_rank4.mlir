// attn.copy_tile from rank-4 tensors, for tools/gpu/check_mma.py: block
// (m, h, b) computes D[b, 64 m .., h] = A[b, 64 m .., h] B[b, 0 .. 63, h]^T
// (i8, K contiguous; A and B (batch, rows, heads, 64) extra tensors, D an
// i32 (batch, rows, heads, 64) one) with attn.mma (m16n8k32). Q sets the
// grid (its rows, heads and batch); K, V, O and the LSE are unused.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!a = memref<?x?x?x64xi8, strided<[?, ?, ?, 1]>>
!d = memref<?x?x?x64xi32, strided<[?, ?, ?, 1]>>
attn.kernel @mma_s8_rank4 arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) attributes {arg_names = ["a", "b", "d"], arg_roles = ["in", "in", "out"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %a: !a, %b: !a, %d: !d):
  %m, %h, %hkv, %bb, %sq, %sk = attn.block_context %q, %k : !t, !t
  %as = attn.smem_alloc {name = "A"} : memref<1x64x64xi8, 3>
  %bs = attn.smem_alloc {name = "B"} : memref<1x64x64xi8, 3>
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %row = arith.muli %m, %c64 : index
  attn.copy_tile %a[%bb, %row, %h, %c0] -> %as[%c0] : !a -> memref<1x64x64xi8, 3>
  attn.copy_tile %b[%bb, %c0, %h, %c0] -> %bs[%c0] : !a -> memref<1x64x64xi8, 3>
  %s = attn.mma %as, %bs[%c0] {transpose_b} : memref<1x64x64xi8, 3>, memref<1x64x64xi8, 3> -> !attn.frag<64x64xi32>
  attn.store_tile %s -> %d[%bb, %row, %h, %c0] : !attn.frag<64x64xi32> -> !d
}
