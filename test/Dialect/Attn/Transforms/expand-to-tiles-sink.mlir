// RUN: flashtile-opt %s --pass-pipeline='builtin.module(attn.kernel(attn-expand-to-tiles))' | FileCheck %s
// RUN: flashtile-compile %s --emit=nvvm | FileCheck %s --check-prefix=NVVM

// Attention sinks: the attention's sink region (a per-head logit read from
// an extra tensor) goes to the epilogue, its kernel arguments read through
// attn.kernel_arg; the epilogue adds e^(z - m * scale) to each row's sum.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!s = memref<?xf32, strided<[?]>>
// CHECK-LABEL: attn.kernel @sinks
// CHECK:         attn.epilogue {{.*}} sink {
// CHECK-NEXT:    ^bb0(%{{.*}}: index, %[[H:.*]]: index):
// CHECK-NEXT:      %[[SINKS:.*]] = attn.kernel_arg 0 : memref<?xf32, strided<[?]>>
// CHECK-NEXT:      %[[Z:.*]] = memref.load %[[SINKS]][%[[H]]]
// CHECK-NEXT:      attn.yield %[[Z]] : f32

// NVVM-LABEL: llvm.func @sinks(
// The sink is read once, at the epilogue; its exponential joins the sum.
// NVVM:         %[[Z:.*]] = llvm.load %{{.*}} invariant {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// NVVM:         llvm.intr.fma(%{{.*}}, %{{.*}}, %[[Z]])
// NVVM:         llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// NVVM:         llvm.fadd
// NVVM:         llvm.select %{{.*}}, %[[Z]], %{{.*}} : i1, f32
attn.kernel @sinks arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>) attributes {arg_names = ["sinks"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %sinks: !s):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !t, !t, !t -> !t, !lse
  sink {
  ^bb0(%b: index, %h: index):
    %z = memref.load %sinks[%h] : !s
    attn.yield %z : f32
  }
}
