// RUN: flashtile-opt %s | flashtile-opt | FileCheck %s
// Kernel-level and tile-level IR round-trips through the printer and parser.

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>

// CHECK-LABEL: attn.kernel @kernel_level arch(#attn.arch<sm_120>)
// CHECK:         attn.attention %{{.*}}, %{{.*}}, %{{.*}} -> %{{.*}}, %{{.*}} {causal, softmax_scale = 1.250000e-01 : f32, window_left = 64 : i64}
// CHECK:         score_mod {
// CHECK:           attn.yield %{{.*}} : f32
// CHECK:         } mask_mod {
// CHECK:           attn.yield %{{.*}} : i1
attn.kernel @kernel_level arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse {causal, window_left = 64, softmax_scale = 0.125 : f32}
    : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    attn.yield %s : f32
  } mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %keep = arith.cmpi sge, %i, %j : index
    attn.yield %keep : i1
  }
}

// CHECK-LABEL: attn.kernel @with_config arch(#attn.arch<sm_80>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 2, warps = 4, q_in_regs = false>)
attn.kernel @with_config arch(#attn.arch<sm_80>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 2, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}

// CHECK-LABEL: attn.kernel @tile_level
// CHECK:         %[[QS:.*]] = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x64x128xf16, 3>
// CHECK:         %[[QF:.*]] = attn.load_frag %[[QS]] : memref<1x64x128xf16, 3> -> !attn.frag<64x128xf16>
// CHECK:         attn.kv_loop %{{.*}} to %{{.*}} iter_args(%{{.*}}, %{{.*}}, %{{.*}}) : !attn.frag<64xf32>, !attn.frag<64xf32>, !attn.frag<64x128xf32> -> !attn.frag<64xf32>, !attn.frag<64xf32>, !attn.frag<64x128xf32> attributes {masked}
// CHECK:           attn.mma %[[QF]], %{{.*}}[%{{.*}}] {transpose_b} : !attn.frag<64x128xf16>, memref<2x32x128xf16, 3> -> !attn.frag<64x32xf32>
// CHECK:           attn.online_softmax %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[C:.*]] :
// CHECK:           attn.mma
// CHECK:         attn.epilogue
attn.kernel @tile_level arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 2, warps = 4, q_in_regs = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x64x128xf16, 3>
  %ks = attn.smem_alloc {name = "K"} : memref<2x32x128xf16, 3>
  %vs = attn.smem_alloc {name = "V"} : memref<2x32x128xf16, 3>
  %os = attn.smem_alloc {name = "O"} : memref<1x64x128xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %begin, %ub, %ue, %end = attn.kv_bounds %m, %sq, %sk {tile_m = 64, tile_n = 32, window_left = -1, window_right = 0}
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x128xf16, 3>
  attn.async_wait {pending = 0}
  attn.barrier
  %qf = attn.load_frag %qs : memref<1x64x128xf16, 3> -> !attn.frag<64x128xf16>
  %scale = attn.softmax_scale {default_value = 0.088 : f32} : f32
  %log2e = arith.constant 1.44269502 : f32
  %c = arith.mulf %scale, %log2e : f32
  %m0 = attn.splat {value = 0xFF800000 : f32} : !attn.frag<64xf32>
  %l0 = attn.splat {value = 0.0 : f32} : !attn.frag<64xf32>
  %a0 = attn.splat {value = 0.0 : f32} : !attn.frag<64x128xf32>
  %r:3 = attn.kv_loop %ue to %end iter_args(%m0, %l0, %a0)
      : !attn.frag<64xf32>, !attn.frag<64xf32>, !attn.frag<64x128xf32>
      -> !attn.frag<64xf32>, !attn.frag<64xf32>, !attn.frag<64x128xf32> attributes {masked} {
  ^bb0(%j: index, %mi: !attn.frag<64xf32>, %li: !attn.frag<64xf32>, %ai: !attn.frag<64x128xf32>):
    attn.copy_async %k[%b, %j, %hkv] -> %ks : !t -> memref<2x32x128xf16, 3>
    %s = attn.mma %qf, %ks[%j] {transpose_b} : !attn.frag<64x128xf16>, memref<2x32x128xf16, 3> -> !attn.frag<64x32xf32>
    %sm = attn.mask %s, %m, %j, %sq, %sk {window_left = -1, window_right = 0} : !attn.frag<64x32xf32>
    %p, %m1, %l1, %a1 = attn.online_softmax %sm, %mi, %li, %ai, %c
        : !attn.frag<64x32xf32>, !attn.frag<64xf32>, !attn.frag<64xf32>, !attn.frag<64x128xf32> -> !attn.frag<64x32xf16>
    %a2 = attn.mma %p, %vs[%j], %a1 : !attn.frag<64x32xf16>, memref<2x32x128xf16, 3>, !attn.frag<64x128xf32> -> !attn.frag<64x128xf32>
    attn.yield %m1, %l1, %a2 : !attn.frag<64xf32>, !attn.frag<64xf32>, !attn.frag<64x128xf32>
  }
  attn.epilogue %r#2, %r#0, %r#1, %os, %scale -> %o[%b, %m, %h], %lse
    : !attn.frag<64x128xf32>, !attn.frag<64xf32>, !attn.frag<64xf32>, memref<1x64x128xf16, 3> -> !t, !lse
}

