// RUN: flashtile-opt %s | flashtile-opt | FileCheck %s

// The tile language's ops round-trip: map with broadcasting of a row
// fragment and a scalar, reduce_rows, convert and store.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!s = !attn.frag<64x32xf32>
// CHECK-LABEL: attn.kernel @ops
// CHECK:         %[[MAX:.*]] = attn.reduce_rows %{{.*}} {kind = "max"} : !attn.frag<64x32xf32> -> !attn.frag<64xf32>
// CHECK:         %[[E:.*]] = attn.map %{{.*}}, %[[MAX]], %{{.*}} : !attn.frag<64x32xf32>, !attn.frag<64xf32>, f32 -> !attn.frag<64x32xf32> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32, %[[M:.*]]: f32, %[[C:.*]]: f32, %{{.*}}: index, %{{.*}}: index):
// CHECK:           attn.yield %{{.*}} : f32
// CHECK:         attn.reduce_rows %[[E]] {kind = "sum"}
// CHECK:         attn.map %{{.*}} : !attn.frag<64xf32> -> !attn.frag<64xf32> {
// CHECK-NEXT:    ^bb0(%{{.*}}: f32, %{{.*}}: index):
// CHECK:         attn.convert %[[E]] : !attn.frag<64x32xf32> -> !attn.frag<64x32xbf16>
// CHECK:         attn.store %{{.*}}, %{{.*}} -> %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}], %{{.*}} values(%{{.*}} : !attn.frag<64xf32>) : !attn.frag<64x64xf32>, memref<1x64x64xbf16, 3> -> memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?xf32>
attn.kernel @ops arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %os = attn.smem_alloc {name = "O"} : memref<1x64x64xbf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %scale = attn.softmax_scale {default_value = 0.125 : f32} : f32
  %s = attn.splat {value = 1.0 : f32} : !s
  %max = attn.reduce_rows %s {kind = "max"} : !s -> !attn.frag<64xf32>
  %e = attn.map %s, %max, %scale : !s, !attn.frag<64xf32>, f32 -> !s {
  ^bb0(%x: f32, %mx: f32, %c: f32, %row: index, %col: index):
    %d = arith.subf %x, %mx : f32
    %y = arith.mulf %d, %c : f32
    %z = math.exp %y : f32
    attn.yield %z : f32
  }
  %l = attn.reduce_rows %e {kind = "sum"} : !s -> !attn.frag<64xf32>
  %lse_rows = attn.map %l : !attn.frag<64xf32> -> !attn.frag<64xf32> {
  ^bb0(%x: f32, %row: index):
    %y = math.log %x : f32
    attn.yield %y : f32
  }
  %p = attn.convert %e : !s -> !attn.frag<64x32xbf16>
  %acc = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf32>
  attn.store %acc, %os -> %o[%b, %m, %h], %lse values(%lse_rows : !attn.frag<64xf32>) : !attn.frag<64x64xf32>, memref<1x64x64xbf16, 3> -> !t, !lse
}

