// RUN: flashtile-opt %s -split-input-file --attn-build-backward=kv-warps=1 | FileCheck %s
// RUN: flashtile-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(attn-build-backward{kv-warps=1},attn.kernel(attn-pipeline-copies,attn-allocate-shared-memory,attn-insert-barriers))' \
// RUN:   | FileCheck %s --check-prefix=TILED
// RUN: flashtile-opt %s -split-input-file --attn-build-backward \
// RUN:   | FileCheck %s --check-prefix=DEFAULT

// The checks without a prefix pin the shape of 4 row warps (kv-warps=1).
// The default up to d = 128 is 2 row by 2 KV warps: each holds 32 keys
// and half of dK's and dV's columns (64 x 32 accumulators in the block's
// view), P^T and dS^T are staged for the products whose A they are, and
// those products split B's columns (split_n).
// DEFAULT-LABEL: attn.kernel @fa_bwd_main
// DEFAULT-SAME:    config(#attn.config<tile_m = 64, tile_n = 64, stages = 2, warps = 4, q_in_regs = false, kv_warps = 2>)
// DEFAULT-DAG:     %[[QS:.*]] = attn.smem_alloc {name = "Q"} : memref<2x64x64xbf16, 3>
// DEFAULT-DAG:     %[[DOS:.*]] = attn.smem_alloc {name = "dO"} : memref<2x64x64xbf16, 3>
// DEFAULT-DAG:     %[[DSS:.*]] = attn.smem_alloc {name = "dS"} : memref<1x64x64xbf16, 3>
// DEFAULT-DAG:     %[[PS:.*]] = attn.smem_alloc {name = "P"} : memref<1x64x64xbf16, 3>
// DEFAULT:         attn.kv_loop {{.*}} -> !attn.frag<64x32xf32>, !attn.frag<64x32xf32> attributes {masked}
// DEFAULT:           attn.store_frag %{{.*}} -> %[[PS]]
// DEFAULT:           attn.store_frag %{{.*}} -> %[[DSS]]
// DEFAULT:           attn.mma %[[PS]], %[[DOS]][%{{.*}}], %{{.*}} {split_n}
// DEFAULT:           attn.mma %[[DSS]], %[[QS]][%{{.*}}], %{{.*}} {split_n}
// DEFAULT:           attn.mma %[[DSS]], %{{.*}} {split_n, transpose_a}
// DEFAULT:           attn.store_tile %{{.*}} {accumulate, c_tiles} : !attn.frag<64x32xf32>

