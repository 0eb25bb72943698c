// RUN: flashtile-opt %s --split-input-file --convert-attn-to-nvvm | FileCheck %s

// math.powf in a hook (HookEmitter.cpp) has torch.pow's values. An
// integral constant exponent is exact multiplication: (q - k) ** 2 of a
// negative difference is its square, not the NaN of 2^(2 log2 x), which is
// what it lowered to before. One element of a 64x16 score tile stands for
// all 8 a thread holds.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>

// CHECK-LABEL: llvm.func @square(
// CHECK:       %[[REL:.*]] = llvm.sitofp %{{.*}} : i32 to f32
// CHECK:       %[[SQ:.*]] = llvm.fmul %[[REL]], %[[REL]] : f32
// CHECK-NEXT:  llvm.fmul
// CHECK-NEXT:  llvm.fsub %{{.*}}, %[[SQ]]
// CHECK-NOT:   lg2
// CHECK:       llvm.return
attn.kernel @square arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 16, stages = 1, warps = 4, q_in_regs = true>) attributes {smem_bytes = 16384 : i64} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %j = arith.constant 3 : index
  %s = attn.splat {value = 1.000000e+00 : f32} : !attn.frag<64x16xf32>
  %scale = attn.softmax_scale {default_value = 1.250000e-01 : f32} : f32
  %r = attn.modify_scores %s, %m, %j, %b, %h, %sq, %sk, %scale : !attn.frag<64x16xf32>
  score_mod {
  ^bb0(%x: f32, %bi: index, %hi: index, %qi: index, %ki: index):
    %d = arith.subi %qi, %ki : index
    %di = arith.index_cast %d : index to i32
    %df = arith.sitofp %di : i32 to f32
    %two = arith.constant 2.0 : f32
    %p = math.powf %df, %two : f32
    %z = arith.subf %x, %p : f32
    attn.yield %z : f32
  }
}

// -----

// x ** -3: x * x^2 by squaring, then one reciprocal.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>

// CHECK-LABEL: llvm.func @inverse_cube(
// CHECK:       %[[X2:.*]] = llvm.fmul %[[X:.*]], %[[X]] : f32
// CHECK-NEXT:  %[[X3:.*]] = llvm.fmul %[[X]], %[[X2]] : f32
// CHECK-NEXT:  llvm.mlir.constant(1.000000e+00 : f32)
// CHECK-NEXT:  llvm.fdiv %{{.*}}, %[[X3]] : f32
// CHECK-NOT:   lg2
// CHECK:       llvm.return
attn.kernel @inverse_cube arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 16, stages = 1, warps = 4, q_in_regs = true>) attributes {smem_bytes = 16384 : i64} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %j = arith.constant 3 : index
  %s = attn.splat {value = 1.000000e+00 : f32} : !attn.frag<64x16xf32>
  %scale = attn.softmax_scale {default_value = 1.250000e-01 : f32} : f32
  %r = attn.modify_scores %s, %m, %j, %b, %h, %sq, %sk, %scale : !attn.frag<64x16xf32>
  score_mod {
  ^bb0(%x: f32, %bi: index, %hi: index, %qi: index, %ki: index):
    %c = arith.constant -3.0 : f32
    %p = math.powf %x, %c : f32
    attn.yield %p : f32
  }
}

// -----

// A run-time exponent: 2^(y log2 |x|), its sign from y's parity where x < 0,
// NaN for a negative base and a non-integral y, and 1 where y = 0.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>

// CHECK-LABEL: llvm.func @runtime_exponent(
// CHECK-SAME:    %[[Y:[^ :]+]]: f32, %{{[^ :]+}}: i32)
// CHECK:       %[[ABS:.*]] = llvm.intr.fabs(%[[X:.*]]) : (f32) -> f32
// CHECK:       nvvm.lg2.approx{{.*}}%[[ABS]]
// CHECK:       %[[FLOOR:.*]] = llvm.intr.floor(%[[Y]]) : (f32) -> f32
// CHECK:       %[[INTEGRAL:.*]] = llvm.fcmp "oeq" %[[FLOOR]], %[[Y]] : f32
// CHECK:       %[[NEG:.*]] = llvm.fcmp "olt" %[[X]], %{{.*}} : f32
// CHECK:       %[[SIGNED:.*]] = llvm.select %{{.*}} : i1, f32
// CHECK:       %[[OFNEG:.*]] = llvm.select %[[INTEGRAL]], %[[SIGNED]], %{{.*}} : i1, f32
// CHECK:       %[[R:.*]] = llvm.select %[[NEG]], %[[OFNEG]], %{{.*}} : i1, f32
// CHECK:       %[[ZERO:.*]] = llvm.fcmp "oeq" %[[Y]], %{{.*}} : f32
// CHECK:       llvm.select %[[ZERO]], %{{.*}}, %[[R]] : i1, f32
attn.kernel @runtime_exponent arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 16, stages = 1, warps = 4, q_in_regs = true>) attributes {smem_bytes = 16384 : i64, arg_names = ["y"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %y: f32):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %j = arith.constant 3 : index
  %s = attn.splat {value = 1.000000e+00 : f32} : !attn.frag<64x16xf32>
  %scale = attn.softmax_scale {default_value = 1.250000e-01 : f32} : f32
  %r = attn.modify_scores %s, %m, %j, %b, %h, %sq, %sk, %scale : !attn.frag<64x16xf32>
  score_mod {
  ^bb0(%x: f32, %bi: index, %hi: index, %qi: index, %ki: index):
    %yy = attn.kernel_arg 0 : f32
    %p = math.powf %x, %yy : f32
    attn.yield %p : f32
  }
}