// The backward's vectors: a 'cols' vector (one value per column, as D and
// LSE are along the columns of a transposed score tile) loaded from a
// (batch, heads, rows) tensor, broadcast along a tile's rows in attn.map, and
// a tile rounded into shared memory with attn.store_frag.
// CHECK-LABEL: attn.kernel @cols_vectors
// CHECK:         %[[D:.*]] = attn.load_tile %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x?x?xf32, strided<[?, ?, 1]>> -> !attn.frag<64xf32, cols>
// CHECK:         %[[R:.*]] = attn.map %{{.*}}, %[[D]] : !attn.frag<64x64xf32>, !attn.frag<64xf32, cols> -> !attn.frag<64x64xf32> {
// CHECK:         attn.store_frag %[[R]] -> %{{.*}} : !attn.frag<64x64xf32> -> memref<1x64x64xbf16, 3>
attn.kernel @cols_vectors arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) attributes {
    grid = "keys",
    tensors = [#attn.tensor<"k", "in", "seqlen_k", "heads_kv">,
               #attn.tensor<"d", "in", "seqlen_q", "heads_q">]} {
^bb0(%k: memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>,
     %d: memref<?x?x?xf32, strided<[?, ?, 1]>>):
  %c0 = arith.constant 0 : index
  %ds = attn.smem_alloc {name = "dS"} : memref<1x64x64xbf16, 3>
  %s = attn.splat {value = 1.0 : f32} : !attn.frag<64x64xf32>
  %dv = attn.load_tile %d[%c0, %c0, %c0] : memref<?x?x?xf32, strided<[?, ?, 1]>> -> !attn.frag<64xf32, cols>
  %r = attn.map %s, %dv : !attn.frag<64x64xf32>, !attn.frag<64xf32, cols> -> !attn.frag<64x64xf32> {
  ^bb0(%x: f32, %y: f32, %row: index, %col: index):
    %z = arith.subf %x, %y : f32
    attn.yield %z : f32
  }
  attn.store_frag %r -> %ds : !attn.frag<64x64xf32> -> memref<1x64x64xbf16, 3>
}

// A key-grid kernel's KV warps split columns: each warp's S^T is its share
// of the queries (with its share of D), P^T goes to shared memory as that
// share of the buffer's columns, and split_n gives each warp its share of
// dV's columns over all of the queries.
// CHECK-LABEL: attn.kernel @kv_warps_split_columns
// CHECK:         attn.mma %{{.*}}, %{{.*}}[%{{.*}}] {transpose_b} : memref<1x64x64xbf16, 3>, memref<1x64x64xbf16, 3> -> !attn.frag<64x32xf32>
// CHECK:         attn.load_tile %{{.*}} -> !attn.frag<32xf32, cols>
// CHECK:         attn.store_frag %{{.*}} -> %{{.*}} : !attn.frag<64x32xf32> -> memref<1x64x64xbf16, 3>
// CHECK:         attn.mma %{{.*}}, %{{.*}}[%{{.*}}] {split_n} : memref<1x64x64xbf16, 3>, memref<1x64x64xbf16, 3> -> !attn.frag<64x32xf32>
// CHECK:         attn.store_tile %{{.*}} : !attn.frag<64x32xf32> -> memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @kv_warps_split_columns arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 8, q_in_regs = false, kv_warps = 2>) attributes {
    grid = "keys",
    tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">,
               #attn.tensor<"d", "in", "seqlen_q", "heads_q">,
               #attn.tensor<"dv", "out", "seqlen_k", "heads_kv">]} {
^bb0(%q: memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>,
     %d: memref<?x?x?xf32, strided<[?, ?, 1]>>,
     %dv: memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>):
  %c0 = arith.constant 0 : index
  %ks = attn.smem_alloc {name = "K"} : memref<1x64x64xbf16, 3>
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x64xbf16, 3>
  %ps = attn.smem_alloc {name = "P"} : memref<1x64x64xbf16, 3>
  %s = attn.mma %ks, %qs[%c0] {transpose_b} : memref<1x64x64xbf16, 3>, memref<1x64x64xbf16, 3> -> !attn.frag<64x32xf32>
  %dvec = attn.load_tile %d[%c0, %c0, %c0] : memref<?x?x?xf32, strided<[?, ?, 1]>> -> !attn.frag<32xf32, cols>
  %p = attn.map %s, %dvec : !attn.frag<64x32xf32>, !attn.frag<32xf32, cols> -> !attn.frag<64x32xf32> {
  ^bb0(%x: f32, %y: f32, %row: index, %col: index):
    %z = arith.subf %x, %y : f32
    attn.yield %z : f32
  }
  attn.store_frag %p -> %ps : !attn.frag<64x32xf32> -> memref<1x64x64xbf16, 3>
  attn.barrier
  %acc = attn.mma %ps, %qs[%c0] {split_n} : memref<1x64x64xbf16, 3>, memref<1x64x64xbf16, 3> -> !attn.frag<64x32xf32>
  attn.store_tile %acc -> %dv[%c0, %c0, %c0, %c0] : !attn.frag<64x32xf32> -> memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
}

// attn.for_each: a map's operands and body arguments, no result; its body
// adds into the kernel's extra tensors of role accumulate.
!g = memref<?x?xf32, strided<[?, ?]>>
// CHECK-LABEL: attn.kernel @for_each
// CHECK:         attn.for_each %{{.*}}, %{{.*}} : !attn.frag<64x32xf32>, index {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32, %[[H:.*]]: index, %[[R:.*]]: index, %[[C:.*]]: index):
// CHECK-NEXT:      %{{.*}} = memref.atomic_rmw addf %[[X]], %{{.*}}[%[[H]], %[[C]]] : (f32, memref<?x?xf32, strided<[?, ?]>>) -> f32
// CHECK-NEXT:      attn.yield
attn.kernel @for_each arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = true>) attributes {arg_names = ["grad"], arg_roles = ["accumulate"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %grad: !g):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %s = attn.splat {value = 1.0 : f32} : !attn.frag<64x32xf32>
  attn.for_each %s, %h : !attn.frag<64x32xf32>, index {
  ^bb0(%x: f32, %hh: index, %row: index, %col: index):
    %old = memref.atomic_rmw addf %x, %grad[%hh, %col] : (f32, !g) -> f32
    attn.yield
  }
}
