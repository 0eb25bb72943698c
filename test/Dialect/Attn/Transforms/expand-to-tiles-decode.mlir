// RUN: flashtile-opt %s --pass-pipeline='builtin.module(attn.kernel(attn-expand-to-tiles,attn-pipeline-copies,attn-allocate-shared-memory,attn-insert-barriers))' | FileCheck %s
// RUN: flashtile-compile %s --emit=nvvm | FileCheck %s --check-prefix=NVVM

// The decode family's tile program (#attn.config pack_gqa, kv_warps): Q is
// copied as packed (position, head) rows, each of the 4 KV warps scores its
// 16-key slice of every 64-key tile (16x16 fragments), the KV range is cut
// by attn.kv_split, and the epilogue merges the warps' (m, l, O) through an
// f32 merge buffer that reuses the K/V bytes after a barrier.
!t = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>

// CHECK-LABEL: attn.kernel @decode
// CHECK-DAG:     %[[Q:.*]] = attn.smem_alloc {name = "Q", offset = {{[0-9]+}} : i64} : memref<1x16x128xbf16, 3>
// CHECK-DAG:     %[[K:.*]] = attn.smem_alloc {name = "K", offset = 0 : i64} : memref<2x64x128xbf16, 3>
// CHECK-DAG:     %[[MERGE:.*]] = attn.smem_alloc {name = "merge", offset = 0 : i64} : memref<4x16x136xf32, 3>
// CHECK:         %[[B:.*]], %[[UB:.*]], %[[UE:.*]], %[[E:.*]] = attn.kv_bounds
// CHECK-NEXT:    %[[SB:.*]], %[[SUB:.*]], %[[SUE:.*]], %[[SE:.*]] = attn.kv_split %[[B]], %[[UB]], %[[UE]], %[[E]]
// CHECK:         attn.copy_async %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] -> %[[Q]] {packed}
// CHECK:         attn.kv_loop %[[SUE]] to %[[SE]]
// CHECK:           attn.mma %{{.*}}, %[[K]][%{{.*}}] {transpose_b} : !attn.frag<16x128xbf16>, memref<2x64x128xbf16, 3> -> !attn.frag<16x16xf32>
// CHECK:           attn.online_softmax {{.*}} -> !attn.frag<16x16xbf16>
// CHECK:           attn.mma %{{.*}} : !attn.frag<16x16xbf16>, memref<2x64x128xbf16, 3>, !attn.frag<16x128xf32> -> !attn.frag<16x128xf32>
// CHECK:         attn.kv_loop %[[SUB]] to %[[SUE]]
// CHECK:         attn.async_wait {pending = 0 : i64}
// CHECK-NEXT:    attn.barrier
// CHECK-NEXT:    attn.epilogue {{.*}} merge %[[MERGE]] : {{.*}}, memref<4x16x136xf32, 3>

// The lowering: the combine kernel comes first, with the same parameters;
// the attention kernel marks kv_splits; the block's split is x / query
// tiles and its query tile x mod query tiles.
// NVVM-LABEL: llvm.func @decode_combine(
// NVVM-SAME:    %{{[^:]*}}: f32, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: !llvm.ptr<1>, %{{[^:]*}}: !llvm.ptr<1>, %{{[^:]*}}: i32)
// NVVM:         nvvm.shfl.sync bfly
// NVVM-LABEL: llvm.func @decode(
// NVVM-SAME:    attn.kv_splits_param = 24 : i64
// NVVM:         %[[X:.*]] = nvvm.read.ptx.sreg.ctaid.x : i32
// NVVM:         llvm.urem %[[X]], %{{.*}} : i32
// NVVM:         llvm.udiv %{{.*}}, %{{.*}} : i32
// NVVM:         nvvm.barrier0
attn.kernel @decode arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 16, tile_n = 64, stages = 2, warps = 4, q_in_regs = true, kv_warps = 4, pack_gqa = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !t, !t, !t -> !t, !lse
}
