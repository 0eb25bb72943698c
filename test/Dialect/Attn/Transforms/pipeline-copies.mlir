// RUN: flashtile-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-pipeline-copies))' | FileCheck %s
// RUN: flashtile-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-pipeline-copies{remarks=true}))' \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// The user's form: each KV tile copied where it is used, no prologue. With
// one slot each, K goes one step ahead, right before P V's read of V (the
// barrier that read needs also orders K's refill); V goes at the top of the
// step, overlapping S = Q K^T. The two loops are one chain (their bounds
// meet), so only the first gets a prologue: K[end-1], right after Q's copy
// so that it overlaps Q's wait.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @one_slot
// CHECK:         attn.copy_async %{{.*}} -> %[[QS:.*]] :
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[E1:.*]] = arith.subi %[[END:.*]], %[[C1]] : index
// CHECK-NEXT:    attn.copy_async %{{.*}}[%{{.*}}, %[[E1]], %{{.*}}] -> %[[KS:.*]] :
// CHECK-NEXT:    attn.load_frag %[[QS]]
// CHECK-NOT:     attn.copy_async
// CHECK:         attn.kv_loop %[[MID:.*]] to %[[END]]
// CHECK-NEXT:    ^bb0(%[[J:.*]]: index, %{{.*}}):
// CHECK-NEXT:      attn.copy_async %{{.*}}[%{{.*}}, %[[J]], %{{.*}}] -> %[[VS:.*]] :
// CHECK-NEXT:      attn.mma %{{.*}}, %[[KS]][%[[J]]]
// CHECK-NEXT:      attn.convert
// CHECK-NEXT:      %[[C:.*]] = arith.constant 1 : index
// CHECK-NEXT:      %[[JM1:.*]] = arith.subi %[[J]], %[[C]] : index
// CHECK-NEXT:      attn.copy_async %{{.*}}[%{{.*}}, %[[JM1]], %{{.*}}] -> %[[KS]] :
// CHECK-NEXT:      attn.mma %{{.*}}, %[[VS]][%[[J]]]
// CHECK:         attn.kv_loop %{{.*}} to %[[MID]]
// CHECK-NEXT:    ^bb0(%[[J2:.*]]: index, %{{.*}}):
// CHECK-NEXT:      attn.copy_async %{{.*}}[%{{.*}}, %[[J2]], %{{.*}}] -> %[[VS]] :
// CHECK-NEXT:      attn.mma
// CHECK-NEXT:      attn.convert
// CHECK-NEXT:      arith.constant 1
// CHECK-NEXT:      arith.subi %[[J2]]
// CHECK-NEXT:      attn.copy_async %{{.*}} -> %[[KS]] :
// CHECK-NEXT:      attn.mma
// REMARK: remark: copy of K issued 1 step ahead, after its last read
// REMARK: remark: copy of V issued 0 steps ahead, at the top of the step
attn.kernel @one_slot arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x64xf16, 3>
  %ks = attn.smem_alloc {name = "K"} : memref<1x64x64xf16, 3>
  %vs = attn.smem_alloc {name = "V"} : memref<1x64x64xf16, 3>
  %os = attn.smem_alloc {name = "O"} : memref<1x64x64xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %begin, %ub, %ue, %end = attn.kv_bounds %m, %sq, %sk {tile_m = 64 : i64, tile_n = 64 : i64, window_left = -1 : i64, window_right = 0 : i64}
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xf16, 3>
  %qf = attn.load_frag %qs : memref<1x64x64xf16, 3> -> !attn.frag<64x64xf16>
  %zero = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf32>
  %a1 = attn.kv_loop %ue to %end iter_args(%zero) : !attn.frag<64x64xf32> -> !attn.frag<64x64xf32> {
  ^bb0(%j: index, %acc: !attn.frag<64x64xf32>):
    attn.copy_async %k[%b, %j, %hkv] -> %ks : !t -> memref<1x64x64xf16, 3>
    %s = attn.mma %qf, %ks[%j] {transpose_b} : !attn.frag<64x64xf16>, memref<1x64x64xf16, 3> -> !attn.frag<64x64xf32>
    %p = attn.convert %s : !attn.frag<64x64xf32> -> !attn.frag<64x64xf16>
    attn.copy_async %v[%b, %j, %hkv] -> %vs : !t -> memref<1x64x64xf16, 3>
    %n = attn.mma %p, %vs[%j], %acc : !attn.frag<64x64xf16>, memref<1x64x64xf16, 3>, !attn.frag<64x64xf32> -> !attn.frag<64x64xf32>
    attn.yield %n : !attn.frag<64x64xf32>
  }
  %a2 = attn.kv_loop %ub to %ue iter_args(%a1) : !attn.frag<64x64xf32> -> !attn.frag<64x64xf32> {
  ^bb0(%j: index, %acc: !attn.frag<64x64xf32>):
    attn.copy_async %k[%b, %j, %hkv] -> %ks : !t -> memref<1x64x64xf16, 3>
    %s = attn.mma %qf, %ks[%j] {transpose_b} : !attn.frag<64x64xf16>, memref<1x64x64xf16, 3> -> !attn.frag<64x64xf32>
    %p = attn.convert %s : !attn.frag<64x64xf32> -> !attn.frag<64x64xf16>
    attn.copy_async %v[%b, %j, %hkv] -> %vs : !t -> memref<1x64x64xf16, 3>
    %n = attn.mma %p, %vs[%j], %acc : !attn.frag<64x64xf16>, memref<1x64x64xf16, 3>, !attn.frag<64x64xf32> -> !attn.frag<64x64xf32>
    attn.yield %n : !attn.frag<64x64xf32>
  }
  attn.store %a2, %os -> %o[%b, %m, %h], %lse : !attn.frag<64x64xf32>, memref<1x64x64xf16, 3> -> !t, !lse
}

