// RUN: flashtile-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-expand-to-tiles))' | FileCheck %s

// Compile-time block classification of mask_mod (MaskAnalysis.cpp): the
// mask's key interval [lo(q), hi(q)] becomes an attn.key_range that refines
// attn.kv_bounds; with an exact interval the unmasked loop runs without the
// mask_mod, and a third loop covers the masked tiles at the left edge.

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
#cfg = #attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>

// Prefix-LM, k <= q || k < prefix: lo = -inf, hi = max(q, prefix - 1);
// exact, because both sides reach -inf.
// CHECK-LABEL: attn.kernel @prefix_lm
// CHECK:         %[[B0:.*]], %[[UB0:.*]], %[[UE0:.*]], %[[E0:.*]] = attn.kv_bounds
// CHECK:         %[[B:[^,]*]], %[[UB:[^,]*]], %[[UE:[^,]*]], %[[E:[^,]*]], %[[KE:[^ ]*]] = attn.key_range %{{.*}} within %[[B0]], %[[UB0]], %[[UE0]], %[[E0]] attributes {exact, tile_m = 64 : i64, tile_n = 32 : i64} {
// CHECK-NEXT:    ^bb0(%{{.*}}: index, %{{.*}}: index, %[[Q:.*]]: index):
// CHECK-DAG:       %[[NEG_INF:.*]] = arith.constant -1073741824 : index
// CHECK-DAG:       %[[P:.*]] = attn.kernel_arg 0 : i32
// CHECK:           %[[PI:.*]] = arith.index_cast %[[P]] : i32 to index
// CHECK:           %[[PM1:.*]] = arith.addi %[[PI]], %{{.*}} : index
// CHECK:           %[[LO:.*]] = arith.minsi %[[NEG_INF]], %{{.*}} : index
// CHECK:           %[[HI:.*]] = arith.maxsi %[[Q]], %[[PM1]] : index
// CHECK:           attn.yield %[[LO]], %[[HI]] : index, index
// CHECK:         attn.kv_loop %[[UE]] to %[[E]]
// CHECK:           attn.modify_scores {{.*}} mask_mod
// CHECK:         attn.kv_loop %[[UB]] to %[[UE]]
// CHECK-NOT:       attn.modify_scores
// CHECK:           attn.yield
// CHECK:         attn.kv_loop %[[B]] to %[[UB]]
// CHECK:           attn.modify_scores {{.*}} mask_mod
attn.kernel @prefix_lm arch(#attn.arch<sm_120>) config(#cfg) attributes {arg_names = ["prefix_len"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %p: i32):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %causal = arith.cmpi sle, %j, %i : index
    %pi = arith.index_cast %p : i32 to index
    %prefix = arith.cmpi slt, %j, %pi : index
    %keep = arith.ori %causal, %prefix : i1
    attn.yield %keep : i1
  }
}

// -----

// Chunked attention, q / 1024 == k / 1024 (operands swapped): the key's
// chunk is [c * 1024, c * 1024 + 1023], c = q / 1024; exact.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
#cfg = #attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>
// CHECK-LABEL: attn.kernel @chunked
// CHECK:         attn.key_range {{.*}} attributes {exact, tile_m = 64 : i64, tile_n = 32 : i64} {
// CHECK-NEXT:    ^bb0(%{{.*}}: index, %{{.*}}: index, %[[Q:.*]]: index):
// CHECK:           %[[C:.*]] = arith.divsi %[[Q]], %{{.*}} : index
// CHECK:           %[[LO:.*]] = arith.muli %[[C]], %{{.*}} : index
// CHECK:           %[[HI:.*]] = arith.addi %[[LO]], %{{.*}} : index
// CHECK:           attn.yield %[[LO]], %[[HI]] : index, index
attn.kernel @chunked arch(#attn.arch<sm_120>) config(#cfg) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 1024 : index
    %qc = arith.divsi %i, %c : index
    %kc = arith.divsi %j, %c : index
    %keep = arith.cmpi eq, %qc, %kc : index
    attn.yield %keep : i1
  }
}

// -----