// Paged KV: the block table is an extra argument; the expansion records it
// on the problem and its copies read K and V through it.
!bt = memref<?x?xi32, strided<[?, ?]>>
// CHECK-LABEL: attn.kernel @paged
// CHECK:         attn.attention %{{.*}} -> %{{.*}}, %{{.*}} pages(%{{.*}} : memref<?x?xi32, strided<[?, ?]>>) {causal}
attn.kernel @paged arch(#attn.arch<sm_120>) attributes {arg_names = ["block_table"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %table: !bt):
  attn.attention %q, %k, %v -> %o, %lse pages(%table : !bt) {causal}
    : !t, !t, !t -> !t, !lse
}

// CHECK-LABEL: attn.kernel @paged_copy
// CHECK-SAME:    page_table = 0
// CHECK:         attn.copy_async %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] pages %{{.*}} : memref<?x?xi32, strided<[?, ?]>> limit %{{.*}} -> %{{.*}} : memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>> -> memref<2x64x128xf16, 3>
attn.kernel @paged_copy arch(#attn.arch<sm_120>) attributes {arg_names = ["block_table"], problem = #attn.problem<causal = false, window_left = -1, window_right = -1, softmax_scale = 1.0 : f32, page_table = 0>} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %table: !bt):
  %ks = attn.smem_alloc {name = "K"} : memref<2x64x128xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  attn.copy_async %k[%b, %m, %hkv] pages %table : !bt limit %sk -> %ks : !t -> memref<2x64x128xf16, 3>
}

