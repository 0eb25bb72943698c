// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s
// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s --check-prefix=COUNT

// attn.splat, attn.mask, attn.softmax_scale and attn.online_softmax
// (SoftmaxLowering.cpp, KernelLowering.cpp) on a minimal allocated kernel:
// 64x16 scores over 4 warps, so one m-tile and two n-tiles (8 scores, two
// rows: g and g + 8) per thread; window (8, 4) on KV tile 3.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>

// CHECK-LABEL: llvm.func @softmax(
// CHECK-SAME:    %[[SCALE:[^ :]+]]: f32, %{{[^ :]+}}: i32)
// CHECK:       %[[M_BLOCK:.*]] = nvvm.read.ptx.sreg.ctaid.x : i32
// CHECK:       %[[SQ64:.*]] = llvm.extractvalue %{{.*}}[3, 1] : !llvm.struct<(ptr<1>, ptr<1>, i64, array<4 x i64>, array<4 x i64>)>
// CHECK-NEXT:  %[[SEQLEN_Q:.*]] = llvm.trunc %[[SQ64]] : i64 to i32
// CHECK-NEXT:  %[[SK64:.*]] = llvm.extractvalue %{{.*}}[3, 1] : !llvm.struct<(ptr<1>, ptr<1>, i64, array<4 x i64>, array<4 x i64>)>
// CHECK-NEXT:  %[[SEQLEN_K:.*]] = llvm.trunc %[[SK64]] : i64 to i32
// CHECK-NEXT:  %[[N_BLOCK:.*]] = llvm.mlir.constant(3 : index) : i32

// The mask: per row, keys in [diagonal - 8, min(seqlen_k, diagonal + 5))
// stay, with diagonal = row + seqlen_k - seqlen_q; the others become -inf.
// CHECK:       %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK:       %[[TILE_ROW:.*]] = llvm.mul %[[M_BLOCK]], %{{.*}} : i32
// CHECK:       %[[ROW_BASE:.*]] = llvm.add %[[TILE_ROW]], %{{.*}} : i32
// CHECK:       %[[TILE_COL:.*]] = llvm.mul %[[N_BLOCK]], %{{.*}} : i32
// CHECK-NEXT:  %[[COL_BASE:.*]] = llvm.add %[[TILE_COL]], %{{.*}} : i32
// CHECK-NEXT:  %[[OFFSET:.*]] = llvm.sub %[[SEQLEN_K]], %[[SEQLEN_Q]] : i32
// CHECK-NEXT:  %[[NEG_INF:.*]] = llvm.mlir.constant(0xFF800000 : f32) : f32
// CHECK-NEXT:  %[[S0:.*]] = llvm.extractvalue %[[S:.*]][0] : !llvm.array<8 x f32>
// CHECK:       %[[ROW:.*]] = llvm.add %[[ROW_BASE]], %{{.*}} : i32
// CHECK-NEXT:  %[[DIAGONAL:.*]] = llvm.add %[[ROW]], %[[OFFSET]] : i32
// CHECK-NEXT:  %[[RIGHT:.*]] = llvm.mlir.constant(5 : i32) : i32
// CHECK-NEXT:  %[[REACH:.*]] = llvm.add %[[DIAGONAL]], %[[RIGHT]] : i32
// CHECK-NEXT:  %[[LIMIT:.*]] = llvm.intr.smin(%[[SEQLEN_K]], %[[REACH]]) : (i32, i32) -> i32
// CHECK-NEXT:  %[[LEFT:.*]] = llvm.mlir.constant(8 : i32) : i32
// CHECK-NEXT:  %[[LOWEST:.*]] = llvm.sub %[[DIAGONAL]], %[[LEFT]] : i32
// CHECK-NEXT:  %[[C0:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:  %[[COL:.*]] = llvm.add %[[COL_BASE]], %[[C0]] : i32
// CHECK-NEXT:  %[[PAST:.*]] = llvm.icmp "sge" %[[COL]], %[[LIMIT]] : i32
// CHECK-NEXT:  %[[BEFORE:.*]] = llvm.icmp "slt" %[[COL]], %[[LOWEST]] : i32
// CHECK-NEXT:  %[[MASKED:.*]] = llvm.or %[[PAST]], %[[BEFORE]] : i1
// CHECK-NEXT:  %{{.*}} = llvm.select %[[MASKED]], %[[NEG_INF]], %[[S0]] : i1, f32

// softmax_scale is the kernel's last parameter; the exp2 domain folds
// log2(e) into it.
// CHECK:       %[[SCALE_LOG2:.*]] = llvm.fmul %[[SCALE]], %{{.*}} : f32

