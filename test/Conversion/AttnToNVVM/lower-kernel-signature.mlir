// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s

// attn.kernel, attn.block_context, attn.kv_bounds, attn.softmax_scale and
// attn.kv_loop (KernelLowering.cpp) on a minimal allocated kernel: f16,
// d = 64, 128x64 tiles, 8 warps, causal.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>

// The parameters of KernelABI.h (the forward's tensors): Q, K, V, O, LSE pointers; seqlen_q,
// seqlen_k, heads_q, heads_kv; 3 strides each of Q, K, V, O and 2 of LSE;
// the softmax scale; the batch size. 8 warps are 256 threads.
// CHECK-LABEL: llvm.func @signature(
// CHECK-SAME:    %[[Q:[^ :]+]]: !llvm.ptr<1>, %[[K:[^ :]+]]: !llvm.ptr<1>, %{{[^ :]+}}: !llvm.ptr<1>, %{{[^ :]+}}: !llvm.ptr<1>, %[[LSE:[^ :]+]]: !llvm.ptr<1>,
// CHECK-SAME:    %[[SEQLEN_Q:[^ :]+]]: i32, %[[SEQLEN_K:[^ :]+]]: i32, %[[HEADS_Q:[^ :]+]]: i32, %[[HEADS_KV:[^ :]+]]: i32,
// CHECK-SAME:    %[[Q_STRIDE_B:[^ :]+]]: i64, %[[Q_STRIDE_S:[^ :]+]]: i64, %[[Q_STRIDE_H:[^ :]+]]: i64,
// CHECK-SAME:    %{{[^ :]+}}: i64, %{{[^ :]+}}: i64, %{{[^ :]+}}: i64, %{{[^ :]+}}: i64, %{{[^ :]+}}: i64, %{{[^ :]+}}: i64, %{{[^ :]+}}: i64, %{{[^ :]+}}: i64, %{{[^ :]+}}: i64,
// CHECK-SAME:    %[[LSE_STRIDE_B:[^ :]+]]: i64, %[[LSE_STRIDE_H:[^ :]+]]: i64, %[[SCALE:[^ :]+]]: f32, %[[BATCH:[^ :]+]]: i32)
// CHECK-SAME:    attributes {attn.arch = #attn.arch<sm_120>, attn.batch_param = 24 : i64, attn.config = #attn.config<tile_m = 128, tile_n = 64, stages = 2, warps = 8, q_in_regs = false>, attn.extra_params = array<i64>, attn.smem_bytes = 49152 : i64,
// CHECK-SAME:    attn.tensor_params = {heads_kv = 8 : i64, heads_q = 7 : i64, k = 1 : i64, k.stride_batch = 12 : i64, k.stride_head = 14 : i64, k.stride_seq = 13 : i64, lse = 4 : i64, lse.stride_batch = 21 : i64, lse.stride_head = 22 : i64, o = 3 : i64, o.stride_batch = 18 : i64, o.stride_head = 20 : i64, o.stride_seq = 19 : i64, q = 0 : i64, q.stride_batch = 9 : i64, q.stride_head = 11 : i64, q.stride_seq = 10 : i64, seqlen_k = 6 : i64, seqlen_q = 5 : i64, softmax_scale = 23 : i64, v = 2 : i64, v.stride_batch = 15 : i64, v.stride_head = 17 : i64, v.stride_seq = 16 : i64}, nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>}

