// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s
// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s --check-prefix=COUNT

// attn.mma's split_n (MmaLowering.cpp): a key-grid kernel of 4 row warps by
// 2 KV warps, dV += P^T dO's shape. B ([K][N] = [query][dim]) is read with
// ldmatrix .trans from chunk kv_warp * 4 (32 bf16 columns a warp), every
// row of it (no KV-warp row offset); A whole. Per warp: one m-tile, 4
// n-tiles, 4 k-steps: 4 loads of A, 8 of B, 16 mmas.
// CHECK-LABEL: llvm.func @split_n(
// CHECK:       nvvm.barrier0
// CHECK-NEXT:  %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK:       %[[WARP:.*]] = llvm.udiv %[[TID]], %{{.*}} : i32
// CHECK:       %[[KVW:.*]] = llvm.urem %[[WARP]], %{{.*}} : i32
// CHECK:       llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK-NEXT:  %[[CHUNKS:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT:  %[[CHUNK:.*]] = llvm.mul %[[KVW]], %[[CHUNKS]] : i32
// CHECK-NEXT:  llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT:  %[[HIGH:.*]] = llvm.lshr
// CHECK-NEXT:  llvm.add %[[HIGH]], %[[CHUNK]] : i32
// No row offset of B by the KV warp (a split of K would have one).
// CHECK-NOT:   llvm.mul %[[KVW]]
// CHECK:       nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<row>
// CHECK:       nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>
// CHECK:       nvvm.mma.sync
// COUNT-COUNT-12: nvvm.ldmatrix
// COUNT-NOT:      nvvm.ldmatrix
// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s --check-prefix=MMAS
// MMAS-COUNT-16:  nvvm.mma.sync
// MMAS-NOT:       nvvm.mma.sync
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @split_n arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 8, q_in_regs = false, kv_warps = 2>) attributes {grid = "keys", smem_bytes = 16384 : i64} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %ps = attn.smem_alloc {name = "P", offset = 0 : i64} : memref<1x64x64xbf16, 3>
  %qs = attn.smem_alloc {name = "Q", offset = 8192 : i64} : memref<1x64x64xbf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %j = arith.constant 0 : index
  attn.copy_async %k[%b, %j, %hkv] -> %ps : !t -> memref<1x64x64xbf16, 3>
  attn.copy_async %q[%b, %j, %h] -> %qs : !t -> memref<1x64x64xbf16, 3>
  attn.async_wait {pending = 0 : i64}
  attn.barrier
  %acc = attn.mma %ps, %qs[%j] {split_n} : memref<1x64x64xbf16, 3>, memref<1x64x64xbf16, 3> -> !attn.frag<64x32xf32>
  attn.store_tile %acc -> %o[%b, %j, %hkv, %j] : !attn.frag<64x32xf32> -> !t
}