// -----

// Two slots: K goes two steps ahead (after its read, into the slot it just
// read) and V one step ahead at the top of the step (into the slot the step
// before read). The prologue copies the first steps' tiles in the order
// they are read: K[end-1] after Q's copy, then V[end-1], K[end-2] after Q's
// last read, so that V may still take Q's bytes.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @two_slots
// CHECK:         attn.copy_async %{{.*}} -> %[[QS:.*]] :
// CHECK-NEXT:    arith.constant 1
// CHECK-NEXT:    arith.subi
// CHECK-NEXT:    attn.copy_async %[[K:[a-z0-9_]+]][{{.*}}] -> %[[KS:.*]] :
// CHECK-NEXT:    attn.load_frag %[[QS]]
// CHECK-NEXT:    arith.constant 1
// CHECK-NEXT:    arith.subi
// CHECK-NEXT:    attn.copy_async %[[V:[a-z0-9_]+]][{{.*}}] -> %[[VS:.*]] :
// CHECK-NEXT:    %[[C2:.*]] = arith.constant 2
// CHECK-NEXT:    %[[E2:.*]] = arith.subi %{{.*}}, %[[C2]]
// CHECK-NEXT:    attn.copy_async %[[K]][%{{.*}}, %[[E2]], %{{.*}}] -> %[[KS]] :
// CHECK:         attn.kv_loop
// CHECK-NEXT:    ^bb0(%[[J:.*]]: index, %{{.*}}):
// CHECK-NEXT:      arith.constant 1
// CHECK-NEXT:      arith.subi %[[J]]
// CHECK-NEXT:      attn.copy_async %[[V]]
// CHECK-NEXT:      attn.mma
// CHECK-NEXT:      attn.convert
// CHECK-NEXT:      arith.constant 2
// CHECK-NEXT:      arith.subi %[[J]]
// CHECK-NEXT:      attn.copy_async %[[K]]
// CHECK-NEXT:      attn.mma
// REMARK: remark: copy of K issued 2 steps ahead, after its last read
// REMARK: remark: copy of V issued 1 step ahead, at the top of the step
attn.kernel @two_slots arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 2, warps = 4, q_in_regs = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x64xf16, 3>
  %ks = attn.smem_alloc {name = "K"} : memref<2x64x64xf16, 3>
  %vs = attn.smem_alloc {name = "V"} : memref<2x64x64xf16, 3>
  %os = attn.smem_alloc {name = "O"} : memref<1x64x64xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %begin, %ub, %ue, %end = attn.kv_bounds %m, %sq, %sk {tile_m = 64 : i64, tile_n = 64 : i64, window_left = -1 : i64, window_right = -1 : i64}
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xf16, 3>
  %qf = attn.load_frag %qs : memref<1x64x64xf16, 3> -> !attn.frag<64x64xf16>
  %zero = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf32>
  %a = attn.kv_loop %begin to %end iter_args(%zero) : !attn.frag<64x64xf32> -> !attn.frag<64x64xf32> {
  ^bb0(%j: index, %acc: !attn.frag<64x64xf32>):
    attn.copy_async %k[%b, %j, %hkv] -> %ks : !t -> memref<2x64x64xf16, 3>
    %s = attn.mma %qf, %ks[%j] {transpose_b} : !attn.frag<64x64xf16>, memref<2x64x64xf16, 3> -> !attn.frag<64x64xf32>
    %p = attn.convert %s : !attn.frag<64x64xf32> -> !attn.frag<64x64xf16>
    attn.copy_async %v[%b, %j, %hkv] -> %vs : !t -> memref<2x64x64xf16, 3>
    %n = attn.mma %p, %vs[%j], %acc : !attn.frag<64x64xf16>, memref<2x64x64xf16, 3>, !attn.frag<64x64xf32> -> !attn.frag<64x64xf32>
    attn.yield %n : !attn.frag<64x64xf32>
  }
  attn.store %a, %os -> %o[%b, %m, %h], %lse : !attn.frag<64x64xf32>, memref<1x64x64xf16, 3> -> !t, !lse
}