// Descriptors: each tensor's memref descriptor (getGlobalTensorDescType).
// Q is (batch, seqlen_q, heads_q, 64) with strides (3 parameters, 1).
// CHECK:       %[[QD0:.*]] = llvm.mlir.poison : !llvm.struct<(ptr<1>, ptr<1>, i64, array<4 x i64>, array<4 x i64>)>
// CHECK-NEXT:  %[[QD1:.*]] = llvm.insertvalue %[[Q]], %[[QD0]][0]
// CHECK-NEXT:  %[[QD2:.*]] = llvm.insertvalue %[[Q]], %[[QD1]][1]
// CHECK-NEXT:  %[[ZERO:.*]] = llvm.mlir.constant(0 : index) : i64
// CHECK-NEXT:  %[[QD3:.*]] = llvm.insertvalue %[[ZERO]], %[[QD2]][2]
// CHECK-NEXT:  %[[B64:.*]] = llvm.sext %[[BATCH]] : i32 to i64
// CHECK-NEXT:  %[[QDB:.*]] = llvm.insertvalue %[[B64]], %[[QD3]][3, 0]
// CHECK-NEXT:  %[[SQ64:.*]] = llvm.sext %[[SEQLEN_Q]] : i32 to i64
// CHECK-NEXT:  %[[QD4:.*]] = llvm.insertvalue %[[SQ64]], %[[QDB]][3, 1]
// CHECK-NEXT:  %[[HQ64:.*]] = llvm.sext %[[HEADS_Q]] : i32 to i64
// CHECK-NEXT:  %[[QD5:.*]] = llvm.insertvalue %[[HQ64]], %[[QD4]][3, 2]
// CHECK-NEXT:  %[[D:.*]] = llvm.mlir.constant(64 : index) : i64
// CHECK-NEXT:  %[[QD6:.*]] = llvm.insertvalue %[[D]], %[[QD5]][3, 3]
// CHECK-NEXT:  %[[QD7:.*]] = llvm.insertvalue %[[Q_STRIDE_B]], %[[QD6]][4, 0]
// CHECK-NEXT:  %[[QD8:.*]] = llvm.insertvalue %[[Q_STRIDE_S]], %[[QD7]][4, 1]
// CHECK-NEXT:  %[[QD9:.*]] = llvm.insertvalue %[[Q_STRIDE_H]], %[[QD8]][4, 2]
// CHECK-NEXT:  %[[ONE:.*]] = llvm.mlir.constant(1 : index) : i64
// CHECK-NEXT:  %[[Q_DESC:.*]] = llvm.insertvalue %[[ONE]], %[[QD9]][4, 3]
// K: seqlen_k and heads_kv.
// CHECK-NEXT:  llvm.mlir.poison
// CHECK-NEXT:  llvm.insertvalue %[[K]], %{{.*}}[0]
// CHECK:       %[[SK64:.*]] = llvm.sext %[[SEQLEN_K]] : i32 to i64
// CHECK-NEXT:  llvm.insertvalue %[[SK64]], %{{.*}}[3, 1]
// CHECK-NEXT:  %[[HKV64:.*]] = llvm.sext %[[HEADS_KV]] : i32 to i64
// CHECK-NEXT:  llvm.insertvalue %[[HKV64]], %{{.*}}[3, 2]
// CHECK:       %[[K_DESC:.*]] = llvm.insertvalue %{{.*}}, %{{.*}}[4, 3]
// LSE is (batch, heads_q, seqlen_q) with strides (2 parameters, 1).
// CHECK:       llvm.mlir.poison : !llvm.struct<(ptr<1>, ptr<1>, i64, array<3 x i64>, array<3 x i64>)>
// CHECK-NEXT:  llvm.insertvalue %[[LSE]], %{{.*}}[0]
// CHECK:       llvm.insertvalue %{{.*}}, %{{.*}}[3, 2]
// CHECK:       llvm.insertvalue %{{.*}}, %{{.*}}[3, 1]
// CHECK-NEXT:  llvm.insertvalue %[[LSE_STRIDE_B]], %{{.*}}[4, 0]
// CHECK-NEXT:  llvm.insertvalue %[[LSE_STRIDE_H]], %{{.*}}[4, 1]

