// RUN: flashtile-opt %s --split-input-file --convert-attn-to-nvvm | FileCheck %s
// RUN: flashtile-opt %s --split-input-file --convert-attn-to-nvvm | FileCheck %s --check-prefix=COUNT
// RUN: flashtile-opt %s --split-input-file --convert-attn-to-nvvm | FileCheck %s --check-prefix=MMAS

// The attn.mma forms the forward does not use, as the backward will
// (MmaLowering.cpp): A read transposed from shared memory (dK += dS^T Q
// reads dS this way), B read as [K][N], and an f16 accumulator.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>

// D = K^T V (the shape of dV += P^T dO): A = K^T from K's buffer ([K][M]
// = [key][dim]) by ldmatrix.x4.trans, at K's slot; B = V as [K][N], also
// .trans. M = N = 64, K = 16 (the keys), 4 row warps: per warp one m-tile,
// 8 n-tiles, one k-step: one load of A, 4 of B (two n-tiles each), 8 mmas.
// CHECK-LABEL: llvm.func @transposed_a(
// CHECK:       %[[A:.*]] = nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// CHECK-NEXT:  %[[A0:.*]] = llvm.extractvalue %[[A]][0]
// CHECK:       nvvm.ldmatrix %{{.*}}layout = #nvvm.mma_layout<col>
// CHECK:       nvvm.mma.sync A[%[[A0]], {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK:       llvm.return
// COUNT-LABEL:   llvm.func @transposed_a(
// COUNT-COUNT-5: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>
// COUNT-NOT:     nvvm.ldmatrix
// COUNT-LABEL:   llvm.func @f16_accumulator(
// MMAS-LABEL:    llvm.func @transposed_a(
// MMAS-COUNT-8:  nvvm.mma.sync
// MMAS-NOT:      nvvm.mma.sync
// MMAS-LABEL:    llvm.func @f16_accumulator(
attn.kernel @transposed_a arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 16, stages = 1, warps = 4, q_in_regs = false>) attributes {smem_bytes = 4096 : i64} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %ks = attn.smem_alloc {name = "K", offset = 0 : i64} : memref<1x16x64xbf16, 3>
  %vs = attn.smem_alloc {name = "V", offset = 2048 : i64} : memref<1x16x64xbf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %j = arith.constant 0 : index
  attn.copy_async %k[%b, %j, %hkv] -> %ks : !t -> memref<1x16x64xbf16, 3>
  attn.copy_async %v[%b, %j, %hkv] -> %vs : !t -> memref<1x16x64xbf16, 3>
  attn.async_wait {pending = 0 : i64}
  attn.barrier
  %d = attn.mma %ks[%j], %vs[%j] {transpose_a} : memref<1x16x64xbf16, 3>, memref<1x16x64xbf16, 3> -> !attn.frag<64x64xf32>
}

// -----

// S = Q K^T into an f16 accumulator (mma.sync.m16n8k16 f16.f16.f16.f16):
// C is two vector<2xf16> per tile, starting at 0 (integer 0 is +0.0 in
// both halves).
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: llvm.func @f16_accumulator(
// CHECK:       %[[D:.*]] = nvvm.mma.sync A[{{.*}}]  B[{{.*}}]  C[%{{[0-9]+}}, %{{[0-9]+}}]  {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, vector<2xf16>) -> !llvm.struct<(vector<2xf16>, vector<2xf16>)>
// CHECK-NEXT:  %[[D0:.*]] = llvm.extractvalue %[[D]][0]
// CHECK-NEXT:  llvm.bitcast %[[D0]] : vector<2xf16> to i32
// CHECK-COUNT-7: nvvm.mma.sync {{.*}}-> !llvm.struct<(vector<2xf16>, vector<2xf16>)>
// CHECK-NOT:   nvvm.mma.sync
attn.kernel @f16_accumulator arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 16, stages = 1, warps = 4, q_in_regs = false>) attributes {smem_bytes = 10240 : i64} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x64x64xf16, 3>
  %ks = attn.smem_alloc {name = "K", offset = 8192 : i64} : memref<1x16x64xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %j = arith.constant 0 : index
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xf16, 3>
  attn.copy_async %k[%b, %j, %hkv] -> %ks : !t -> memref<1x16x64xf16, 3>
  attn.async_wait {pending = 0 : i64}
  attn.barrier
  %s = attn.mma %qs, %ks[%j] {transpose_b} : memref<1x64x64xf16, 3>, memref<1x16x64xf16, 3> -> !attn.frag<64x16xf16, acc>
}
