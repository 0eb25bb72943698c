// RUN: flashtile-opt %s --pass-pipeline='builtin.module(attn.kernel(attn-expand-to-tiles))' | FileCheck %s

// Paged KV: the expansion records the block table's argument on the
// problem, and every copy of K and V (not Q) reads through it; a
// per-sequence length bounds the copies too (limit = the key range's end).
!t = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!s = memref<?xi32, strided<[?]>>
!bt = memref<?x?xi32, strided<[?, ?]>>
// CHECK-LABEL: attn.kernel @paged
// CHECK-SAME:    page_table = 1
// CHECK:         %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[KE:[^ ]*]] = attn.key_range
// CHECK:         attn.copy_async %arg0[{{.*}}] -> %{{.*}} {packed}
// CHECK-NOT:     attn.copy_async %arg0
// CHECK:         attn.copy_async %arg1[{{.*}}] pages %arg6 : {{.*}} limit %[[KE]] ->
// CHECK:         attn.copy_async %arg2[{{.*}}] pages %arg6 : {{.*}} limit %[[KE]] ->
// CHECK:         attn.kv_loop
// CHECK:           attn.copy_async %arg2[{{.*}}] pages %arg6 : {{.*}} limit %[[KE]] ->
// CHECK:           attn.copy_async %arg1[{{.*}}] pages %arg6 : {{.*}} limit %[[KE]] ->
attn.kernel @paged arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 16, tile_n = 64, stages = 2, warps = 4, q_in_regs = true, kv_warps = 4, pack_gqa = true>) attributes {arg_names = ["cache_seqlens", "block_table"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %seq: !s, %table: !bt):
  attn.attention %q, %k, %v -> %o, %lse pages(%table : !bt) : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %n = memref.load %seq[%b] : !s
    %ni = arith.index_cast %n : i32 to index
    %keep = arith.cmpi slt, %j, %ni : index
    attn.yield %keep : i1
  }
}