// block_context: (m_block, head, batch) from the grid; GQA kv_head = head /
// (heads_q / heads_kv).
// CHECK:       %[[M_BLOCK:.*]] = nvvm.read.ptx.sreg.ctaid.x : i32
// CHECK-NEXT:  %[[HEAD:.*]] = nvvm.read.ptx.sreg.ctaid.y : i32
// CHECK-NEXT:  nvvm.read.ptx.sreg.ctaid.z : i32
// CHECK-NEXT:  %[[NQ64:.*]] = llvm.extractvalue %[[Q_DESC]][3, 2]
// CHECK-NEXT:  %[[NQ:.*]] = llvm.trunc %[[NQ64]] : i64 to i32
// CHECK-NEXT:  %[[NKV64:.*]] = llvm.extractvalue %[[K_DESC]][3, 2]
// CHECK-NEXT:  %[[NKV:.*]] = llvm.trunc %[[NKV64]] : i64 to i32
// CHECK-NEXT:  %[[GROUP:.*]] = llvm.sdiv %[[NQ]], %[[NKV]] : i32
// CHECK-NEXT:  llvm.sdiv %[[HEAD]], %[[GROUP]] : i32
// CHECK-NEXT:  %[[SQ64B:.*]] = llvm.extractvalue %[[Q_DESC]][3, 1]
// CHECK-NEXT:  %[[SQ:.*]] = llvm.trunc %[[SQ64B]] : i64 to i32
// CHECK-NEXT:  %[[SK64B:.*]] = llvm.extractvalue %[[K_DESC]][3, 1]
// CHECK-NEXT:  %[[SK:.*]] = llvm.trunc %[[SK64B]] : i64 to i32

// kv_bounds, causal (window (-1, 0)), as KVBounds.h computes it: rows
// [lo, hi] = [128 m, min(128 m + 128, seqlen_q) - 1], o = seqlen_k -
// seqlen_q; end = max(0, min(ceil(seqlen_k / 64), ceil((hi + o + 1) / 64)));
// unmasked_end = max(0, min(floor(seqlen_k / 64), floor((lo + o + 1) / 64),
// end)); begin = unmasked_begin = 0. Divisions round down for negative
// numerators.
// CHECK-NEXT:  %[[OFFSET:.*]] = llvm.sub %[[SK]], %[[SQ]] : i32
// CHECK-NEXT:  %[[TILE_M:.*]] = llvm.mlir.constant(128 : i32) : i32
// CHECK-NEXT:  %[[LO:.*]] = llvm.mul %[[M_BLOCK]], %[[TILE_M]] : i32
// CHECK-NEXT:  %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:  %[[TILE_M2:.*]] = llvm.mlir.constant(128 : i32) : i32
// CHECK-NEXT:  %[[LO_END:.*]] = llvm.add %[[LO]], %[[TILE_M2]] : i32
// CHECK-NEXT:  %[[ROWS_END:.*]] = llvm.intr.smin(%[[LO_END]], %[[SQ]]) : (i32, i32) -> i32
// CHECK-NEXT:  %[[HI:.*]] = llvm.sub %[[ROWS_END]], %[[ONE]] : i32
// CHECK-NEXT:  %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:  %[[C63:.*]] = llvm.mlir.constant(63 : i32) : i32
// CHECK-NEXT:  %[[SK_UP:.*]] = llvm.add %[[SK]], %[[C63]] : i32
// CHECK:       %[[TILES:.*]] = llvm.sdiv %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:  %[[HI_DIAG:.*]] = llvm.add %[[HI]], %[[OFFSET]] : i32
// CHECK-NEXT:  %[[RIGHT1:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:  %[[REACH:.*]] = llvm.add %[[HI_DIAG]], %[[RIGHT1]] : i32
// CHECK-NEXT:  %[[C63B:.*]] = llvm.mlir.constant(63 : i32) : i32
// CHECK-NEXT:  %[[REACH_UP:.*]] = llvm.add %[[REACH]], %[[C63B]] : i32
// CHECK-NEXT:  %[[C0A:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:  %[[NEGATIVE:.*]] = llvm.icmp "slt" %[[REACH_UP]], %[[C0A]] : i32
// CHECK-NEXT:  %[[C0B:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:  %[[C63C:.*]] = llvm.mlir.constant(63 : i32) : i32
// CHECK-NEXT:  %[[ADJUST:.*]] = llvm.select %[[NEGATIVE]], %[[C63C]], %[[C0B]] : i1, i32
// CHECK-NEXT:  %[[FLOORED:.*]] = llvm.sub %[[REACH_UP]], %[[ADJUST]] : i32
// CHECK-NEXT:  %[[TILE_N:.*]] = llvm.mlir.constant(64 : i32) : i32
// CHECK-NEXT:  %[[REACH_TILES:.*]] = llvm.sdiv %[[FLOORED]], %[[TILE_N]] : i32
// CHECK-NEXT:  %[[END_CLAMP:.*]] = llvm.intr.smin(%[[TILES]], %[[REACH_TILES]]) : (i32, i32) -> i32
// CHECK-NEXT:  %[[END:.*]] = llvm.intr.smax(%[[ZERO]], %[[END_CLAMP]]) : (i32, i32) -> i32
// CHECK:       %[[WHOLE_TILES:.*]] = llvm.sdiv %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:  %[[LO_DIAG:.*]] = llvm.add %[[LO]], %[[OFFSET]] : i32
// CHECK-NEXT:  %[[RIGHT1B:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:  %[[LO_REACH:.*]] = llvm.add %[[LO_DIAG]], %[[RIGHT1B]] : i32
// CHECK:       %[[LO_TILES:.*]] = llvm.sdiv %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:  %[[UE0:.*]] = llvm.intr.smin(%[[WHOLE_TILES]], %[[LO_TILES]]) : (i32, i32) -> i32
// CHECK-NEXT:  %[[UE1:.*]] = llvm.intr.smin(%[[UE0]], %[[END]]) : (i32, i32) -> i32
// CHECK-NEXT:  %[[UNMASKED_END:.*]] = llvm.intr.smax(%[[ZERO]], %[[UE1]]) : (i32, i32) -> i32

