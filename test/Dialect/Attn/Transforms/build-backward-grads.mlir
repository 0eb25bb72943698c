// RUN: flashtile-opt %s -split-input-file -verify-diagnostics "--attn-build-backward=tensor-grads=slopes kv-warps=1" | FileCheck %s

// The gradient of a tensor the score_mod reads: every kernel of the family
// takes `slopes_grad` (f32, role accumulate) after the forward's extra
// arguments, and the main kernel's steps add, per element, dS' * ∂f/∂read
// at the read's indices (dS' = P (dP - D)), 0 where P = 0.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!s = memref<?xf32, strided<[?]>>
// CHECK-LABEL: attn.kernel @alibi_bwd_preprocess
// CHECK-SAME:    arg_names = ["slopes", "slopes_grad"], arg_roles = ["in", "accumulate"]
// CHECK-LABEL: attn.kernel @alibi_bwd_main
// CHECK:       ^bb0({{.*}}, %[[SLOPES:.*]]: memref<?xf32, strided<[?]>>, %[[GRAD:.*]]: memref<?xf32, strided<[?]>>):
// CHECK:         attn.kv_loop
// CHECK:           attn.for_each %[[P:[^,]*]], %[[DP:[^,]*]], %{{.*}} : !attn.frag<64x64xf32>, !attn.frag<64x64xf32>, !attn.frag<64xf32, cols>, f32, !attn.frag<64x64xf32>, index, index, index, index {
// CHECK:           ^bb0(%[[PP:[^:]*]]: f32, %[[DPP:[^:]*]]: f32, %[[DD:[^:]*]]: f32,
// CHECK:             %[[CENTRED:.*]] = arith.subf %[[DPP]], %[[DD]] : f32
// CHECK:             %[[SEED:.*]] = arith.mulf %[[PP]], %[[CENTRED]] : f32
// CHECK:             %[[SL:.*]] = memref.load %[[SLOPES]][%[[H:[a-z0-9_]+]]]
// CHECK:             %[[DIST:.*]] = arith.sitofp
// CHECK:             %[[ADJ:.*]] = arith.mulf %[[SEED]], %[[DIST]] : f32
// CHECK:             %[[DROPPED:.*]] = arith.cmpf oeq, %[[PP]], %[[ZERO:.*]] : f32
// CHECK:             %[[ADD:.*]] = arith.select %[[DROPPED]], %[[ZERO]], %[[ADJ]] : f32
// CHECK:             memref.atomic_rmw addf %[[ADD]], %[[GRAD]][%[[H]]]
// CHECK:             attn.yield
// CHECK:       attn.family @alibi_bwd
attn.kernel @alibi arch(#attn.arch<sm_120>) attributes {arg_names = ["slopes"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %slopes: !s):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %sl = memref.load %slopes[%h] : !s
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i32
    %df = arith.sitofp %di : i32 to f32
    %bias = arith.mulf %sl, %df : f32
    %y = arith.addf %x, %bias : f32
    attn.yield %y : f32
  }
}

// -----

// A tensor only the mask_mod reads has gradient 0 (a mask is piecewise
// constant in it): its slopes_grad is an argument nothing adds to.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!s = memref<?xf32, strided<[?]>>
// CHECK-LABEL: attn.kernel @masked_bwd_main
// CHECK-SAME:    arg_names = ["slopes", "slopes_grad"], arg_roles = ["in", "accumulate"]
// CHECK-NOT:     attn.for_each
// CHECK-LABEL: attn.kernel @masked_bwd_convert
// CHECK:       attn.family @masked_bwd
attn.kernel @masked arch(#attn.arch<sm_120>) attributes {arg_names = ["slopes"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %slopes: !s):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %sl = memref.load %slopes[%h] : !s
    %z = arith.constant 0.0 : f32
    %m = arith.cmpf ogt, %sl, %z : f32
    attn.yield %m : i1
  }
}

// -----

// A hook that reads no tensor: nothing to differentiate.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @plain arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{no gradient for 'slopes': the backward differentiates the float tensors the hooks read, and they read none}}
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}
