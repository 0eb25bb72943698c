// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s

// attn.mma over a slice of K, the head dim (k_begin = 32, k_end = 64
// of d = 64): the k-steps of columns 32-63 only. Q from shared memory: 2
// k-steps x (1 ldmatrix of Q + 1 of K, 2 mmas for the 16 keys).
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: llvm.func @head_range(
// CHECK-COUNT-4: nvvm.mma.sync
// CHECK-NOT:     nvvm.mma.sync
// CHECK:         llvm.return
attn.kernel @head_range arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 16, stages = 1, warps = 4, q_in_regs = false>) attributes {smem_bytes = 12288 : i64} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x64x64xbf16, 3>
  %ks = attn.smem_alloc {name = "K", offset = 8192 : i64} : memref<1x16x64xbf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %j = arith.constant 0 : index
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xbf16, 3>
  attn.copy_async %k[%b, %j, %hkv] -> %ks : !t -> memref<1x16x64xbf16, 3>
  attn.async_wait {pending = 0 : i64}
  attn.barrier
  %s = attn.mma %qs, %ks[%j] {k_begin = 32, k_end = 64, transpose_b} : memref<1x64x64xbf16, 3>, memref<1x16x64xbf16, 3> -> !attn.frag<64x16xf32>
}
