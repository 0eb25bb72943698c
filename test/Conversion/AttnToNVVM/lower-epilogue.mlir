// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s
// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s --check-prefix=COUNT

// attn.epilogue (EpilogueLowering.cpp) on a minimal allocated kernel: bf16
// O of 64 x 64 over 4 warps (128 threads), staged in shared memory.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>

// CHECK-LABEL: llvm.func @epilogue(
// CHECK-SAME:    %[[SCALE:[^ :]+]]: f32, %{{[^ :]+}}: i32)
// CHECK:       %[[STAGE:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK-NEXT:  %[[M_BLOCK:.*]] = nvvm.read.ptx.sreg.ctaid.x : i32

// Row 0: the row sum over the quad (shfl.sync.bfly 1, 2); 1 / l and the
// LSE max * scale + ln(2) * log2(l), both guarded for an empty row.
// CHECK:       %[[MAX:.*]] = llvm.extractvalue %{{.*}}[0] : !llvm.array<2 x f32>
// CHECK-NEXT:  llvm.extractvalue %{{.*}}[1] : !llvm.array<2 x f32>
// CHECK-NEXT:  %[[SUM:.*]] = llvm.extractvalue %{{.*}}[0] : !llvm.array<2 x f32>
// CHECK:       %[[OTHER1:.*]] = nvvm.shfl.sync bfly %{{.*}}, %[[SUM]], %{{.*}}, %{{.*}} : f32 -> f32
// CHECK-NEXT:  %[[SUM1:.*]] = llvm.fadd %[[SUM]], %[[OTHER1]] : f32
// CHECK:       %[[OTHER2:.*]] = nvvm.shfl.sync bfly %{{.*}}, %[[SUM1]], %{{.*}}, %{{.*}} : f32 -> f32
// CHECK-NEXT:  %[[L:.*]] = llvm.fadd %[[SUM1]], %[[OTHER2]] : f32
// CHECK:       %[[EMPTY:.*]] = llvm.fcmp "oeq" %[[L]], %{{.*}} : f32
// CHECK:       %[[RCP:.*]] = llvm.call_intrinsic "llvm.nvvm.rcp.approx.ftz.f"(%[[L]]) : (f32) -> f32
// CHECK-NEXT:  %[[INV:.*]] = llvm.select %[[EMPTY]], %{{.*}}, %[[RCP]] : i1, f32
// CHECK-NEXT:  %[[LN2:.*]] = llvm.mlir.constant(0.693147182 : f32) : f32
// CHECK-NEXT:  %[[LOG2:.*]] = llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"(%[[L]]) : (f32) -> f32
// CHECK-NEXT:  %[[LN:.*]] = llvm.fmul %[[LOG2]], %[[LN2]] : f32
// CHECK-NEXT:  %[[LSE_VALUE:.*]] = llvm.intr.fma(%[[MAX]], %[[SCALE]], %[[LN]]) : (f32, f32, f32) -> f32
// CHECK-NEXT:  %[[LSE:.*]] = llvm.select %[[EMPTY]], %{{.*}}, %[[LSE_VALUE]] : i1, f32

// O = acc / l, two columns packed as bf16 into one 4-byte shared store.
// CHECK-NEXT:  %[[O0:.*]] = llvm.fmul %{{.*}}, %[[INV]] : f32
// CHECK-NEXT:  %[[O1:.*]] = llvm.fmul %{{.*}}, %[[INV]] : f32
// CHECK:       %[[V0:.*]] = llvm.insertelement %[[O0]], %{{.*}} : vector<2xf32>
// CHECK:       %[[V1:.*]] = llvm.insertelement %[[O1]], %[[V0]][%{{.*}} : i32] : vector<2xf32>
// CHECK-NEXT:  %[[PAIR:.*]] = llvm.fptrunc %[[V1]] : vector<2xf32> to vector<2xbf16>
// CHECK-NEXT:  %[[PACKED:.*]] = llvm.bitcast %[[PAIR]] : vector<2xbf16> to i32
// CHECK-NEXT:  llvm.store %[[PACKED]], %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<3>

// Every warp's rows are staged before any thread reads them back.
// CHECK:       nvvm.barrier0
// CHECK-NEXT:  %[[O_PTR:.*]] = llvm.extractvalue %[[O_DESC:.*]][1]
// CHECK-NEXT:  %[[SEQLEN_Q64:.*]] = llvm.extractvalue %[[O_DESC]][3, 1]
// CHECK-NEXT:  %[[SEQLEN_Q:.*]] = llvm.trunc %[[SEQLEN_Q64]] : i64 to i32

