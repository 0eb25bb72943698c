// RUN: flashtile-opt %s --pass-pipeline='builtin.module(attn.kernel(attn-expand-to-tiles,attn-pipeline-copies,attn-allocate-shared-memory,attn-insert-barriers),convert-attn-to-nvvm)' | FileCheck %s
// RUN: flashtile-opt %s --pass-pipeline='builtin.module(attn.kernel(attn-expand-to-tiles,attn-pipeline-copies,attn-allocate-shared-memory,attn-insert-barriers),convert-attn-to-nvvm)' | FileCheck %s --check-prefix=COUNT

// A bf16 d = 64 kernel, 64x32 tiles, 4 warps, Q in registers: every tile op
// becomes NVVM, with bf16 mma through i32 operands and explicit PTX types.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>

// CHECK:       llvm.mlir.global external @__flashtile_smem() {addr_space = 3 : i32, alignment = 128 : i64} : !llvm.array<0 x i8>
// CHECK-LABEL: llvm.func @bf16_d64(
// CHECK-SAME:    %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>,
// CHECK-SAME:    %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32,
// CHECK-SAME:    %{{.*}}: f32, %{{.*}}: i32)
// CHECK-SAME:    nvvm.kernel
// CHECK-SAME:    nvvm.maxntid = array<i32: 128, 1, 1>
// CHECK:         nvvm.read.ptx.sreg.ctaid.x
// CHECK:         nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = cg, %{{.*}} : !llvm.ptr<3>, !llvm.ptr<1>, i32
// CHECK:         nvvm.cp.async.commit.group
// CHECK:         nvvm.cp.async.wait.group 1
// CHECK-NEXT:    nvvm.barrier0
// CHECK:         nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
// CHECK:         nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK:         nvvm.shfl.sync  bfly
// CHECK:         llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK:         llvm.fptrunc %{{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK:         nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// CHECK:         llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xi32>
// CHECK:         llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK:         llvm.return
// CHECK-NOT:     attn.

// Two KV loops (masked, unmasked) of 16 QK + 16 PV mmas each: 64 x 32 keys
// is 1 m-tile x 4 n-tiles x 4 k-tiles for QK, 1 x 8 x 2 for PV.
// COUNT-COUNT-64: nvvm.mma.sync
// COUNT-NOT:      nvvm.mma.sync
attn.kernel @bf16_d64 arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}
