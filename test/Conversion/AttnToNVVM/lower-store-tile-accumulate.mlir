// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s
// RUN: flashtile-opt %s --convert-attn-to-nvvm=isa=sm_90 | FileCheck %s
// RUN: flashtile-opt %s --convert-attn-to-nvvm=isa=sm_80 | FileCheck %s --check-prefix=SCALAR
// RUN: not flashtile-opt %s --convert-attn-to-nvvm=isa=sm_42 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// attn.store_tile with `accumulate` (dQ's fp32 accumulator). On an ISA with
// vector f32 reductions (sm_90 on; sm_120 by default, the kernel's chip),
// each lane's pair of adjacent columns is one predicated
// red.global.add.v2.f32, with no branch per element, once a uniform
// run-time test has shown every pair 8-byte aligned: the first column's
// byte address, 4 x the row stride and 4 x the column extent are all
// multiples of 8. A pair's address is its row's plus an immediate, and
// its column test compares the lane's columns left ($1) with an
// immediate: one address register per row of the lane (2 here), the
// column offsets 0, 8, ..., 56 (0, 32, ..., 224 bytes) written into the
// instruction. The function then needs PTX 8.1. Where the test fails, and
// on an ISA without them (sm_80), one atomic add per element.
// CHECK-LABEL: llvm.func @accumulate(
// CHECK-SAME:  attn.min_ptx_version = 81
// CHECK:       %[[BASE:.*]] = llvm.ptrtoint %{{.*}} : !llvm.ptr<1> to i64
// CHECK:       %[[SEVEN:.*]] = llvm.mlir.constant(7 : i64)
// CHECK-NEXT:  %[[LOW:.*]] = llvm.and %{{.*}}, %[[SEVEN]] : i64
// CHECK-NEXT:  %[[ALIGNED:.*]] = llvm.icmp "eq" %[[LOW]], %{{.*}} : i64
// CHECK-NEXT:  llvm.cond_br %[[ALIGNED]], ^[[PAIRS:.*]], ^[[ELEMENTS:bb[0-9]+]]
// CHECK:       ^[[PAIRS]]:
// 16 m-rows x 64 columns a warp: 2 row halves x 8 n-tiles = 16 pairs.
// CHECK:       setp.gt.s32 q, $1, 0; and.pred p, p, q; @p red.global.add.v2.f32 [$2], {$3, $4}; }", "r,r,l,f,f" %[[ROW0:[0-9]+]], %[[LEFT:[0-9]+]], %[[AT0:[0-9]+]],
// CHECK:       setp.gt.s32 q, $1, 0; and.pred p, p, q; @p red.global.add.v2.f32 [$2], {$3, $4}; }", "r,r,l,f,f" %[[ROW8:[0-9]+]], %[[LEFT]], %[[AT8:[0-9]+]],
// CHECK:       setp.gt.s32 q, $1, 8; and.pred p, p, q; @p red.global.add.v2.f32 [$2+32], {$3, $4}; }", "r,r,l,f,f" %[[ROW0]], %[[LEFT]], %[[AT0]],
// CHECK-COUNT-12: red.global.add.v2.f32 [$2+{{[0-9]+}}]
// CHECK:       setp.gt.s32 q, $1, 56; and.pred p, p, q; @p red.global.add.v2.f32 [$2+224], {$3, $4}; }", "r,r,l,f,f" %[[ROW8]], %[[LEFT]], %[[AT8]],
// CHECK-NOT:   red.global
// CHECK-NOT:   llvm.atomicrmw
// CHECK:       llvm.br
// CHECK:       ^[[ELEMENTS]]:
// CHECK-COUNT-32: llvm.atomicrmw fadd
// CHECK-NOT:   red.global
// CHECK:       llvm.return

// SCALAR-LABEL: llvm.func @accumulate(
// SCALAR-NOT:   attn.min_ptx_version
// SCALAR-NOT:   red.global
// SCALAR-COUNT-32: llvm.atomicrmw fadd
// SCALAR-NOT:   red.global

// UNKNOWN: error: convert-attn-to-nvvm: unknown ISA 'sm_42'; known: sm_75, sm_80

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
attn.kernel @accumulate arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) attributes {smem_bytes = 0 : i64, tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">, #attn.tensor<"k", "in", "seqlen_k", "heads_kv">, #attn.tensor<"v", "in", "seqlen_k", "heads_kv">, #attn.tensor<"o", "in", "seqlen_q", "heads_q">, #attn.tensor<"lse", "in", "seqlen_q", "heads_q">, #attn.tensor<"dq_accum", "accumulate", "seqlen_q", "heads_q">]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: memref<?x?x?xf32>, %acc: !acc):
  %c0 = arith.constant 0 : index
  %s = attn.splat {value = 1.0 : f32} : !attn.frag<64x64xf32>
  attn.store_tile %s -> %acc[%c0, %c0, %c0, %c0] {accumulate} : !attn.frag<64x64xf32> -> !acc
}
