// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s
// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s --check-prefix=COUNT

// attn.smem_alloc, attn.copy_async, attn.async_wait, attn.barrier
// (MemoryLowering.cpp) and attn.load_frag (MmaLowering.cpp) on a minimal
// allocated kernel: bf16, d = 64, 4 warps; K has 2 slots of 32 x 64. Q is
// copied first (4 steps per thread) so that its load reads a landed tile;
// the CHECKs follow the K copy.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>

// CHECK:       llvm.mlir.global external @__flashtile_smem() {addr_space = 3 : i32, alignment = 128 : i64} : !llvm.array<0 x i8>
// CHECK-LABEL: llvm.func @memory(

// A buffer is the dynamic shared memory plus its offset.
// CHECK:       %[[SMEM_Q:.*]] = llvm.mlir.addressof @__flashtile_smem : !llvm.ptr<3>
// CHECK-NEXT:  %[[OFF_Q:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:  %[[QS:.*]] = llvm.getelementptr %[[SMEM_Q]][%[[OFF_Q]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK-NEXT:  %[[SMEM_K:.*]] = llvm.mlir.addressof @__flashtile_smem : !llvm.ptr<3>
// CHECK-NEXT:  %[[OFF_K:.*]] = llvm.mlir.constant(8192 : i32) : i32
// CHECK-NEXT:  %[[KS:.*]] = llvm.getelementptr %[[SMEM_K]][%[[OFF_K]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK-NEXT:  %[[TILE:.*]] = nvvm.read.ptx.sreg.ctaid.x : i32

// copy_async of K tile m_block: the slot is tile & 1 (2 slots of 4096
// bytes); each of the 2 steps of the 128 threads moves one 16-byte chunk
// with cp.async.cg, whose source size is 16 in range and 0 (zero-fill)
// past seqlen_k.
// CHECK:       %[[SLOT_MASK:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:  %[[SLOT:.*]] = llvm.and %[[TILE]], %[[SLOT_MASK]] : i32
// CHECK-NEXT:  %[[SLOT_BYTES:.*]] = llvm.mlir.constant(4096 : i32) : i32
// CHECK-NEXT:  %[[SLOT_OFF:.*]] = llvm.mul %[[SLOT]], %[[SLOT_BYTES]] : i32
// CHECK-NEXT:  %[[SLOT_BASE:.*]] = llvm.getelementptr %[[KS]][%[[SLOT_OFF]]]
// CHECK-NEXT:  %[[K_PTR:.*]] = llvm.extractvalue %[[K_DESC:.*]][1]
// CHECK-NEXT:  %[[SEQLEN_K64:.*]] = llvm.extractvalue %[[K_DESC]][3, 1]
// CHECK-NEXT:  %[[SEQLEN_K:.*]] = llvm.trunc %[[SEQLEN_K64]] : i64 to i32
// CHECK:       %[[FIRST_ROW:.*]] = llvm.mul %[[TILE]], %{{.*}} : i32
// CHECK:       %[[ROW:.*]] = llvm.add %[[FIRST_ROW]], %{{.*}} : i32
// CHECK-NEXT:  %[[IN_RANGE:.*]] = llvm.icmp "ult" %[[ROW]], %[[SEQLEN_K]] : i32
// CHECK-NEXT:  %[[C0:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:  %[[SAFE_ROW:.*]] = llvm.select %[[IN_RANGE]], %[[ROW]], %[[C0]] : i1, i32
// CHECK:       %[[SRC:.*]] = llvm.getelementptr %[[K_PTR]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK-NEXT:  %[[DST:.*]] = llvm.getelementptr %[[SLOT_BASE]][%{{.*}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK-NEXT:  %[[ZERO_FILL:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:  %[[FULL:.*]] = llvm.mlir.constant(16 : i32) : i32
// CHECK-NEXT:  %[[BYTES:.*]] = llvm.select %[[IN_RANGE]], %[[FULL]], %[[ZERO_FILL]] : i1, i32
// CHECK-NEXT:  nvvm.cp.async.shared.global %[[DST]], %[[SRC]], 16, cache = cg, %[[BYTES]] : !llvm.ptr<3>, !llvm.ptr<1>, i32
// CHECK:       %[[ROW2:.*]] = llvm.add %[[FIRST_ROW]], %{{.*}} : i32
// CHECK-NEXT:  %[[IN_RANGE2:.*]] = llvm.icmp "ult" %[[ROW2]], %[[SEQLEN_K]] : i32
// CHECK:       %[[FULL2:.*]] = llvm.mlir.constant(16 : i32) : i32
// CHECK-NEXT:  %[[BYTES2:.*]] = llvm.select %[[IN_RANGE2]], %[[FULL2]], %{{.*}} : i1, i32
// CHECK-NEXT:  nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = cg, %[[BYTES2]]
// One commit group per copy; async_wait and barrier as they are.
// CHECK-NEXT:  nvvm.cp.async.commit.group
// CHECK-NEXT:  nvvm.cp.async.wait.group 1
// CHECK-NEXT:  nvvm.barrier0

// load_frag of Q: one ldmatrix.x4 (no .trans) per k-tile, 4 i32 each, into
// the thread's 16-register A fragment.
// CHECK:       %[[LD0:.*]] = nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
// CHECK-NEXT:  %[[R0:.*]] = llvm.extractvalue %[[LD0]][0]
// CHECK:       %[[FRAG0:.*]] = llvm.mlir.poison : !llvm.array<16 x i32>
// CHECK-NEXT:  llvm.insertvalue %[[R0]], %[[FRAG0]][0] : !llvm.array<16 x i32>
// CHECK:       llvm.return

// COUNT-COUNT-6: nvvm.cp.async.shared.global
// COUNT-NOT:     nvvm.cp.async.shared.global
// COUNT-COUNT-4: nvvm.ldmatrix
// COUNT-NOT:     nvvm.ldmatrix
attn.kernel @memory arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 2, warps = 4, q_in_regs = true>) attributes {smem_bytes = 16384 : i64} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x64x64xbf16, 3>
  %ks = attn.smem_alloc {name = "K", offset = 8192 : i64} : memref<2x32x64xbf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xbf16, 3>
  attn.copy_async %k[%b, %m, %hkv] -> %ks : !t -> memref<2x32x64xbf16, 3>
  attn.async_wait {pending = 1 : i64}
  attn.barrier
  %f = attn.load_frag %qs : memref<1x64x64xbf16, 3> -> !attn.frag<64x64xbf16>
}
