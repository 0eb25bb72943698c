// RUN: flashtile-compile %s --direction=bwd --emit=nvvm | FileCheck %s

// attn.query_range of a monotone interval (a band of 256 keys): the
// backward's main kernel finds its query rows by bisection
// (KVBounds.h's bisectMeetingRows). The interval is evaluated at the
// within rows' ends, then bit_length(r1 - r0) steps each evaluate it at
// the midpoint of both searches and keep the half where the predicate
// changes (an xor with its value at the first row). The mask reads no
// head, so the loop over the group's heads runs once.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: llvm.func @band_bwd_main(
// CHECK:         %[[NONE:.*]] = llvm.or
// CHECK:         %[[HEADS:.*]] = llvm.select %[[NONE]], %{{.*}}, %{{.*}} : i1, i32
// CHECK:       ^[[HEAD:bb[0-9]+]](%[[H:[0-9]+]]: i32, {{.*}}):  // 2 preds
// CHECK-NEXT:    llvm.icmp "slt" %[[H]], %[[HEADS]] : i32
// CHECK:         %[[ZEROS:.*]] = "llvm.intr.ctlz"(%{{.*}}) <{is_zero_poison = false}> : (i32) -> i32
// CHECK:         %[[STEPS:.*]] = llvm.sub %{{.*}}, %[[ZEROS]] : i32
// CHECK:       ^[[STEP:bb[0-9]+]](%[[I:[0-9]+]]: i32, {{.*}}):  // 2 preds
// CHECK-NEXT:    llvm.icmp "slt" %[[I]], %[[STEPS]] : i32
// CHECK:         llvm.sdiv
// CHECK:         llvm.mlir.constant(-256 : i32) : i32
// CHECK:         %[[DIFFERS:.*]] = llvm.xor %{{.*}}, %{{.*}} : i1
// CHECK:         llvm.select %[[DIFFERS]]
// CHECK:         llvm.sdiv
// CHECK:         llvm.xor %{{.*}}, %{{.*}} : i1
// CHECK:         llvm.br ^[[STEP]]
// The interval is exact: the rows that keep the whole tile, by the same
// bisection with the tile's first and last keys swapped, in a second loop
// of steps.
// CHECK:         "llvm.intr.ctlz"
// CHECK:       ^[[WHOLE:bb[0-9]+]](%[[J:[0-9]+]]: i32, {{.*}}):  // 2 preds
// CHECK-NEXT:    llvm.icmp "slt" %[[J]], %{{.*}} : i32
// CHECK:         llvm.br ^[[WHOLE]]
// CHECK:         llvm.br ^[[HEAD]]
// CHECK-LABEL: llvm.func @band_bwd_convert(
attn.kernel @band arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 256 : index
    %lo = arith.subi %i, %c : index
    %a = arith.cmpi sge, %j, %lo : index
    %z = arith.cmpi sle, %j, %i : index
    %keep = arith.andi %a, %z : i1
    attn.yield %keep : i1
  }
}