// A data-dependent mask (document ids) has no interval: no attn.key_range
// but an attn.block_ranges, the run-time block mask, holding the mask_mod
// (head-independent here, so not per_head). Its whole tiles run without the
// mask_mod; the two masked loops run it.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!ids = memref<?xi32, strided<[?]>>
#cfg = #attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>
// CHECK-LABEL: attn.kernel @documents
// CHECK-NOT:     attn.key_range
// CHECK:         %[[B0:.*]], %[[UB0:.*]], %[[UE0:.*]], %[[E0:.*]] = attn.kv_bounds
// CHECK:         %[[B:.*]], %[[UB:.*]], %[[UE:.*]], %[[E:.*]] = attn.block_ranges %{{.*}} within %[[B0]], %[[UB0]], %[[UE0]], %[[E0]] attributes {tile_m = 64 : i64, tile_n = 32 : i64} {
// CHECK-NEXT:    ^bb0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK-NEXT:      %[[IDS:.*]] = attn.kernel_arg 0 : memref<?xi32, strided<[?]>>
// CHECK:           memref.load %[[IDS]]
// CHECK:         attn.kv_loop %[[UE]] to %[[E]]
// CHECK:           attn.modify_scores {{.*}} mask_mod
// CHECK:         attn.kv_loop %[[UB]] to %[[UE]]
// CHECK-NOT:       attn.modify_scores
// CHECK:           attn.yield
// CHECK:         attn.kv_loop %[[B]] to %[[UB]]
// CHECK:           attn.modify_scores {{.*}} mask_mod
attn.kernel @documents arch(#attn.arch<sm_120>) config(#cfg) attributes {arg_names = ["doc_ids"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %ids: !ids):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %di = memref.load %ids[%i] : !ids
    %dj = memref.load %ids[%j] : !ids
    %keep = arith.cmpi eq, %di, %dj : i32
    attn.yield %keep : i1
  }
}

// -----

// Part known, part data-dependent: k <= q && ids[q] == ids[k] keeps at
// most the causal keys, so the tiles right of the diagonal are skipped at
// compile time; the interval is not exact, so the run-time block mask
// decides the rest. The mask reads the head, so the block mask is per head.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!ids = memref<?xi32, strided<[?]>>
#cfg = #attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>
// CHECK-LABEL: attn.kernel @bounded
// CHECK:         %[[B0:[^,]*]], %[[UB0:[^,]*]], %[[UE0:[^,]*]], %[[E0:[^,]*]], %[[KE0:[^ ]*]] = attn.key_range {{.*}} attributes {tile_m = 64 : i64, tile_n = 32 : i64} {
// CHECK:           attn.yield
// CHECK:         attn.block_ranges %{{.*}} within %[[B0]], %[[UB0]], %[[UE0]], %[[E0]] attributes {per_head, tile_m = 64 : i64, tile_n = 32 : i64}
attn.kernel @bounded arch(#attn.arch<sm_120>) config(#cfg) attributes {arg_names = ["doc_ids"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %ids: !ids):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %causal = arith.cmpi sle, %j, %i : index
    %di = memref.load %ids[%i] : !ids
    %dj = memref.load %ids[%j] : !ids
    %same = arith.cmpi eq, %di, %dj : i32
    %c0 = arith.constant 0 : index
    %even = arith.cmpi sge, %h, %c0 : index
    %both = arith.andi %same, %even : i1
    %keep = arith.andi %causal, %both : i1
    attn.yield %keep : i1
  }
}

// -----

// Not known to be monotone in q (k <= q * q, or a varlen mask reading each
// token's sequence): an interval still, evaluated at every row of a tile
// (scan_rows) instead of the first and last; no run-time block mask.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
#cfg = #attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>
// CHECK-LABEL: attn.kernel @square
// CHECK:         attn.key_range {{.*}} attributes {exact, scan_rows, tile_m = 64 : i64, tile_n = 32 : i64}
// CHECK-NOT:     attn.block_ranges
// CHECK:         attn.epilogue
attn.kernel @square arch(#attn.arch<sm_120>) config(#cfg) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %sq = arith.muli %i, %i : index
    %keep = arith.cmpi sle, %j, %sq : index
    attn.yield %keep : i1
  }
}

// -----

// Arithmetic that may wrap is not monotone: a cast of q_idx to i16 (wraps
// past 32767) and a product with a factor over 4096 (wraps i32 past 2^19
// positions) are scanned per row; a product with 4096 is not.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
#cfg = #attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>
// CHECK-LABEL: attn.kernel @narrow
// CHECK:         attn.key_range {{.*}} attributes {exact, scan_rows, tile_m = 64 : i64, tile_n = 32 : i64}
attn.kernel @narrow arch(#attn.arch<sm_120>) config(#cfg) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %n = arith.index_cast %i : index to i16
    %w = arith.index_cast %n : i16 to index
    %keep = arith.cmpi sle, %j, %w : index
    attn.yield %keep : i1
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
#cfg = #attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>
// CHECK-LABEL: attn.kernel @large_factor
// CHECK:         attn.key_range {{.*}} attributes {exact, scan_rows, tile_m = 64 : i64, tile_n = 32 : i64}
attn.kernel @large_factor arch(#attn.arch<sm_120>) config(#cfg) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 4097 : index
    %w = arith.muli %i, %c : index
    %keep = arith.cmpi sle, %j, %w : index
    attn.yield %keep : i1
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
#cfg = #attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>
// CHECK-LABEL: attn.kernel @factor
// CHECK:         attn.key_range {{.*}} attributes {exact, tile_m = 64 : i64, tile_n = 32 : i64}
attn.kernel @factor arch(#attn.arch<sm_120>) config(#cfg) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 4096 : index
    %w = arith.muli %i, %c : index
    %keep = arith.cmpi sle, %j, %w : index
    attn.yield %keep : i1
  }
}
