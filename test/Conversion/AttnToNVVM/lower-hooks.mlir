// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s
// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s --check-prefix=COUNT

// attn.modify_scores (HookLowering.cpp) on a minimal allocated kernel: 64x16
// scores over 4 warps, so 8 scores per thread, each run through the hooks.
// The hooks see the true positions of the scores. The extra arguments are
// a (heads, n) f32 bias table and an i32 scalar:
// the table is parameters 24 (pointer), 25-26 (sizes), 27-28 (strides), the
// scalar parameter 29 (attn.extra_params).
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!bias = memref<?x?xf32, strided<[?, ?]>>

// CHECK-LABEL: llvm.func @hooks(
// CHECK-SAME:    %[[SCALE:[^ :]+]]: f32, %[[BIAS:[^ :]+]]: !llvm.ptr<1>, %[[SIZE0:[^ :]+]]: i64, %[[SIZE1:[^ :]+]]: i64, %[[STRIDE0:[^ :]+]]: i64, %[[STRIDE1:[^ :]+]]: i64, %[[PREFIX:[^ :]+]]: i32, %{{[^ :]+}}: i32)
// CHECK-SAME:    attn.extra_params = array<i64: 24, 29>

// score_mod on the first element, at (row base, column base): the score
// times (scale / 30), one factor for all elements, since the hook's division
// by a constant folds into the softmax scale; tanh on the SFU (afn:
// tanh.approx.f32), and a bias read bias[h, k - q] at ptr + (h * stride0 +
// (k - q) * stride1), each index clamped to [0, size - 1].
// CHECK:       %[[FACTOR:.*]] = llvm.fmul %[[SCALE]], %{{.*}} : f32
// CHECK-NEXT:  %[[SCALED:.*]] = llvm.fmul %{{.*}}, %[[FACTOR]] {fastmathFlags = #llvm.fastmath<contract>} : f32
// CHECK-NEXT:  llvm.intr.tanh(%[[SCALED]]) {fastmathFlags = #llvm.fastmath<afn>} : (f32) -> f32
// CHECK:       %[[REL:.*]] = llvm.sub %[[K:.*]], %[[Q:.*]] : i32
// CHECK:       llvm.intr.smin(%[[SIZE0]], %{{.*}}) : (i64, i64) -> i64
// CHECK:       %[[H_LO:.*]] = llvm.intr.smax(%{{.*}}, %{{.*}}) : (i32, i32) -> i32
// CHECK:       %[[H_IN:.*]] = llvm.intr.smin(%[[H_LO]], %{{.*}}) : (i32, i32) -> i32
// CHECK:       %[[H64:.*]] = llvm.sext %[[H_IN]] : i32 to i64
// CHECK:       llvm.mul %[[H64]], %[[STRIDE0]] : i64
// CHECK:       llvm.intr.smin(%[[SIZE1]], %{{.*}}) : (i64, i64) -> i64
// CHECK:       %[[REL_LO:.*]] = llvm.intr.smax(%[[REL]], %{{.*}}) : (i32, i32) -> i32
// CHECK:       %[[REL_IN:.*]] = llvm.intr.smin(%[[REL_LO]], %{{.*}}) : (i32, i32) -> i32
// CHECK:       %[[REL64:.*]] = llvm.sext %[[REL_IN]] : i32 to i64
// CHECK:       llvm.mul %[[REL64]], %[[STRIDE1]] : i64
// CHECK:       %[[ADDR:.*]] = llvm.getelementptr %[[BIAS]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK:       llvm.load %[[ADDR]] invariant {alignment = 4 : i64} : !llvm.ptr<1> -> f32

// mask_mod: k < prefix_len || k <= q (the scalar is its parameter), then
// -inf where false.
// CHECK:       llvm.icmp "slt" %[[K]], %[[PREFIX]] : i32
// CHECK:       llvm.icmp "sle" %[[K]], %[[Q]] : i32
// CHECK:       %[[KEEP:.*]] = llvm.or
// CHECK:       llvm.select %[[KEEP]], %{{.*}}, %{{.*}} : i1, f32

// The next element, one key further: k - q is the same base plus a
// constant, not a new subtraction of positions.
// CHECK:       llvm.intr.tanh
// CHECK-NOT:   llvm.sub %[[K]], %[[Q]]
// CHECK:       llvm.add %[[REL]], %{{.*}} : i32

// One tanh per score, 8 per thread, and no division left.
// COUNT-NOT:     llvm.fdiv
// COUNT-COUNT-8: llvm.intr.tanh
// COUNT-NOT:     llvm.intr.tanh
attn.kernel @hooks arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 16, stages = 1, warps = 4, q_in_regs = true>) attributes {smem_bytes = 16384 : i64, arg_names = ["bias", "prefix_len"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %bias: !bias, %prefix: i32):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %j = arith.constant 3 : index
  %s = attn.splat {value = 1.000000e+00 : f32} : !attn.frag<64x16xf32>
  %scale = attn.softmax_scale {default_value = 1.250000e-01 : f32} : f32
  %r = attn.modify_scores %s, %m, %j, %b, %h, %sq, %sk, %scale : !attn.frag<64x16xf32>
  score_mod {
  ^bb0(%x: f32, %bi: index, %hi: index, %qi: index, %ki: index):
    %c = arith.constant 30.0 : f32
    %y = arith.divf %x, %c : f32
    %t = math.tanh %y : f32
    %u = arith.mulf %t, %c : f32
    %tab = attn.kernel_arg 0 : !bias
    %d = arith.subi %ki, %qi : index
    %bb = memref.load %tab[%hi, %d] : !bias
    %z = arith.addf %u, %bb : f32
    attn.yield %z : f32
  } mask_mod {
  ^bb0(%bi: index, %hi: index, %qi: index, %ki: index):
    %p = attn.kernel_arg 1 : i32
    %pi = arith.index_cast %p : i32 to index
    %in = arith.cmpi slt, %ki, %pi : index
    %causal = arith.cmpi sle, %ki, %qi : index
    %keep = arith.ori %in, %causal : i1
    attn.yield %keep : i1
  }
}
