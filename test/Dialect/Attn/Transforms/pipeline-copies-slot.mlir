// RUN: flashtile-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-pipeline-copies{remarks=true}))' | FileCheck %s

// Copies named by a slot (the loop index) whose tile is computed from it
// are issued ahead like any other: the computation is re-emitted for the
// step the copy fills, in the prologue (at the chain's upper bound) and in
// the loops. Both loops of the chain compute the tile the same way.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!f = !attn.frag<64x64xf32>
// CHECK-LABEL: attn.kernel @same_map
// CHECK:         %[[LAST:.*]] = arith.subi %seqlen_q, %c1
// CHECK:         %[[T0:.*]] = arith.remui %[[LAST]], %c3
// CHECK:         attn.copy_async %arg1[%batch, %[[T0]], %kv_head] slot %[[LAST]]
// CHECK:         attn.kv_loop
// CHECK:         ^bb0(%[[J:.*]]: index,
// CHECK:           %[[NEXT:.*]] = arith.subi %[[J]], %c1
// CHECK:           %[[T1:.*]] = arith.remui %[[NEXT]], %c3
// CHECK:           attn.copy_async %arg1[%batch, %[[T1]], %kv_head] slot %[[NEXT]]
attn.kernel @same_map arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x64xbf16, 3>
  %ks = attn.smem_alloc {name = "K"} : memref<2x64x64xbf16, 3>
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xbf16, 3>
  %c3 = arith.constant 3 : index
  %zero = attn.splat {value = 0.0 : f32} : !f
  %r1 = attn.kv_loop %sk to %sq iter_args(%zero) : !f -> !f {
  ^bb0(%j: index, %acc: !f):
    %tile = arith.remui %j, %c3 : index
    // expected-remark @below {{copy of K issued 1 step ahead, at the top of the step}}
    attn.copy_async %k[%b, %tile, %hkv] slot %j -> %ks : !t -> memref<2x64x64xbf16, 3>
    %s = attn.mma %qs, %ks[%j] {transpose_b} : memref<1x64x64xbf16, 3>, memref<2x64x64xbf16, 3> -> !f
    attn.yield %s : !f
  }
  %r2 = attn.kv_loop %m to %sk iter_args(%r1) : !f -> !f {
  ^bb0(%j: index, %acc: !f):
    %tile = arith.remui %j, %c3 : index
    attn.copy_async %k[%b, %tile, %hkv] slot %j -> %ks : !t -> memref<2x64x64xbf16, 3>
    %s = attn.mma %qs, %ks[%j] {transpose_b} : memref<1x64x64xbf16, 3>, memref<2x64x64xbf16, 3> -> !f
    attn.yield %s : !f
  }
}

// -----

// The loops of a chain compute the tile differently: issuing the first
// loop's last copies ahead would fetch the second loop's tiles with the
// first one's map, so the copies stay where the program put them (and no
// remark says otherwise).
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!f = !attn.frag<64x64xf32>
// CHECK-LABEL: attn.kernel @different_maps
// CHECK:         attn.kv_loop
// CHECK:         ^bb0(%[[J:.*]]: index,
// CHECK-NEXT:      %[[T:.*]] = arith.remui %[[J]], %c3
// CHECK-NEXT:      attn.copy_async %arg1[%batch, %[[T]], %kv_head] slot %[[J]]
attn.kernel @different_maps arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x64xbf16, 3>
  %ks = attn.smem_alloc {name = "K"} : memref<2x64x64xbf16, 3>
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xbf16, 3>
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %zero = attn.splat {value = 0.0 : f32} : !f
  %r1 = attn.kv_loop %sk to %sq iter_args(%zero) : !f -> !f {
  ^bb0(%j: index, %acc: !f):
    %tile = arith.remui %j, %c3 : index
    attn.copy_async %k[%b, %tile, %hkv] slot %j -> %ks : !t -> memref<2x64x64xbf16, 3>
    %s = attn.mma %qs, %ks[%j] {transpose_b} : memref<1x64x64xbf16, 3>, memref<2x64x64xbf16, 3> -> !f
    attn.yield %s : !f
  }
  %r2 = attn.kv_loop %m to %sk iter_args(%r1) : !f -> !f {
  ^bb0(%j: index, %acc: !f):
    %tile = arith.remui %j, %c5 : index
    attn.copy_async %k[%b, %tile, %hkv] slot %j -> %ks : !t -> memref<2x64x64xbf16, 3>
    %s = attn.mma %qs, %ks[%j] {transpose_b} : memref<1x64x64xbf16, 3>, memref<2x64x64xbf16, 3> -> !f
    attn.yield %s : !f
  }
}
