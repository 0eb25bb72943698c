// RUN: flashtile-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-expand-to-tiles,attn-pipeline-copies))' | FileCheck %s

// Causal, 1 stage, Q in shared memory: one masked loop (the diagonal and the
// partial last tile) then one unmasked loop; Q is read from shared memory in
// both; the prologue copies Q and K[end-1].
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @causal
// CHECK-DAG:     %[[QS:.*]] = attn.smem_alloc {name = "Q"} : memref<1x64x64xbf16, 3>
// CHECK-DAG:     %[[KS:.*]] = attn.smem_alloc {name = "K"} : memref<1x32x64xbf16, 3>
// CHECK-DAG:     %[[VS:.*]] = attn.smem_alloc {name = "V"} : memref<1x32x64xbf16, 3>
// CHECK-DAG:     %[[OS:.*]] = attn.smem_alloc {name = "O"} : memref<1x64x64xbf16, 3>
// CHECK:         %[[M:.*]], %[[H:.*]], %[[HKV:.*]], %[[B:.*]], %[[SQ:.*]], %[[SK:.*]] = attn.block_context
// CHECK:         %[[BEGIN:.*]], %[[UB:.*]], %[[UE:.*]], %[[END:.*]] = attn.kv_bounds %[[M]], %[[SQ]], %[[SK]] {tile_m = 64 : i64, tile_n = 32 : i64, window_left = -1 : i64, window_right = 0 : i64}
// CHECK:         attn.copy_async %{{.*}}[%[[B]], %[[M]], %[[H]]] -> %[[QS]]
// CHECK:         %[[LAST:.*]] = arith.subi %[[END]], %{{.*}} : index
// CHECK:         attn.copy_async %{{.*}}[%[[B]], %[[LAST]], %[[HKV]]] -> %[[KS]]
// CHECK-NOT:     attn.load_frag
// CHECK:         %[[SCALE:.*]] = attn.softmax_scale {default_value = 1.250000e-01 : f32} : f32
// CHECK:         %[[SCALE_LOG2:.*]] = arith.mulf %[[SCALE]], %{{.*}} : f32
// CHECK:         %[[R1:.*]]:3 = attn.kv_loop %[[UE]] to %[[END]] {{.*}} attributes {masked}
// CHECK:           attn.mma %[[QS]], %[[KS]]
// CHECK:           attn.mask {{.*}} {window_left = -1 : i64, window_right = 0 : i64}
// CHECK:           attn.online_softmax %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SCALE_LOG2]] :
// CHECK:         %[[R2:.*]]:3 = attn.kv_loop %[[UB]] to %[[UE]] iter_args(%[[R1]]#0, %[[R1]]#1, %[[R1]]#2)
// CHECK-NOT:       attn.mask
// CHECK:           attn.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    attn.epilogue %[[R2]]#2, %[[R2]]#0, %[[R2]]#1, %[[OS]], %[[SCALE]]
// CHECK-NOT:     attn.kv_loop
attn.kernel @causal arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !t, !t, !t -> !t, !lse
}

// -----

// A sliding window also masks its left edge: a third, masked loop.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @local
// CHECK:         %[[BEGIN:.*]], %[[UB:.*]], %[[UE:.*]], %[[END:.*]] = attn.kv_bounds
// CHECK:         attn.kv_loop %[[UE]] to %[[END]] {{.*}} attributes {masked}
// CHECK:         attn.kv_loop %[[UB]] to %[[UE]]
// CHECK:         attn.kv_loop %[[BEGIN]] to %[[UB]] {{.*}} attributes {masked}
// CHECK:           attn.mask {{.*}} {window_left = 128 : i64, window_right = 16 : i64}
attn.kernel @local arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse {window_left = 128, window_right = 16} : !t, !t, !t -> !t, !lse
}

// -----

// Two stages and Q in registers: Q moves to registers after K[end-1] is
// issued, then V[end-1] and K[end-2] are prefetched. In the loop, V's next
// copy is issued before Q K[j]^T and K's before P V[j]. The expansion writes
// no wait and no barrier: attn-insert-barriers places them all
// (insert-barriers-pipeline.mlir).
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @two_stages
// CHECK:         %[[KS:.*]] = attn.smem_alloc {name = "K"} : memref<2x64x128xf16, 3>
// CHECK:         %[[VS:.*]] = attn.smem_alloc {name = "V"} : memref<2x64x128xf16, 3>
// CHECK-NOT:     attn.async_wait
// CHECK-NOT:     attn.barrier
// CHECK:         attn.copy_async {{.*}} -> %[[KS]]
// CHECK-NEXT:    %[[QF:.*]] = attn.load_frag
// CHECK:         attn.copy_async {{.*}} -> %[[VS]]
// CHECK:         attn.copy_async {{.*}} -> %[[KS]]
// CHECK:         attn.kv_loop
// CHECK-NEXT:    ^bb0(%[[J:.*]]: index,
// CHECK:           attn.copy_async {{.*}} -> %[[VS]]
// CHECK-NEXT:      attn.mma %[[QF]], %[[KS]][%[[J]]]
// CHECK:           attn.online_softmax
// CHECK:           attn.copy_async {{.*}} -> %[[KS]]
// CHECK-NEXT:      attn.mma %{{.*}}, %[[VS]][%[[J]]]
// CHECK-NOT:     attn.async_wait
// CHECK-NOT:     attn.barrier
attn.kernel @two_stages arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 128, tile_n = 64, stages = 2, warps = 8, q_in_regs = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}
