// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s

// The block mask's tiles kernel on tiles that 256 threads do not divide
// (64 x 48, a tile_n that is a multiple of 16 but not a divisor of 256):
// thread t classifies positions t + 256 s of the tile, row-major, for the
// ceil(3072 / 256) = 12 steps; a position past the tile counts as no row
// (it neither keeps a key nor stops the tile from being whole), so every
// position of every row is evaluated once (two table loads each).
// CHECK-LABEL: llvm.func @uneven_kv_tiles(
// CHECK-COUNT-12: llvm.mlir.constant(3072 : i32)
// CHECK-NOT:     llvm.mlir.constant(3072 : i32)
// CHECK:         llvm.call_intrinsic "llvm.nvvm.barrier.cta.red.or.aligned.all"
// CHECK-LABEL: llvm.func @uneven_kv_ranges(
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!ids = memref<?xi32, strided<[?]>>
attn.kernel @uneven arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 48, stages = 1, warps = 4, q_in_regs = true>) attributes {smem_bytes = 16384 : i64, arg_names = ["doc_ids"], problem = #attn.problem<causal = true, window_left = -1, window_right = 0, softmax_scale = 1.250000e-01 : f32>} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %ids: !ids):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %r:4 = attn.block_ranges %m, %b, %h, %sq within %c0, %c0, %c4, %c4 attributes {tile_m = 64 : i64, tile_n = 48 : i64} {
  ^bb0(%bi: index, %hi: index, %qi: index, %ki: index):
    %tab = attn.kernel_arg 0 : !ids
    %a = memref.load %tab[%qi] : !ids
    %c = memref.load %tab[%ki] : !ids
    %same = arith.cmpi eq, %a, %c : i32
    attn.yield %same : i1
  }
}
