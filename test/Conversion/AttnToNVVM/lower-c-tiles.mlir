// RUN: flashtile-opt %s --convert-attn-to-nvvm=isa=sm_90 | FileCheck %s
// RUN: flashtile-opt %s --convert-attn-to-nvvm=isa=sm_80 | FileCheck %s --check-prefix=SCALAR

// A workspace in C-fragment tiles (#attn.tensor's order "c_tiles", the
// backward's dQ accumulator): each lane's 4 elements of a 16 x 8 C tile
// are one 16-byte vector at lane * 4 of the tile, and the tiles of a
// 16-row block follow one another along the columns, 512 bytes apart. A
// warp's 16 x 64 share (4 warps of 64 rows) is 8 tiles: one predicated
// red.global.add.v4.f32 each, at its row of tiles' address plus an
// immediate (0, 512, ..., 3584), predicated by whether the row is inside
// and whether the lane's columns left exceed the tile's first column; no
// alignment test and no per-element fallback (the verifier proved the
// indices tile-aligned; the plan aligns and pads workspaces).
// CHECK-LABEL: llvm.func @c_tiles(
// CHECK-SAME:  attn.min_ptx_version = 81
// CHECK-NOT:   llvm.atomicrmw
// CHECK:       setp.gt.s32 q, $1, 0; and.pred p, p, q; @p red.global.add.v4.f32 [$2], {$3, $4, $5, $6}; }", "r,r,l,f,f,f,f" %[[ROW:[0-9]+]], %[[LEFT:[0-9]+]], %[[AT:[0-9]+]],
// CHECK:       setp.gt.s32 q, $1, 8; and.pred p, p, q; @p red.global.add.v4.f32 [$2+512], {$3, $4, $5, $6}; }", "r,r,l,f,f,f,f" %[[ROW]], %[[LEFT]], %[[AT]],
// CHECK-COUNT-5: red.global.add.v4.f32 [$2+{{[0-9]+}}]
// CHECK:       setp.gt.s32 q, $1, 56; and.pred p, p, q; @p red.global.add.v4.f32 [$2+3584], {$3, $4, $5, $6}; }", "r,r,l,f,f,f,f" %[[ROW]], %[[LEFT]], %[[AT]],
// CHECK-NOT:   red.global
// CHECK-NOT:   llvm.atomicrmw
// The convert's read: one 16-byte load per lane and tile, 0 outside.
// CHECK-COUNT-8: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK-NOT:   llvm.load %{{.*}} -> f32
// CHECK:       llvm.return

// Without vector reductions (sm_80), one atomic add per element at the
// same addresses, inside an `if` per tile.
// SCALAR-LABEL: llvm.func @c_tiles(
// SCALAR-NOT:   red.global
// SCALAR-COUNT-32: llvm.atomicrmw fadd
// SCALAR-NOT:   red.global

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
attn.kernel @c_tiles arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) attributes {smem_bytes = 0 : i64, tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">, #attn.tensor<"k", "in", "seqlen_k", "heads_kv">, #attn.tensor<"v", "in", "seqlen_k", "heads_kv">, #attn.tensor<"o", "in", "seqlen_q", "heads_q">, #attn.tensor<"lse", "in", "seqlen_q", "heads_q">, #attn.tensor<"ws", "workspace", "seqlen_q", "heads_q", "c_tiles">]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: memref<?x?x?xf32>, %ws: !acc):
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %row = arith.muli %m, %c64 : index
  %s = attn.splat {value = 1.0 : f32} : !attn.frag<64x64xf32>
  attn.store_tile %s -> %ws[%b, %row, %h, %c0] {accumulate, c_tiles} : !attn.frag<64x64xf32> -> !acc
  %x = attn.load_tile %ws[%b, %row, %h, %c0] {c_tiles} : !acc -> !attn.frag<64x64xf32>
}
