// RUN: flashtile-compile %s --emit=nvvm | FileCheck %s

// attn.key_range's key_end: one past the largest hi of any row of the
// tile. A monotone interval's hi may fall with the row (keys <= 200 -
// q_idx): the first row then keeps the most keys, so key_end is taken from
// the larger of the first and last rows' hi, never from the last row alone
// (the K/V copies zero-fill every row from key_end on).
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: llvm.func @falling(
// CHECK:         %[[C0:.*]] = llvm.mlir.constant(200 : i32) : i32
// CHECK-NEXT:    %[[HI_FIRST:.*]] = llvm.sub %[[C0]], %{{.*}} : i32
// CHECK:         %[[C1:.*]] = llvm.mlir.constant(200 : i32) : i32
// CHECK-NEXT:    %[[HI_LAST:.*]] = llvm.sub %[[C1]], %{{.*}} : i32
// The tile range takes the same maximum (computeKeyRangeTiles), then key_end:
// CHECK:         llvm.intr.smax(%[[HI_FIRST]], %[[HI_LAST]]) : (i32, i32) -> i32
// CHECK:         %[[MAX:.*]] = llvm.intr.smax(%[[HI_FIRST]], %[[HI_LAST]]) : (i32, i32) -> i32
// CHECK:         %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:    %[[END:.*]] = llvm.add %[[MAX]], %[[ONE]] : i32
// CHECK:         llvm.intr.smax(%[[END]], %{{.*}}) : (i32, i32) -> i32
attn.kernel @falling arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 200 : index
    %hi = arith.subi %c, %i : index
    %keep = arith.cmpi sle, %j, %hi : index
    attn.yield %keep : i1
  }
}
