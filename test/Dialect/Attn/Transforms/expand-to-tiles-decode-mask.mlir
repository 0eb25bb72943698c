// RUN: flashtile-opt %s -split-input-file --pass-pipeline='builtin.module(attn.kernel(attn-expand-to-tiles))' | FileCheck %s

// A mask_mod in the decode family. Packed rows mix heads and positions, so
// a key interval serves a tile only when the mask reads no head: a
// per-sequence cache length does (flashtile.decode's cache_seqlens), and its
// tiles past the length are never visited. A mask that reads the head runs
// on every visited tile; the run-time block mask is never built here.
!t = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!s = memref<?xi32, strided<[?]>>
// CHECK-LABEL: attn.kernel @seqlens
// CHECK:         %[[B:[^,]*]], %[[UB:[^,]*]], %[[UE:[^,]*]], %[[E:[^,]*]], %[[KE:[^ ]*]] = attn.key_range {{.*}} attributes {exact, tile_m = 16 : i64, tile_n = 64 : i64}
// CHECK:         attn.kv_split %[[B]], %[[UB]], %[[UE]], %[[E]]
// Keys past the sequence's length are never read: the K and V copies stop
// at the key range's end.
// CHECK:         attn.copy_async {{.*}} {packed}
// CHECK:         attn.copy_async %{{.*}} limit %[[KE]] ->
// CHECK:         attn.copy_async %{{.*}} limit %[[KE]] ->
// CHECK-NOT:     attn.block_ranges
attn.kernel @seqlens arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 16, tile_n = 64, stages = 2, warps = 4, q_in_regs = true, kv_warps = 4, pack_gqa = true>) attributes {arg_names = ["cache_seqlens"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %seq: !s):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %n = memref.load %seq[%b] : !s
    %ni = arith.index_cast %n : i32 to index
    %keep = arith.cmpi slt, %j, %ni : index
    attn.yield %keep : i1
  }
}

// -----

!t = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @per_head
// CHECK-NOT:     attn.key_range
// CHECK-NOT:     attn.block_ranges
// CHECK:         attn.kv_split
// CHECK:         attn.kv_loop %{{.*}} to %{{.*}} iter_args
// CHECK:           attn.modify_scores {{.*}} mask_mod {
// CHECK:         attn.kv_loop %{{.*}} to %{{.*}} iter_args
// CHECK:           attn.modify_scores {{.*}} mask_mod {
attn.kernel @per_head arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 16, tile_n = 64, stages = 2, warps = 4, q_in_regs = true, kv_warps = 4, pack_gqa = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %keep = arith.cmpi sle, %j, %h : index
    attn.yield %keep : i1
  }
}
