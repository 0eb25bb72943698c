// RUN: flashtile-compile %s --emit=nvvm | FileCheck %s

// attn.key_range with scan_rows: an interval not known to be monotone in
// q_idx is evaluated at every row of the tile, every 32nd row per lane,
// unrolled (tile_m = 64: two rows per lane, the second clamped to the last
// row) so that their loads issue together; the least and greatest ends are
// then reduced over the warp with shuffles (HookLowering.cpp).
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: llvm.func @square(
// CHECK:         nvvm.read.ptx.sreg.tid.x
// CHECK:         %[[ROW0:.*]] = llvm.intr.smin(%{{.*}}, %[[LAST:.*]]) : (i32, i32) -> i32
// CHECK-NEXT:    llvm.mul %[[ROW0]], %[[ROW0]] : i32
// CHECK:         llvm.mlir.constant(32 : i32) : i32
// CHECK:         %[[ROW1:.*]] = llvm.intr.smin(%{{.*}}, %[[LAST]]) : (i32, i32) -> i32
// CHECK-NEXT:    llvm.mul %[[ROW1]], %[[ROW1]] : i32
// CHECK-NOT:     llvm.cond_br
// CHECK:         nvvm.shfl.sync bfly %{{.*}} : i32 -> i32
attn.kernel @square arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %sq = arith.muli %i, %i : index
    %keep = arith.cmpi sle, %j, %sq : index
    attn.yield %keep : i1
  }
}