// Row 0 of the online softmax: the tile max over the thread's 4 scores (a
// tree), then over the quad by shfl.sync.bfly 1 and 2; a row still at -inf uses
// max 0; alpha = exp2((old_max - new_max) * c) rescales sum and acc.
// CHECK:       %[[OLD_MAX:.*]] = llvm.extractvalue %{{.*}}[0] : !llvm.array<2 x f32>
// CHECK:       %[[OLD_SUM:.*]] = llvm.extractvalue %{{.*}}[0] : !llvm.array<2 x f32>
// CHECK:       %[[MAX_A:.*]] = llvm.intr.maxnum(%{{.*}}, %{{.*}}) : (f32, f32) -> f32
// CHECK-NEXT:  %[[MAX_B:.*]] = llvm.intr.maxnum(%{{.*}}, %{{.*}}) : (f32, f32) -> f32
// CHECK-NEXT:  %[[THREAD_MAX:.*]] = llvm.intr.maxnum(%[[MAX_A]], %[[MAX_B]]) : (f32, f32) -> f32
// CHECK-NEXT:  %[[WIDTH1:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT:  %[[LANE_XOR1:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:  %[[ALL1:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT:  %[[OTHER1:.*]] = nvvm.shfl.sync bfly %[[ALL1]], %[[THREAD_MAX]], %[[LANE_XOR1]], %[[WIDTH1]] : f32 -> f32
// CHECK-NEXT:  %[[MAX1:.*]] = llvm.intr.maxnum(%[[THREAD_MAX]], %[[OTHER1]])
// CHECK-NEXT:  %[[WIDTH2:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT:  %[[LANE_XOR2:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT:  %[[ALL2:.*]] = llvm.mlir.constant(-1 : i32) : i32
// CHECK-NEXT:  %[[OTHER2:.*]] = nvvm.shfl.sync bfly %[[ALL2]], %[[MAX1]], %[[LANE_XOR2]], %[[WIDTH2]] : f32 -> f32
// CHECK-NEXT:  %[[QUAD_MAX:.*]] = llvm.intr.maxnum(%[[MAX1]], %[[OTHER2]])
// CHECK-NEXT:  %[[NEW_MAX:.*]] = llvm.intr.maxnum(%[[OLD_MAX]], %[[QUAD_MAX]])
// CHECK-NEXT:  %[[EMPTY:.*]] = llvm.fcmp "oeq" %[[NEW_MAX]], %{{.*}} : f32
// Exponents are (s - max) * c: the subtraction is exact near the max, so the
// row's largest term is exactly 1 however large the scores are; alpha is
// exp2((old_max - new_max) * c).
// CHECK-NEXT:  %[[FZERO:.*]] = llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK-NEXT:  %[[BASE:.*]] = llvm.select %[[EMPTY]], %[[FZERO]], %[[NEW_MAX]] : i1, f32
// CHECK-NEXT:  %[[OLD_DIFF:.*]] = llvm.fsub %[[OLD_MAX]], %[[BASE]] : f32
// CHECK-NEXT:  %[[ALPHA_LOG2:.*]] = llvm.fmul %[[OLD_DIFF]], %[[SCALE_LOG2]] : f32
// CHECK-NEXT:  %[[ALPHA:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[ALPHA_LOG2]]) : (f32) -> f32
// CHECK-NEXT:  %[[DIFF0:.*]] = llvm.fsub %{{.*}}, %[[BASE]] : f32
// CHECK-NEXT:  %[[P0_LOG2:.*]] = llvm.fmul %[[DIFF0]], %[[SCALE_LOG2]] : f32
// CHECK-NEXT:  %[[P0:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[P0_LOG2]]) : (f32) -> f32
// CHECK:       %[[SUM_A:.*]] = llvm.fadd %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:  %[[SUM_B:.*]] = llvm.fadd %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:  %[[TILE_SUM:.*]] = llvm.fadd %[[SUM_A]], %[[SUM_B]] : f32
// CHECK-NEXT:  llvm.intr.fma(%[[OLD_SUM]], %[[ALPHA]], %[[TILE_SUM]])
// CHECK-NEXT:  llvm.fmul %{{.*}}, %[[ALPHA]] : f32

// P = the probabilities as bf16 pairs packed in i32: the A fragment of PV.
// CHECK:       %[[PAIR:.*]] = llvm.fptrunc %{{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK-NEXT:  llvm.bitcast %[[PAIR]] : vector<2xbf16> to i32
// CHECK:       llvm.return

// Per thread: 8 masked scores; 2 rows x (2 shuffles, 1 + 4 ex2).
// COUNT-COUNT-8: llvm.select %{{.*}}, %{{.*}}, %{{.*}} : i1, f32
// COUNT-COUNT-4: nvvm.shfl.sync bfly
// COUNT-NOT:     nvvm.shfl.sync
// COUNT-NOT:     llvm.icmp
// COUNT-COUNT-4: llvm.fptrunc
attn.kernel @softmax arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 16, stages = 1, warps = 4, q_in_regs = true>) attributes {smem_bytes = 16384 : i64} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %j = arith.constant 3 : index
  %s = attn.splat {value = 1.000000e+00 : f32} : !attn.frag<64x16xf32>
  %sm = attn.mask %s, %m, %j, %sq, %sk {window_left = 8 : i64, window_right = 4 : i64} : !attn.frag<64x16xf32>
  %scale = attn.softmax_scale {default_value = 1.250000e-01 : f32} : f32
  %log2e = arith.constant 1.44269502 : f32
  %c = arith.mulf %scale, %log2e : f32
  %max = attn.splat {value = 0xFF800000 : f32} : !attn.frag<64xf32>
  %sum = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<64xf32>
  %acc = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<64x64xf32>
  %p, %nmax, %nsum, %nacc = attn.online_softmax %sm, %max, %sum, %acc, %c : !attn.frag<64x16xf32>, !attn.frag<64xf32>, !attn.frag<64xf32>, !attn.frag<64x64xf32> -> !attn.frag<64x16xbf16>
}
