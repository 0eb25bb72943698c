// RUN: flashtile-compile %s --direction=bwd --emit=nvvm | FileCheck %s

// attn.query_range with scan_rows (packed sequences: each row's keys are
// read from tensors at q_idx): each lane evaluates every 32nd row of the
// within rows, four rows (twelve loads) per step so that their loads
// overlap, those past the last clamped, and keeps the first and last row
// whose interval meets the KV tile; the warp then reduces them with shuffles,
// so every warp holds the result. The mask reads the head, so the loop
// over the group's heads runs group times.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!ids = memref<?xi32, strided<[?]>>
// CHECK-LABEL: llvm.func @packed_bwd_main(
// CHECK:         %[[GROUP:.*]] = llvm.udiv %arg{{[0-9]+}}, %arg{{[0-9]+}} : i32
// CHECK:         llvm.select %{{.*}}, %{{.*}}, %[[GROUP]] : i1, i32
// CHECK:       ^[[HEAD:bb[0-9]+]](%{{.*}}: i32, {{.*}}):  // 2 preds
// CHECK:       ^[[ROW:bb[0-9]+]](%{{.*}}: i32, {{.*}}):  // 2 preds
// CHECK-NEXT:    %[[MORE:.*]] = llvm.icmp "slt"
// CHECK-NEXT:    llvm.cond_br %[[MORE]], ^[[BODY:bb[0-9]+]]
// CHECK:       ^[[BODY]](%[[I:[0-9]+]]: i32
// CHECK:         llvm.mul %[[I]], %{{.*}} : i32
// CHECK:         %[[Q:.*]] = llvm.intr.smin(%{{.*}}, %{{.*}}) : (i32, i32) -> i32
// CHECK-COUNT-12: llvm.load
// CHECK-NOT:     llvm.load
// CHECK:         llvm.br ^[[ROW]]
// CHECK-COUNT-10: nvvm.shfl.sync bfly
// CHECK:         llvm.br ^[[HEAD]]
// CHECK-LABEL: llvm.func @packed_bwd_convert(
attn.kernel @packed arch(#attn.arch<sm_120>) attributes {arg_names = ["seq", "start", "end"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %seq: !ids, %start: !ids, %end: !ids):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %s = memref.load %seq[%i] : !ids
    %si = arith.index_cast %s : i32 to index
    %off = arith.addi %si, %h : index
    %a32 = memref.load %start[%off] : !ids
    %e32 = memref.load %end[%si] : !ids
    %a = arith.index_cast %a32 : i32 to index
    %e = arith.index_cast %e32 : i32 to index
    %ge = arith.cmpi sge, %j, %a : index
    %lt = arith.cmpi slt, %j, %e : index
    %keep = arith.andi %ge, %lt : i1
    attn.yield %keep : i1
  }
}
