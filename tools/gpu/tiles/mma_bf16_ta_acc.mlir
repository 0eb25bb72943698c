// The backward's dV += P^T dO shape through the compiler, for
// tools/gpu/check_mma.py: block m reads rows [64 m, 64 m + 64) of A and B
// (S x 64, bf16), multiplies A's rows transposed (attn.mma {transpose_a},
// ldmatrix.trans) by B's (stored [K][N], also .trans), and adds the 64 x 64
// product into D with f32 atomics (attn.store_tile {accumulate}): D = A^T B
// over all S rows, whatever the order of the blocks. Q only sets the grid.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!a = memref<?x?xbf16, strided<[?, 1]>>
!d = memref<?x?xf32, strided<[?, 1]>>
attn.kernel @mma_bf16_ta_acc arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) attributes {arg_names = ["a", "b", "d"], arg_roles = ["in", "in", "accumulate"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %a: !a, %b: !a, %d: !d):
  %m, %h, %hkv, %bb, %sq, %sk = attn.block_context %q, %k : !t, !t
  %as = attn.smem_alloc {name = "A"} : memref<1x64x64xbf16, 3>
  %bs = attn.smem_alloc {name = "B"} : memref<1x64x64xbf16, 3>
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %row = arith.muli %m, %c64 : index
  attn.copy_tile %a[%row, %c0] -> %as[%c0] : !a -> memref<1x64x64xbf16, 3>
  attn.copy_tile %b[%row, %c0] -> %bs[%c0] : !a -> memref<1x64x64xbf16, 3>
  %s = attn.mma %as[%c0], %bs[%c0] {transpose_a} : memref<1x64x64xbf16, 3>, memref<1x64x64xbf16, 3> -> !attn.frag<64x64xf32>
  attn.store_tile %s -> %d[%c0, %c0] {accumulate} : !attn.frag<64x64xf32> -> !d
}