// kv_loop counts j from end - 1 down to unmasked_end, carrying the state.
// CHECK:       llvm.br ^[[HEADER:.*]](%[[END]], %[[INIT:.*]] : i32, !llvm.array<2 x f32>)
// CHECK-NEXT:  ^[[HEADER]](%[[COUNTER:.*]]: i32, %[[STATE:.*]]: !llvm.array<2 x f32>):
// CHECK-NEXT:  %[[MORE:.*]] = llvm.icmp "sgt" %[[COUNTER]], %[[UNMASKED_END]] : i32
// CHECK-NEXT:  %[[STEP:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:  %[[J:.*]] = llvm.sub %[[COUNTER]], %[[STEP]] : i32
// CHECK-NEXT:  llvm.cond_br %[[MORE]], ^[[BODY:.*]](%[[J]], %[[STATE]] : i32, !llvm.array<2 x f32>), ^[[EXIT:.*]](%[[STATE]] : !llvm.array<2 x f32>)
// CHECK-NEXT:  ^[[BODY]](%[[BODY_J:.*]]: i32, %[[BODY_STATE:.*]]: !llvm.array<2 x f32>):
// CHECK-NEXT:  nvvm.barrier0
// CHECK-NEXT:  llvm.br ^[[HEADER]](%[[BODY_J]], %[[BODY_STATE]] : i32, !llvm.array<2 x f32>)
// CHECK-NEXT:  ^[[EXIT]](%{{.*}}: !llvm.array<2 x f32>):
// softmax_scale is the last parameter.
// CHECK-NEXT:  llvm.fmul %[[SCALE]], %[[SCALE]] : f32
// CHECK-NEXT:  llvm.return
attn.kernel @signature arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 128, tile_n = 64, stages = 2, warps = 8, q_in_regs = false>) attributes {smem_bytes = 49152 : i64} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %begin, %ub, %ue, %end = attn.kv_bounds %m, %sq, %sk {tile_m = 128 : i64, tile_n = 64 : i64, window_left = -1 : i64, window_right = 0 : i64}
  %init = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<128xf32>
  %r = attn.kv_loop %ue to %end iter_args(%init) : !attn.frag<128xf32> -> !attn.frag<128xf32> attributes {masked} {
  ^bb0(%j: index, %x: !attn.frag<128xf32>):
    attn.barrier
    attn.yield %x : !attn.frag<128xf32>
  }
  %scale = attn.softmax_scale {default_value = 1.250000e-01 : f32} : f32
  %scale2 = arith.mulf %scale, %scale : f32
}
