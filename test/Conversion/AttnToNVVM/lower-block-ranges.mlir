// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s

// A run-time block mask (attn.block_ranges, HookLowering.cpp): the kernel
// gets the `kv_ranges` and `kv_tiles` workspaces after its extra arguments,
// and two block-mask kernels with the same parameters are added before it
// (BlockMaskKernel.cpp).

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!ids = memref<?xi32, strided<[?]>>

// The classification kernel: 256 threads per (query tile, KV tile) pair,
// pairs outside the window's tile range (causal here) return at once; the
// mask on 64 * 32 / 256 = 8 positions per thread, two barrier reductions,
// and thread 0 storing the pair's byte.
// CHECK-LABEL: llvm.func @docs_kv_tiles(
// CHECK-SAME:    %{{[^ :]+}}: !llvm.ptr<1>, %{{[^ :]+}}: i64, %{{[^ :]+}}: i64, %[[RANGES:[^ :]+]]: !llvm.ptr<1>, %[[TILES:[^ :]+]]: !llvm.ptr<1>, %{{[^ :]+}}: i32)
// CHECK-SAME:    attn.extra_params = array<i64: 24>
// CHECK-SAME:    attn.workspace_params = {kv_ranges = 27 : i64, kv_tiles = 28 : i64}
// CHECK-SAME:    nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>
// CHECK:         llvm.cond_br
// CHECK-COUNT-16: llvm.load %{{.*}} invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK-NOT:     llvm.load
// CHECK:         llvm.call_intrinsic "llvm.nvvm.barrier.cta.red.or.aligned.all"
// CHECK:         llvm.call_intrinsic "llvm.nvvm.barrier.cta.red.and.aligned.all"
// CHECK:         llvm.getelementptr %[[TILES]]
// CHECK:         llvm.store %{{.*}}, %{{.*}} {alignment = 1 : i64} : i8, !llvm.ptr<1>
// CHECK:         llvm.return

// The range kernel: one thread per query tile, 16 bytes per chunk, each
// read at an index clamped into the window (only bytes the tiles kernel
// wrote are read: initcheck-clean), four i32 stored into kv_ranges.
// CHECK-LABEL: llvm.func @docs_kv_ranges(
// CHECK-SAME:    nvvm.maxntid = array<i32: 128, 1, 1>
// CHECK-COUNT-16: llvm.load %{{.*}} {alignment = 1 : i64} : !llvm.ptr<1> -> i8
// CHECK-NOT:     vector<4xi32>
// CHECK-COUNT-4: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<1>
// CHECK:         llvm.return

// The attention kernel reads the four fields of its (batch, query tile).
// CHECK-LABEL: llvm.func @docs(
// CHECK-SAME:    %[[KWS:[^ :]+]]: !llvm.ptr<1>, %{{[^ :]+}}: !llvm.ptr<1>, %{{[^ :]+}}: i32) attributes
// CHECK:         llvm.getelementptr %[[KWS]]
// CHECK-COUNT-4: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> i32
attn.kernel @docs arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = true>) attributes {smem_bytes = 16384 : i64, arg_names = ["doc_ids"], problem = #attn.problem<causal = true, window_left = -1, window_right = 0, softmax_scale = 1.250000e-01 : f32>} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %ids: !ids):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %r:4 = attn.block_ranges %m, %b, %h, %sq within %c0, %c0, %c4, %c4 attributes {tile_m = 64 : i64, tile_n = 32 : i64} {
  ^bb0(%bi: index, %hi: index, %qi: index, %ki: index):
    %tab = attn.kernel_arg 0 : !ids
    %a = memref.load %tab[%qi] : !ids
    %c = memref.load %tab[%ki] : !ids
    %same = arith.cmpi eq, %a, %c : i32
    attn.yield %same : i1
  }
}