// The causal backward of a bf16 d = 64 attention: three tile programs over
// the family's eleven tensors and the family that launches them in order.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @fa_bwd_preprocess
// CHECK-SAME:    tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">, #attn.tensor<"k", "in", "seqlen_k", "heads_kv">, #attn.tensor<"v", "in", "seqlen_k", "heads_kv">, #attn.tensor<"o", "in", "seqlen_q", "heads_q">, #attn.tensor<"lse", "in", "seqlen_q", "heads_q">, #attn.tensor<"do", "in", "seqlen_q", "heads_q">, #attn.tensor<"d", "workspace", "seqlen_q", "heads_q">, #attn.tensor<"dq_accum", "workspace", "seqlen_q", "heads_q", "c_tiles">, #attn.tensor<"dq", "out", "seqlen_q", "heads_q">, #attn.tensor<"dk", "out", "seqlen_k", "heads_kv">, #attn.tensor<"dv", "out", "seqlen_k", "heads_kv">]
// CHECK:         attn.reduce_rows %{{.*}} {kind = "sum"}
// CHECK:         attn.store_tile %{{.*}} -> %arg6[
//
// The main kernel: a key grid, K and V of its key tile in one slot each,
// Q and dO in two, dS^T staged for dQ; the walk over the group's heads.
// CHECK-LABEL: attn.kernel @fa_bwd_main
// CHECK-SAME:    grid = "keys"
// CHECK-DAG:     %[[KS:.*]] = attn.smem_alloc {name = "K"} : memref<1x64x64xbf16, 3>
// CHECK-DAG:     %[[VS:.*]] = attn.smem_alloc {name = "V"} : memref<1x64x64xbf16, 3>
// CHECK-DAG:     %[[QS:.*]] = attn.smem_alloc {name = "Q"} : memref<2x64x64xbf16, 3>
// CHECK-DAG:     %[[DOS:.*]] = attn.smem_alloc {name = "dO"} : memref<2x64x64xbf16, 3>
// CHECK-DAG:     %[[DSS:.*]] = attn.smem_alloc {name = "dS"} : memref<1x64x64xbf16, 3>
// CHECK:         attn.size "heads_q"
// CHECK:         attn.size "heads_kv"
// The masked steps (the diagonal, the partial tiles) first:
// CHECK:         %[[GRADS:.*]]:2 = attn.kv_loop {{.*}} attributes {masked}
// CHECK:         ^bb0(%[[J:.*]]: index,
// CHECK:           attn.copy_async %arg0[%{{.*}}, %[[I:.*]], %[[H:.*]]] slot %[[J]] -> %[[QS]]
// CHECK:           attn.copy_async %arg5[%{{.*}}, %[[I]], %[[H]]] slot %[[J]] -> %[[DOS]]
// CHECK:           attn.mma %[[KS]], %[[QS]][%[[J]]] {transpose_b}
// CHECK:           attn.load_tile %arg4[{{.*}}] : memref<?x?x?xf32> -> !attn.frag<64xf32, cols>
// CHECK:           attn.map
// CHECK:             math.exp2
// CHECK:             arith.cmpi sgt
// CHECK:             arith.cmpf oeq
// CHECK:           attn.mma %[[VS]], %[[DOS]][%[[J]]] {transpose_b}
// CHECK:           attn.mma %{{.*}}, %[[DOS]][%[[J]]], %{{.*}} : !attn.frag<64x64xbf16>
// CHECK:           attn.mma %{{.*}}, %[[QS]][%[[J]]], %{{.*}} : !attn.frag<64x64xbf16>
// CHECK:           attn.store_frag %{{.*}} -> %[[DSS]]
// CHECK:           attn.mma %[[DSS]], %[[KS]][%{{.*}}] {transpose_a}
// CHECK:           attn.store_tile %{{.*}} -> %arg7[{{.*}}] {accumulate, c_tiles}
// Then the steps that need no mask:
// CHECK:         attn.kv_loop {{.*}} iter_args(%[[GRADS]]#0, %[[GRADS]]#1)
// CHECK:           attn.map
// CHECK-NOT:         arith.cmp
// CHECK:             math.exp2
// CHECK-NEXT:        attn.yield
// CHECK:           attn.store_tile %{{.*}} -> %arg7[{{.*}}] {accumulate, c_tiles}
// CHECK:         attn.store_tile %{{.*}} -> %arg9[
// CHECK:         attn.store_tile %{{.*}} -> %arg10[
// CHECK-LABEL: attn.kernel @fa_bwd_convert
// CHECK:         attn.load_tile %arg7[{{.*}}] {c_tiles}
// CHECK:         attn.store_tile %{{.*}} -> %arg8[
// CHECK:       attn.family @fa_bwd kernels [@fa_bwd_preprocess, @fa_bwd_main, @fa_bwd_convert]
//
// After the tile passes: each step's copies are issued two steps ahead,
// their tile and head re-computed for that step, behind the waits and
// barriers the race proof needs.
// TILED-LABEL: attn.kernel @fa_bwd_main
// TILED:         attn.kv_loop
// TILED:         ^bb0(%[[J:.*]]: index,
// TILED:           attn.async_wait
// TILED-NEXT:      attn.barrier
// TILED:           %[[AHEAD:.*]] = arith.subi %[[J]], %c2
// TILED:           attn.copy_async %arg5[{{.*}}] slot %[[AHEAD]]
// TILED:           attn.barrier
// TILED:       attn.family @fa_bwd
attn.kernel @fa arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !t, !t, !t -> !t, !lse
}

// -----

// d_qk = 128 with d_v = 64, no mask: the buffers follow each side's head
// dim, dQ's accumulator Q's; the masked steps test only the sequence ends
// and empty rows.
!q = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!v = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @mixed_bwd_main
// CHECK-DAG:     attn.smem_alloc {name = "K"} : memref<1x64x128xf16, 3>
// CHECK-DAG:     attn.smem_alloc {name = "V"} : memref<1x64x64xf16, 3>
// CHECK-DAG:     attn.smem_alloc {name = "dO"} : memref<{{[12]}}x64x64xf16, 3>
// CHECK:         attn.kv_loop {{.*}} attributes {masked}
// CHECK:           attn.map
// CHECK:             math.exp2
// CHECK-NOT:         arith.cmpi sgt
// CHECK-NOT:         arith.cmpi slt
// CHECK:             arith.cmpf oeq
// dQ = dS K in two column halves, each added before the next is formed:
// CHECK:           attn.mma %{{.*}} {n_end = 64 : i64, transpose_a}
// CHECK:           attn.store_tile %{{.*}} -> %arg7[%{{.*}}, %{{.*}}, %{{.*}}, %c0{{.*}}] {accumulate, c_tiles} : !attn.frag<64x64xf32> -> memref<?x?x?x128xf32, strided<[?, ?, ?, 1]>>
// CHECK:           attn.mma %{{.*}} {n_begin = 64 : i64, n_end = 128 : i64, transpose_a}
// CHECK:           attn.store_tile %{{.*}} -> %arg7[%{{.*}}, %{{.*}}, %{{.*}}, %c64{{.*}}] {accumulate, c_tiles} : !attn.frag<64x64xf32> -> memref<?x?x?x128xf32, strided<[?, ?, ?, 1]>>
attn.kernel @mixed arch(#attn.arch<sm_120>) {
^bb0(%q: !q, %k: !q, %v: !v, %o: !v, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !q, !q, !v -> !v, !lse
}

// -----

// d = 80 runs on rows padded to 96 (getPaddedHeadDim), as the forward.
!t = memref<?x?x?x80xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @padded_bwd_main
// CHECK-DAG:     attn.smem_alloc {name = "K"} : memref<1x64x96xbf16, 3>
// CHECK:         attn.store_tile %{{.*}} -> %arg9[{{.*}}] : !attn.frag<64x96xf32> -> memref<?x?x?x80xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @padded arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !t, !t, !t -> !t, !lse
}
