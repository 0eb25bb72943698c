// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s
// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s --check-prefix=COUNT
// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s --check-prefix=MMAS

// attn.mma (MmaLowering.cpp) as S = Q K^T and acc + P V on a minimal allocated
// kernel: bf16, d = 64, 64x16 tiles, 4 warps (one m-tile per warp), Q in
// shared memory. P is a splat: its ldmatrix path is attn.load_frag's
// (lower-memory.mlir).
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>

// S = Q K^T, k-step 0: Q's A fragment by ldmatrix.x4 without .trans, then
// one ldmatrix.x4 of K gives the B fragments (b0, b1) of n-tiles 0 and 1.
// bf16 goes to mma.sync as i32 with explicit PTX types; C starts at 0.
// CHECK-LABEL: llvm.func @mma(
// CHECK:       %[[ZERO:.*]] = llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK:       %[[QA:.*]] = nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
// CHECK-NEXT:  %[[A0:.*]] = llvm.extractvalue %[[QA]][0]
// CHECK-NEXT:  %[[A1:.*]] = llvm.extractvalue %[[QA]][1]
// CHECK-NEXT:  %[[A2:.*]] = llvm.extractvalue %[[QA]][2]
// CHECK-NEXT:  %[[A3:.*]] = llvm.extractvalue %[[QA]][3]
// CHECK:       %[[KB:.*]] = nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// CHECK-NEXT:  %[[B0:.*]] = llvm.extractvalue %[[KB]][0]
// CHECK-NEXT:  %[[B1:.*]] = llvm.extractvalue %[[KB]][1]
// CHECK-NEXT:  %[[B2:.*]] = llvm.extractvalue %[[KB]][2]
// CHECK-NEXT:  %[[B3:.*]] = llvm.extractvalue %[[KB]][3]
// CHECK-NEXT:  %[[S0:.*]] = nvvm.mma.sync A[%[[A0]], %[[A1]], %[[A2]], %[[A3]]]  B[%[[B0]], %[[B1]]]  C[%[[ZERO]], %[[ZERO]], %[[ZERO]], %[[ZERO]]]  {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT:  %[[D0:.*]] = llvm.extractvalue %[[S0]][0]
// CHECK-NEXT:  %[[D1:.*]] = llvm.extractvalue %[[S0]][1]
// CHECK-NEXT:  %[[D2:.*]] = llvm.extractvalue %[[S0]][2]
// CHECK-NEXT:  %[[D3:.*]] = llvm.extractvalue %[[S0]][3]
// CHECK-NEXT:  %[[S1:.*]] = nvvm.mma.sync A[%[[A0]], %[[A1]], %[[A2]], %[[A3]]]  B[%[[B2]], %[[B3]]]  C[%[[ZERO]], %[[ZERO]], %[[ZERO]], %[[ZERO]]]
// k-step 1 accumulates onto k-step 0's n-tile 0.
// CHECK:       %[[QA1:.*]] = nvvm.ldmatrix
// CHECK-NEXT:  %[[A10:.*]] = llvm.extractvalue %[[QA1]][0]
// CHECK:       nvvm.mma.sync A[%[[A10]], %{{.*}}, %{{.*}}, %{{.*}}]  B[%{{.*}}, %{{.*}}]  C[%[[D0]], %[[D1]], %[[D2]], %[[D3]]]

// acc += P V: V's B fragments by ldmatrix.x4 .trans (col layout); C is the
// splat accumulator.
// CHECK:       %[[VB:.*]] = nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
// CHECK-NEXT:  %[[V0:.*]] = llvm.extractvalue %[[VB]][0]
// CHECK-NEXT:  %[[V1:.*]] = llvm.extractvalue %[[VB]][1]
// CHECK-NEXT:  %[[V2:.*]] = llvm.extractvalue %[[VB]][2]
// CHECK-NEXT:  %[[V3:.*]] = llvm.extractvalue %[[VB]][3]
// CHECK-NEXT:  nvvm.mma.sync A[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}]  B[%[[V0]], %[[V1]]]  C[%{{.*}}] {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK-COUNT-4: llvm.extractvalue
// CHECK-NEXT:  nvvm.mma.sync A[%{{.*}}]  B[%[[V2]], %[[V3]]]
// CHECK:       llvm.return

// QK: 4 k-steps x (1 ldmatrix of Q + 1 of K, 2 mmas); PV: 1 k-step x 4
// dim-tile pairs x (1 ldmatrix .trans, 2 mmas).
// COUNT-COUNT-8: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<row>
// COUNT-NOT:     layout = #nvvm.mma_layout<row>, num = 4
// COUNT-COUNT-4: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>
// COUNT-NOT:     nvvm.ldmatrix
// MMAS-COUNT-16: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>
// MMAS-NOT:      nvvm.mma.sync
attn.kernel @mma arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 16, stages = 1, warps = 4, q_in_regs = false>) attributes {smem_bytes = 16384 : i64} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x64x64xbf16, 3>
  %ks = attn.smem_alloc {name = "K", offset = 8192 : i64} : memref<1x16x64xbf16, 3>
  %vs = attn.smem_alloc {name = "V", offset = 10240 : i64} : memref<1x16x64xbf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %j = arith.constant 0 : index
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xbf16, 3>
  attn.copy_async %k[%b, %j, %hkv] -> %ks : !t -> memref<1x16x64xbf16, 3>
  attn.copy_async %v[%b, %j, %hkv] -> %vs : !t -> memref<1x16x64xbf16, 3>
  attn.async_wait {pending = 0 : i64}
  attn.barrier
  %s = attn.mma %qs, %ks[%j] {transpose_b} : memref<1x64x64xbf16, 3>, memref<1x16x64xbf16, 3> -> !attn.frag<64x16xf32>
  %p = attn.splat {value = 1.0 : f32} : !attn.frag<64x16xbf16>
  %acc = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<64x64xf32>
  %acc2 = attn.mma %p, %vs[%j], %acc : !attn.frag<64x16xbf16>, memref<1x16x64xbf16, 3>, !attn.frag<64x64xf32> -> !attn.frag<64x64xf32>
}
