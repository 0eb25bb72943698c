// RUN: flashtile-opt %s | flashtile-opt | FileCheck %s
// Hooks with everything the contract allows round-trip: arith and math ops,
// a load from an extra tensor, an extra scalar, attn.size; and the
// tile-level attn.modify_scores with attn.kernel_arg.

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!bias = memref<?x?xf32, strided<[?, ?]>>
// CHECK-LABEL: attn.kernel @hooks
// CHECK:         score_mod {
// CHECK:           math.tanh
// CHECK:           memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<?x?xf32, strided<[?, ?]>>
// CHECK:         } mask_mod {
// CHECK:           attn.size "seqlen_k" : index
attn.kernel @hooks arch(#attn.arch<sm_120>) attributes {arg_names = ["bias", "prefix"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %bias: !bias, %prefix: i32):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 30.0 : f32
    %x = arith.divf %s, %c : f32
    %t = math.tanh %x : f32
    %y = arith.mulf %t, %c : f32
    %d = arith.subi %j, %i : index
    %bb = memref.load %bias[%h, %d] : !bias
    %z = arith.addf %y, %bb : f32
    attn.yield %z : f32
  } mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %p = arith.index_cast %prefix : i32 to index
    %n = attn.size "seqlen_k" : index
    %lo = arith.cmpi slt, %j, %p : index
    %in = arith.cmpi slt, %j, %n : index
    %keep = arith.andi %lo, %in : i1
    attn.yield %keep : i1
  }
}

// CHECK-LABEL: attn.kernel @tile_level
// CHECK:         attn.modify_scores %{{.*}} : !attn.frag<64x32xf32> score_mod {
// CHECK:           %[[BIAS:.*]] = attn.kernel_arg 0 : memref<?x?xf32, strided<[?, ?]>>
// CHECK:           memref.load %[[BIAS]]
attn.kernel @tile_level arch(#attn.arch<sm_120>) attributes {arg_names = ["bias"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %bias: !bias):
  %c = arith.constant 0 : index
  %f = arith.constant 1.0 : f32
  %s = attn.splat {value = 0.0 : f32} : !attn.frag<64x32xf32>
  %r = attn.modify_scores %s, %c, %c, %c, %c, %c, %c, %f : !attn.frag<64x32xf32>
  score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %t = attn.kernel_arg 0 : !bias
    %bb = memref.load %t[%h, %j] : !bias
    %y = arith.addf %x, %bb : f32
    attn.yield %y : f32
  }
}
