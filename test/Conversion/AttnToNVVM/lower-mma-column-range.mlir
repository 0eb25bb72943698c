// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s

// attn.mma over a slice of N: dQ's second column half (n_begin = 64 of
// d = 128), the backward's dS K piece. A (dS, transposed) per k-step, then
// B from column 64 on: 4 k-steps x 4 pairs of n-tiles, each pair one
// ldmatrix.x4.trans and 2 mmas; the first pair's address is 64 columns
// (128 bytes) past the lane's swizzled chunk, as an immediate.
// CHECK-LABEL: llvm.func @column_range(
// CHECK:         nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>
// CHECK:         %[[OFF:.*]] = llvm.mlir.constant(128 : i32) : i32
// CHECK-NEXT:    %[[AT:.*]] = llvm.getelementptr %{{.*}}[%[[OFF]]]
// CHECK-NEXT:    nvvm.ldmatrix %[[AT]] {{.*}}layout = #nvvm.mma_layout<col>
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK-NOT:     nvvm.mma.sync
// CHECK:         llvm.return
!t = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @column_range arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) attributes {smem_bytes = 24576 : i64} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %ds = attn.smem_alloc {name = "dS", offset = 0 : i64} : memref<1x64x64xbf16, 3>
  %ks = attn.smem_alloc {name = "K", offset = 8192 : i64} : memref<1x64x128xbf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %j = arith.constant 0 : index
  attn.copy_async %k[%b, %j, %hkv] -> %ks : !t -> memref<1x64x128xbf16, 3>
  %zero = attn.splat {value = 1.0 : f32} : !attn.frag<64x64xf32>
  attn.store_frag %zero -> %ds : !attn.frag<64x64xf32> -> memref<1x64x64xbf16, 3>
  attn.async_wait {pending = 0 : i64}
  attn.barrier
  %dq = attn.mma %ds, %ks[%j] {n_begin = 64, transpose_a} : memref<1x64x64xbf16, 3>, memref<1x64x128xbf16, 3> -> !attn.frag<64x64xf32>
}
