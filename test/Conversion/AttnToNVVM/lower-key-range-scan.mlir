// RUN: flashtile-compile %s --emit=nvvm | FileCheck %s

// attn.key_range with scan_rows: an interval not known to be monotone in
// q_idx is evaluated in a loop over the tile's rows, every 32nd row per
// lane, keeping the least and greatest ends, then reduced over the warp
// with shuffles (HookLowering.cpp).
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: llvm.func @square(
// CHECK:         llvm.br ^[[HEADER:bb[0-9]+]](%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : i32, i32, i32, i32, i32)
// CHECK:       ^[[HEADER]](%[[ROW:.*]]: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32):
// CHECK-NEXT:    %[[MORE:.*]] = llvm.icmp "slt" %[[ROW]], %{{.*}} : i32
// CHECK-NEXT:    llvm.cond_br %[[MORE]], ^[[BODY:bb[0-9]+]](
// CHECK:       ^[[BODY]](%[[R:[0-9]+]]: i32,
// CHECK:         llvm.mul %[[R]], %[[R]] : i32
// CHECK:         llvm.intr.smin
// CHECK:         llvm.intr.smax
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
