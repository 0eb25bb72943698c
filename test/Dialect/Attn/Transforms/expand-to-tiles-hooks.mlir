// RUN: flashtile-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-expand-to-tiles))' | FileCheck %s

// A score_mod: every KV loop applies it (attn.modify_scores) right after
// the QK^T mma and before the window mask, so a softcap cannot turn a masked
// -inf back into a finite score. The hook sees scaled scores, so the
// softmax and the epilogue work with scale 1: the online softmax's exponent
// factor is log2(e) alone. Kernel arguments the hook reads become
// attn.kernel_arg inside the (isolated) region.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!s = memref<?xf32, strided<[?]>>
// CHECK-LABEL: attn.kernel @alibi
// CHECK:         %[[M:.*]], %[[H:.*]], %[[HKV:.*]], %[[B:.*]], %[[SQ:.*]], %[[SK:.*]] = attn.block_context
// CHECK:         %[[SCALE:.*]] = attn.softmax_scale
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         %[[C:.*]] = arith.mulf %[[ONE]], %{{.*}} : f32
// CHECK:         attn.kv_loop {{.*}} attributes {masked}
// CHECK:         ^bb0(%[[J:.*]]: index,
// CHECK:           %[[S:.*]] = attn.mma
// CHECK-NEXT:      %[[MOD:.*]] = attn.modify_scores %[[S]], %[[M]], %[[J]], %[[B]], %[[H]], %[[SQ]], %[[SK]], %[[SCALE]] : !attn.frag<64x32xf32> score_mod {
// CHECK-NEXT:      ^bb0(%{{.*}}: f32, %{{.*}}: index, %[[HH:.*]]: index, %{{.*}}: index, %{{.*}}: index):
// CHECK-NEXT:        %[[SLOPES:.*]] = attn.kernel_arg 0 : memref<?xf32, strided<[?]>>
// CHECK:             memref.load %[[SLOPES]][%[[HH]]]
// CHECK:           %[[MASKED:.*]] = attn.mask %[[MOD]]
// CHECK:           attn.online_softmax %[[MASKED]], %{{.*}}, %{{.*}}, %{{.*}}, %[[C]]
// CHECK:         attn.kv_loop
// CHECK:           attn.modify_scores
// CHECK-NOT:       attn.mask
// CHECK:         attn.epilogue {{.*}}, %[[ONE]] ->
attn.kernel @alibi arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>) attributes {arg_names = ["slopes"]} {
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

// A mask_mod alone: the scores stay unscaled, so the softmax keeps the
// run-time scale (scale * log2(e)) and the epilogue the scale itself.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @prefix
// CHECK:         %[[SCALE:.*]] = attn.softmax_scale
// CHECK:         %[[C:.*]] = arith.mulf %[[SCALE]], %{{.*}} : f32
// CHECK:         attn.modify_scores {{.*}} mask_mod {
// CHECK:           attn.kernel_arg 0 : i32
// CHECK:         attn.online_softmax {{.*}}, %[[C]] :
// CHECK:         attn.epilogue {{.*}}, %[[SCALE]] ->
attn.kernel @prefix arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>) attributes {arg_names = ["prefix_len"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %p: i32):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %pi = arith.index_cast %p : i32 to index
    %keep = arith.cmpi slt, %j, %pi : index
    attn.yield %keep : i1
  }
}