// Whole rows out: 16-byte loads from the stage and 16-byte global stores,
// skipped past seqlen_q.
// CHECK:       %[[FIRST_ROW:.*]] = llvm.mul %[[M_BLOCK]], %{{.*}} : i32
// CHECK:       %[[ROW:.*]] = llvm.add %[[FIRST_ROW]], %{{.*}} : i32
// CHECK-NEXT:  %[[IN_RANGE:.*]] = llvm.icmp "slt" %[[ROW]], %[[SEQLEN_Q]] : i32
// CHECK-NEXT:  llvm.cond_br %[[IN_RANGE]], ^[[STORE:.*]], ^[[NEXT:.*]]
// CHECK-NEXT:  ^[[STORE]]:
// CHECK-NEXT:  %[[FROM:.*]] = llvm.getelementptr %[[STAGE]][%{{.*}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK-NEXT:  %[[CHUNK:.*]] = llvm.load %[[FROM]] {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xi32>
// CHECK:       %[[TO:.*]] = llvm.getelementptr %[[O_PTR]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK-NEXT:  llvm.store %[[CHUNK]], %[[TO]] {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
// CHECK-NEXT:  llvm.br ^[[NEXT]]
// CHECK-NEXT:  ^[[NEXT]]:

// LSE, by the first thread of each quad, for rows below seqlen_q.
// CHECK:       %[[LSE_PTR:.*]] = llvm.extractvalue %{{.*}}[1] : !llvm.struct<(ptr<1>, ptr<1>, i64, array<3 x i64>, array<3 x i64>)>
// CHECK:       %[[LEADER:.*]] = llvm.icmp "eq" %{{.*}}, %{{.*}} : i32
// CHECK:       %[[TILE_ROW:.*]] = llvm.add %[[FIRST_ROW]], %{{.*}} : i32
// CHECK-NEXT:  %[[LSE_ROW:.*]] = llvm.add %[[TILE_ROW]], %{{.*}} : i32
// CHECK-NEXT:  %[[LSE_IN_RANGE:.*]] = llvm.icmp "slt" %[[LSE_ROW]], %[[SEQLEN_Q]] : i32
// CHECK-NEXT:  %[[LSE_STORE:.*]] = llvm.and %[[LEADER]], %[[LSE_IN_RANGE]] : i1
// CHECK-NEXT:  llvm.cond_br %[[LSE_STORE]], ^[[LSE_BB:.*]], ^{{.*}}
// CHECK-NEXT:  ^[[LSE_BB]]:
// CHECK:       %[[LSE_ADDR:.*]] = llvm.getelementptr %[[LSE_PTR]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK-NEXT:  llvm.store %[[LSE]], %[[LSE_ADDR]] {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK:       llvm.return

// 2 rows x 8 column pairs of shared stores; 512 chunks over 128 threads:
// 4 vector stores; 2 LSE stores.
// COUNT-COUNT-16: llvm.store {{.*}} : i32, !llvm.ptr<3>
// COUNT-NOT:      llvm.store {{.*}} !llvm.ptr<3>
// COUNT:          nvvm.barrier0
// COUNT-COUNT-4:  llvm.store {{.*}} : vector<4xi32>, !llvm.ptr<1>
// COUNT-COUNT-2:  llvm.store {{.*}} : f32, !llvm.ptr<1>
// COUNT-NOT:      llvm.store
attn.kernel @epilogue arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = true>) attributes {smem_bytes = 8192 : i64} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %os = attn.smem_alloc {name = "O", offset = 0 : i64} : memref<1x64x64xbf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %scale = attn.softmax_scale {default_value = 1.250000e-01 : f32} : f32
  %max = attn.splat {value = 0xFF800000 : f32} : !attn.frag<64xf32>
  %sum = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<64xf32>
  %acc = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<64x64xf32>
  attn.epilogue %acc, %max, %sum, %os, %scale -> %o[%b, %m, %h], %lse : !attn.frag<64x64xf32>, !attn.frag<64xf32>, !attn.frag<64xf32>, memref<1x64x64xbf16, 3> -> !t, !lse
}
