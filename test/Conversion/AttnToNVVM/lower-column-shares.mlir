// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s

// A key-grid kernel's KV warps split columns (4 row warps by 2 KV warps):
// each fragment with columns is the warp's share, so the column a lane
// reads or writes moves by kv_warp times the share. Here: a 'cols' vector
// (LSE's 32 queries of the warp), P^T's share staged in shared memory
// (from 16-byte chunk kv_warp * 4), and a 64 x 32 share of dK stored.
// Every op takes the thread's coordinates: warp = tid / 32, its row warp
// warp / 2 and its KV warp warp % 2.
// CHECK-LABEL: llvm.func @column_shares(
// The cols vector: column t * 2 + kv_warp * 32.
// CHECK:      nvvm.read.ptx.sreg.tid.x
// CHECK-NEXT: llvm.mlir.constant(32 : i32)
// CHECK-NEXT: %[[W0:.*]] = llvm.udiv
// CHECK-NEXT: llvm.mlir.constant(2 : i32)
// CHECK-NEXT: llvm.udiv %[[W0]]
// CHECK-NEXT: llvm.mlir.constant(2 : i32)
// CHECK-NEXT: %[[KV0:.*]] = llvm.urem %[[W0]]
// CHECK:      %[[TWO0:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT: %[[LANE0:.*]] = llvm.mul %{{.*}}, %[[TWO0]] : i32
// CHECK-NEXT: %[[N0:.*]] = llvm.mlir.constant(32 : i32) : i32
// CHECK-NEXT: %[[SHARE0:.*]] = llvm.mul %[[KV0]], %[[N0]] : i32
// CHECK-NEXT: llvm.add %[[LANE0]], %[[SHARE0]] : i32
// CHECK:      llvm.load {{.*}} -> f32
// The map's coordinates (ScoreTileCoords), then store_frag: chunk kv_warp * 4.
// CHECK:      nvvm.read.ptx.sreg.tid.x
// CHECK:      nvvm.read.ptx.sreg.tid.x
// CHECK-NEXT: llvm.mlir.constant(32 : i32)
// CHECK-NEXT: %[[W1:.*]] = llvm.udiv
// CHECK-NEXT: llvm.mlir.constant(2 : i32)
// CHECK-NEXT: llvm.udiv %[[W1]]
// CHECK-NEXT: llvm.mlir.constant(2 : i32)
// CHECK-NEXT: %[[KV1:.*]] = llvm.urem %[[W1]]
// CHECK-NEXT: llvm.mlir.constant(32 : i32)
// CHECK-NEXT: llvm.urem
// CHECK-NEXT: llvm.mlir.constant(4 : i32)
// CHECK-NEXT: llvm.udiv
// CHECK-NEXT: llvm.mlir.constant(4 : i32)
// CHECK-NEXT: llvm.urem
// CHECK-NEXT: %[[CHUNKS:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT: llvm.mul %[[KV1]], %[[CHUNKS]] : i32
// CHECK:      llvm.store {{.*}} : i32, !llvm.ptr<3>
// store_tile: column t * 2 + kv_warp * 32 again.
// CHECK:      nvvm.read.ptx.sreg.tid.x
// CHECK-NEXT: llvm.mlir.constant(32 : i32)
// CHECK-NEXT: %[[W2:.*]] = llvm.udiv
// CHECK-NEXT: llvm.mlir.constant(2 : i32)
// CHECK-NEXT: llvm.udiv %[[W2]]
// CHECK-NEXT: llvm.mlir.constant(2 : i32)
// CHECK-NEXT: %[[KV2:.*]] = llvm.urem %[[W2]]
// CHECK:      %[[TWO2:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT: %[[LANE2:.*]] = llvm.mul %{{.*}}, %[[TWO2]] : i32
// CHECK-NEXT: %[[N2:.*]] = llvm.mlir.constant(32 : i32) : i32
// CHECK-NEXT: %[[SHARE2:.*]] = llvm.mul %[[KV2]], %[[N2]] : i32
// CHECK-NEXT: llvm.add %[[LANE2]], %[[SHARE2]] : i32
// CHECK:      llvm.store {{.*}} : bf16, !llvm.ptr<1>
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @column_shares arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 8, q_in_regs = false, kv_warps = 2>) attributes {grid = "keys", smem_bytes = 8192 : i64, tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">, #attn.tensor<"k", "in", "seqlen_k", "heads_kv">, #attn.tensor<"v", "in", "seqlen_k", "heads_kv">, #attn.tensor<"o", "in", "seqlen_q", "heads_q">, #attn.tensor<"lse", "in", "seqlen_q", "heads_q">, #attn.tensor<"dk", "out", "seqlen_k", "heads_kv">]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: memref<?x?x?xf32>, %dk: !t):
  %ps = attn.smem_alloc {name = "P", offset = 0 : i64} : memref<1x64x64xbf16, 3>
  %c0 = arith.constant 0 : index
  %d = attn.load_tile %lse[%c0, %c0, %c0] : memref<?x?x?xf32> -> !attn.frag<32xf32, cols>
  %s = attn.splat {value = 1.0 : f32} : !attn.frag<64x32xf32>
  %r = attn.map %s, %d : !attn.frag<64x32xf32>, !attn.frag<32xf32, cols> -> !attn.frag<64x32xf32> {
  ^bb0(%x: f32, %y: f32, %row: index, %col: index):
    %z = arith.subf %x, %y : f32
    attn.yield %z : f32
  }
  attn.store_frag %r -> %ps : !attn.frag<64x32xf32> -> memref<1x64x64xbf16, 3>
  attn.store_tile %r -> %dk[%c0, %c0, %c0, %c0] : !attn.frag<64x32xf32> -> !t
}