// -----

// Copies the pass does not recognise stay where the program put them: an
// explicit prefetch (K[j-1], with its own prologue), and a buffer read
// before the step copies it (V). Loops whose bounds do not meet are
// separate chains; neither has a copy to pipeline here.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @left_alone
// CHECK:         attn.load_frag
// CHECK-NEXT:    attn.splat
// CHECK-NEXT:    attn.kv_loop
// CHECK-NEXT:    ^bb0(%[[J:.*]]: index, %{{.*}}):
// CHECK-NEXT:      attn.mma
// CHECK-NEXT:      attn.convert
// CHECK-NEXT:      attn.mma
// CHECK-NEXT:      attn.copy_async %{{.*}}[%{{.*}}, %[[J]], %{{.*}}]
// CHECK-NEXT:      arith.constant 1
// CHECK-NEXT:      arith.subi %[[J]]
// CHECK-NEXT:      attn.copy_async
// CHECK-NEXT:      attn.yield
// REMARK-NOT: remark
attn.kernel @left_alone arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x64xf16, 3>
  %ks = attn.smem_alloc {name = "K"} : memref<1x64x64xf16, 3>
  %vs = attn.smem_alloc {name = "V"} : memref<1x64x64xf16, 3>
  %os = attn.smem_alloc {name = "O"} : memref<1x64x64xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %begin, %ub, %ue, %end = attn.kv_bounds %m, %sq, %sk {tile_m = 64 : i64, tile_n = 64 : i64, window_left = -1 : i64, window_right = -1 : i64}
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xf16, 3>
  %c1 = arith.constant 1 : index
  %last = arith.subi %end, %c1 : index
  attn.copy_async %k[%b, %last, %hkv] -> %ks : !t -> memref<1x64x64xf16, 3>
  attn.copy_async %v[%b, %last, %hkv] -> %vs : !t -> memref<1x64x64xf16, 3>
  %qf = attn.load_frag %qs : memref<1x64x64xf16, 3> -> !attn.frag<64x64xf16>
  %zero = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf32>
  %a = attn.kv_loop %begin to %end iter_args(%zero) : !attn.frag<64x64xf32> -> !attn.frag<64x64xf32> {
  ^bb0(%j: index, %acc: !attn.frag<64x64xf32>):
    %s = attn.mma %qf, %ks[%j] {transpose_b} : !attn.frag<64x64xf16>, memref<1x64x64xf16, 3> -> !attn.frag<64x64xf32>
    %p = attn.convert %s : !attn.frag<64x64xf32> -> !attn.frag<64x64xf16>
    %n = attn.mma %p, %vs[%j], %acc : !attn.frag<64x64xf16>, memref<1x64x64xf16, 3>, !attn.frag<64x64xf32> -> !attn.frag<64x64xf32>
    attn.copy_async %v[%b, %j, %hkv] -> %vs : !t -> memref<1x64x64xf16, 3>
    %one = arith.constant 1 : index
    %next = arith.subi %j, %one : index
    attn.copy_async %k[%b, %next, %hkv] -> %ks : !t -> memref<1x64x64xf16, 3>
    attn.yield %n : !attn.frag<64x64xf32>
  }
  attn.store %a, %os -> %o[%b, %m, %h], %lse : !attn.frag<64x64xf32>, memref<1x64x64xf16, 3> -> !t, !lse
}