// attn.mma's operand forms and the fragment layout kinds: the kind is
// printed only where it is not the element type's default.
// CHECK-LABEL: attn.kernel @mma_forms
// CHECK:         attn.mma %[[KS:.*]][%[[J:.*]]], %[[VS:.*]][%[[J]]] {transpose_a} : memref<2x32x128xf16, 3>, memref<2x32x128xf16, 3> -> !attn.frag<128x128xf32>
// CHECK:         attn.mma %{{.*}}, %[[KS]][%[[J]]] {k_end = 64 : i64, transpose_b} : memref<1x64x128xf16, 3>, memref<2x32x128xf16, 3> -> !attn.frag<64x32xf16, acc>
// CHECK:         attn.mma %{{.*}}, %{{.*}}[%[[J]]] {transpose_b} : memref<1x64x128xi8, 3>, memref<1x32x128xi8, 3> -> !attn.frag<64x32xi32>
// CHECK:         attn.mma %{{.*}}, %{{.*}}[%[[J]]] {transpose_b} : memref<1x64x128xf8E4M3FN, 3>, memref<1x32x128xf8E4M3FN, 3> -> !attn.frag<64x32xf32>
// CHECK:         attn.splat {value = 0.000000e+00 : f32} : !attn.frag<64x32xi8>
attn.kernel @mma_forms arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x128xf16, 3>
  %ks = attn.smem_alloc {name = "K"} : memref<2x32x128xf16, 3>
  %vs = attn.smem_alloc {name = "V"} : memref<2x32x128xf16, 3>
  %j = arith.constant 0 : index
  %dv = attn.mma %ks[%j], %vs[%j] {transpose_a} : memref<2x32x128xf16, 3>, memref<2x32x128xf16, 3> -> !attn.frag<128x128xf32>
  %s16 = attn.mma %qs, %ks[%j] {transpose_b, k_end = 64} : memref<1x64x128xf16, 3>, memref<2x32x128xf16, 3> -> !attn.frag<64x32xf16, acc>
  %a8 = attn.smem_alloc {name = "A8"} : memref<1x64x128xi8, 3>
  %b8 = attn.smem_alloc {name = "B8"} : memref<1x32x128xi8, 3>
  %s8 = attn.mma %a8, %b8[%j] {transpose_b} : memref<1x64x128xi8, 3>, memref<1x32x128xi8, 3> -> !attn.frag<64x32xi32>
  %af = attn.smem_alloc {name = "A8f"} : memref<1x64x128xf8E4M3FN, 3>
  %bf = attn.smem_alloc {name = "B8f"} : memref<1x32x128xf8E4M3FN, 3>
  %sf = attn.mma %af, %bf[%j] {transpose_b} : memref<1x64x128xf8E4M3FN, 3>, memref<1x32x128xf8E4M3FN, 3> -> !attn.frag<64x32xf32>
  %p8 = attn.splat {value = 0.0 : f32} : !attn.frag<64x32xi8, a>
}

// A kernel that declares its own sequence tensors (a backward's): two
// inputs on either side, a row tensor and an accumulated f32 one.
// CHECK-LABEL: attn.kernel @declared_tensors
// CHECK-SAME:    tensors = [#attn.tensor<"k", "in", "seqlen_k", "heads_kv">, #attn.tensor<"do", "in", "seqlen_q", "heads_q">, #attn.tensor<"d", "out", "seqlen_q", "heads_q">, #attn.tensor<"dq", "accumulate", "seqlen_q", "heads_q">]
// CHECK:         attn.store_tile %{{.*}} -> %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {accumulate} : !attn.frag<64x64xf32> -> memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
// CHECK:         attn.store_tile %{{.*}} -> %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : !attn.frag<64xf32> -> memref<?x?x?xf32, strided<[?, ?, 1]>>
attn.kernel @declared_tensors arch(#attn.arch<sm_120>) attributes {
    tensors = [#attn.tensor<"k", "in", "seqlen_k", "heads_kv">,
               #attn.tensor<"do", "in", "seqlen_q", "heads_q">,
               #attn.tensor<"d", "out", "seqlen_q", "heads_q">,
               #attn.tensor<"dq", "accumulate", "seqlen_q", "heads_q">]} {
^bb0(%k: memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>,
     %do: memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>,
     %d: memref<?x?x?xf32, strided<[?, ?, 1]>>,
     %dq: memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>):
  %c0 = arith.constant 0 : index
  %t = attn.splat {value = 1.0 : f32} : !attn.frag<64x64xf32>
  %r = attn.splat {value = 1.0 : f32} : !attn.frag<64xf32>
  attn.store_tile %t -> %dq[%c0, %c0, %c0, %c0] {accumulate} : !attn.frag<64x64xf32> -> memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
  attn.store_tile %r -> %d[%c0, %c0, %c0] : !attn.frag<64xf32> -> memref<?x?x?xf32, strided<[?, ?, 1]>>
}

// A copy that names its step by a slot index while its tile and head are
// computed (the backward's walk over a GQA group).
// CHECK-LABEL: attn.kernel @slot_copy
// CHECK:         attn.copy_async %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] slot %{{.*}} -> %{{.*}} : memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>> -> memref<2x64x128xf16, 3>
attn.kernel @slot_copy arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %qs = attn.smem_alloc {name = "Q"} : memref<2x64x128xf16, 3>
  %c3 = arith.constant 3 : index
  %i = arith.remui %m, %c3 : index
  attn.copy_async %q[%b, %i, %h] slot %m -> %qs : !t -> memref<2x64x128xf16, 3>
}
