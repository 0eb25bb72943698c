// RUN: flashtile-compile %s --direction=bwd --emit=nvvm | FileCheck %s
// RUN: flashtile-compile %s --direction=bwd --tile-m=64 --tile-n=128 \
// RUN:   --warps=4 --emit=nvvm | FileCheck %s --check-prefix=PINNED

// attn.query_range with tables, for a key interval not known to be
// monotone (packed sequences: each row's keys are read from tensors at
// q_idx). The preprocess kernel wrote each query tile's KV tiles [first,
// end) at its first row of kv_first / kv_end (f32); the main kernel's
// lanes read the entries of every 32nd query tile, four tiles (eight
// loads) per step so that the loads overlap, the last clamped, keep the
// first and last tile whose range holds this KV tile, and reduce them over
// the warp with shuffles, so every warp holds the result. Entries are per
// query head (this mask reads the head), so the loop runs over the group's
// heads. A pinned non-square shape (64 x 128) gives the preprocess the main
// kernel's tile_n, with which it finds the KV tiles. The interval is exact,
// so the preprocess also writes each query tile's unmasked KV tiles
// (kv_unmasked_first / kv_unmasked_end).
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!ids = memref<?xi32, strided<[?]>>
// CHECK-LABEL: llvm.func @packed_bwd_preprocess(
// CHECK-COUNT-4: llvm.sitofp %{{.*}} : i32 to f32
// CHECK-LABEL: llvm.func @packed_bwd_main(
// CHECK:         %[[GROUP:.*]] = llvm.udiv %arg{{[0-9]+}}, %arg{{[0-9]+}} : i32
// CHECK:         llvm.select %{{.*}}, %{{.*}}, %[[GROUP]] : i1, i32
// CHECK:       ^[[HEAD:bb[0-9]+]](%{{.*}}: i32, {{.*}}):  // 2 preds
// CHECK:       ^[[ROW:bb[0-9]+]](%{{.*}}: i32, {{.*}}):  // 2 preds
// CHECK-NEXT:    %[[MORE:.*]] = llvm.icmp "slt"
// CHECK-NEXT:    llvm.cond_br %[[MORE]], ^[[BODY:bb[0-9]+]]
// CHECK:       ^[[BODY]](%[[I:[0-9]+]]: i32
// CHECK:         llvm.mul %[[I]], %{{.*}} : i32
// CHECK-COUNT-8: llvm.fptosi %{{.*}} : f32 to i32
// CHECK-NOT:     llvm.load
// CHECK:         llvm.br ^[[ROW]]
// The interval is exact: the same scan of the unmasked tables finds the
// tiles that keep this KV tile whole, and counts them (kept where they are
// one run); the warp reduces the five values (first and last meeting,
// first and last whole, the count) together.
// CHECK:       ^[[WHOLE:bb[0-9]+]](%{{.*}}: i32, {{.*}}):  // 2 preds
// CHECK-COUNT-8: llvm.fptosi %{{.*}} : f32 to i32
// CHECK:         llvm.br ^[[WHOLE]]
// CHECK-COUNT-25: nvvm.shfl.sync bfly
// CHECK-NOT:     nvvm.shfl.sync
// CHECK:         llvm.br ^[[HEAD]]
// CHECK-LABEL: llvm.func @packed_bwd_convert(
// PINNED-LABEL: llvm.func @packed_bwd_preprocess(
// PINNED-SAME:    attn.config = #attn.config<tile_m = 64, tile_n = 128,
// PINNED-LABEL: llvm.func @packed_bwd_main(
// PINNED-SAME:    attn.config = #attn.config<tile_m = 64, tile_n = 128,
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
